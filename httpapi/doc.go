// Package httpapi serves the tenantkit REST API of a Kit's areas as one
// net/http handler: New(kit, Options) returns the *Handler a host mounts.
//
// # What a Handler serves
//
// The routes of the areas the Kit has (the modules of
// tenantkit.Config.Areas that serve routes: those of the area packages
// under httpapi, togglesapi.Area and the others), the
// identity routes when it authenticates with the Kit's identity area (or
// Options.Auth), the health and documentation routes, and the host's own
// Options.Routes; its OpenAPI document lists exactly those. New does not
// change the Kit. Authentication is the identity area's API keys and
// sessions, or a host's Options.Authenticator (see Authenticator for its
// contract); a Kit without an identity area needs one
// (ErrNoAuthenticator).
//
// # Route table
//
// The route table (apikit.Route, assembled by routes.go from this
// package's routes and the areas' modules) describes every endpoint
// once, grouped by
// concern: the route's pattern, handler, error body format and no-store
// mark; who may call it (Access: public, super-admin only, the features
// it needs, tenant-wide); its own limits (Limits: body size, rate); and
// its documentation (Doc), which nothing but the API documentation reads.
// Dispatch, authorization, rate limiting and the API
// documentation all read that table; a test checks it
// for conflicting or duplicate patterns. Identity's routes are this
// package's (identity.go); every other area adds its routes from its own
// package, httpapi/<area>api, whose module (Area) a host lists in
// tenantkit.Config.Areas: the module builds the area's service, connects
// it to the Kit's other areas and serves its routes, so that a host links
// the areas it imports and no others. The route type and the helpers
// every area's handlers share (decode, encode, lists, exports, errors,
// the documentation's parameters) are in httpapi/internal/apikit.
// Handlers are small: decode, call the service, encode. Bodies are
// decoded with encoding/json (apikit.Decode), except the rule execution
// endpoints' (rulesapi's ruleinput.go), the hottest: a plain body is read
// in one pass by internal/jsondec with the same result, anything else
// takes Decode's path and its messages.
//
// # Middleware
//
// request id and security headers (the caller's X-Request-Id when
// plain, else a process prefix plus a counter, echoed and logged;
// X-Content-Type-Options: nosniff on every response, errors and 404s
// included) → recover (a panic is a logged, opaque 500) → no-store (a route marked
// NoStore answers with Cache-Control: no-store, errors included: every
// route whose response may carry a secret, such as a new API key, a
// session token, a webhook's signing secret or its custom headers) →
// body limit (1 MiB unless the route says otherwise; 413 beyond) →
// authenticate → authorize → scope (the tenant and organization of the
// credential go into the context as a store.Scope) → route rate limit →
// handler. Unknown paths answer a JSON 404, known paths with another
// method a JSON 405 with Allow, from a catch-all route.
//
// What the chain knows of a request lives in one context, its
// requestState (middleware.go), set once by the request id step: the id,
// the route and caller for the access log and metrics, and once the
// caller is admitted its identity and scope (the caller's
// identity.Identity.Values, made once per cached credential), which the
// state's Value answers with. Each of these used to be a
// context.WithValue and, for three of them, a copy of the request (the
// request id, the access log's record, the identity and scope): a copy of
// an http.Request is the largest allocation of a request. The cheapest
// route, the boolean toggle check, went from 37 to 29 allocations per
// request (the benchmark's own included: BENCHMARKS.md), then to 21: the
// state also holds the values of X-Content-Type-Options and X-Request-Id
// (assigned to the header map as slices of it, no Header.Set), a
// generated id's bytes and the access log's status writer; JSON answers
// assign one shared Content-Type value (capped at its length, so an Add
// copies it).
//
// A route whose pattern is a method and a literal path (no wildcard, no
// trailing slash) is looked up by method and path in a map before the
// ServeMux, which serves every other request (HEAD, escaped or unclean
// paths, wildcard routes, 404 and 405) as before. Such a pattern is the
// most specific one that can match its requests, so the map chooses the
// handler the ServeMux would, and sets the request's Pattern as it does;
// it spares the cheapest routes the ServeMux's path cleaning and tree
// walk (TestExactRoutesAsServeMux compares the two).
//
// # Authentication
//
// Options.Authenticator identifies callers; with Options.Auth alone the
// built-in adapter (authenticate.go) reads the credential (X-Api-Key,
// Authorization: ApiKey or Bearer) and the selection cookies
// (identity.SelectedTenantCookie, identity.SelectedOrganizationCookie) and
// hands them to identity.Service.Authenticate. identity.go serves the
// identity area's routes.
//
// # Errors
//
// Services return error kinds (store.ErrNotFound, ErrInvalid, ErrConflict,
// ErrForbidden, ErrNoScope, identity.ErrUnauthenticated); statusTable in
// errors.go is the one place they become statuses. The default body is
// {error, details?} (details maps a field to its message); a route may
// format its own (the sign-in routes answer {ok:false, error}, the toggle
// checks {error, code}). Only messages made for callers are shown; 5xx
// bodies never carry internals. A refusal by a rate limit is written by
// ratelimit.WriteLimited: 429 {error} with Retry-After and X-RateLimit-*.
// The image route answers attachments.ErrBusy (no room for a resize in
// the process, or the tenant's share under way) with 503 {error} and
// Retry-After: 5; its message is made for callers, like a 4xx's. A Kit
// without an image plug-in (attachments.Options.Images, which package
// full sets) serves the original there whatever the size asked for; the
// sizes are still checked. This package imports no image codec itself:
// the cropType values are attachments.Cover and attachments.Contain.
//
// # Rate limiting
//
// Options.RateLimit (a *ratelimit.Policy) applies the sign-in limits
// on POST /login, /reset and /reset/confirm (the IP layer before the body
// is read, the IP+email-hash layer before validation; a successful sign-in
// resets the latter) and each route's own limit, keyed by client address
// or, for per-tenant limits, by tenant. Without it ratelimit.DefaultConfig's
// limits apply in memory.
//
// # Lists and exports
//
// list.go parses page/pageSize and limit/offset paging, sortField/sortDir
// against a fixed column map, and booleans, and refuses text filters
// holding NUL or invalid UTF-8 (checkText: 400 naming each, "must be
// valid text"; SQLite's LIKE stops at a NUL and would match everything);
// export.go writes csv, json, xml and markdown with CSV formula cells
// neutralised; format=json is served as
// application/vnd.tenantkit.export+json (see API documentation below).
// An export is a progress job (entities.export for records, when the Kit
// has the progress area), though the file is sent in the response itself
// (writeTrackedExport): the job is created running once the rows are
// read, so a refused request leaves none; its total is the row count and
// X-Progress-Job-Id names it; it counts the rows rendered every 500, is
// completed once the whole file is written, failed when rendering or
// sending fails ("The download was interrupted"), and is not cancellable
// (closing the request stops the export).
//
// # API documentation
//
// The route table also documents the API: each route names its area, its
// query parameters (Param), the Go types it decodes and encodes, its
// success status and the error statuses its handler answers beyond those
// its chain implies. openapi.go builds an OpenAPI 3.1 document from the
// table on first request (a few milliseconds), reflecting JSON Schemas
// from the Go types with github.com/invopop/jsonschema; markdown.go
// renders the same document as Markdown. Decisions:
//
//   - Response schemas are strict (additionalProperties false, every field
//     without omitempty required, a pointer without omitempty nullable):
//     the document says exactly what is sent. Request schemas accept
//     unknown properties, which the handlers ignore, and require the
//     fields tagged `jsonschema:"required"`; enums and bounds come from
//     jsonschema tags on the input types and from docEnum for named
//     string types.
//   - Every error answers one documented schema (ErrorBody), the union of
//     the default body and the areas' own formats.
//   - Public routes declare security: [] (no credential) and no
//     x-required-features; the others list the three credential forms and
//     their features, and super-admin routes x-super-admin.
//   - The paths are relative to the one server, the base path
//     (Options.BasePath); behind http.StripPrefix the server is the
//     stripped prefix followed by the base path (read from the request's
//     RequestURI), so a client generated from the document calls the
//     host's mount. A prefix a reverse proxy strips is not seen.
//   - Every operation has a description: the route's Description (or its
//     Summary), who may call it and its error statuses (docdescribe.go).
//   - The document is written for client generators as well as
//     validators (docportable.go): no boolean schemas, inclusive bounds
//     with the strict one in the description, objects of any keys with an
//     explicit additionalProperties {}, one concrete media type per body
//     form (the sign-in routes: form-urlencoded, multipart and JSON,
//     FormBody). Routes that decode one Go type but need different fields
//     document a type each (the three rule executions, rules_inputs.go).
//     scripts/openapi-check.sh runs the pinned generators (oapi-codegen,
//     ogen, openapi-typescript) and linters (Redocly, Spectral) on it.
//   - A list with exports (GET /entities/records) answers its page as
//     application/json and format=json's file (an array of rows, as an
//     attachment) as application/vnd.tenantkit.export+json: still JSON,
//     but a media type of its own, so each media type of the 200 has one
//     schema and a generated client decodes the page without guessing.
//     The other exports have their own media types too (text/csv,
//     text/markdown, application/xml). JSON answers are sent as exactly
//     application/json, the media type the document names, with no charset
//     parameter (RFC 8259 defines none): a generated client may compare the
//     Content-Type exactly (oapi-codegen does where a response has several
//     JSON media types). examples/client is a client generated from the
//     document, with a flow test through it against a live API.
//   - Routes that share a pattern (Match) are documented under their
//     concrete paths (DocPath).
//   - The host's own routes (Options.Routes, type Route) are served behind
//     the same chain and documented like the built-in ones.
//   - GET /docs/openapi, /docs/markdown and the explorer /docs/api are
//     public unless Options.DocsRequireAuth.
//   - GET /docs/openapi?tag=<area> answers the part of the document for one
//     area, a tag (explorer.AreaDocument: its operations and the schemas
//     they use), cached per area; an unknown area is 400 naming tag. The
//     explorer shows the API one area at a time from these parts, with a
//     picker: Swagger UI 5.35.0 renders no operation past the first tag of
//     a document of more than explorer.MaxOperations operations, which the
//     whole document passes. The whole document, without tag, is what
//     clients are generated from and stays whole.
//
// The tests hold the document to the code: it validates as OpenAPI 3.1
// (libopenapi-validator), it lists exactly the route table, and every
// request and response of the HTTP tests is validated against it
// (contract_test.go), so a handler answering a shape the document does
// not describe fails a test.
//
// # Webhook delivery queues
//
// GET /webhooks/queues (webhooks_queues.go) answers, per webhook whose
// delivery queue a drain holds, is flagged, or has due deliveries: the
// webhook and tenant ids, the holder (the server process draining it,
// host:pid:instance; null when none), when its lease ends and whether it
// is live (a holder whose lease is not live died or stalled, and another
// process takes the queue over within about a second), whether work is
// flagged, how many deliveries are due, and how long the oldest has been
// due (oldestDueAgeMs, the queue's lag). It is a super-admin route, not a
// tenant feature like the other webhook routes: it names the servers'
// hosts and process ids, which are the operator's, and it counts every
// tenant's due deliveries to answer (?tenantId then picks one tenant's
// queues out); a tenant's admin reads its own backlog in the delivery log.
// A host Store that does not report its queues makes it 501.
//
// # Feature toggles
//
// The admin routes need a super admin, who acts for another tenant by
// selecting it (identity.SelectedTenantCookie). Toggle items show created_at
// and updated_at as database-style text
// ("2025-12-29 21:59:25.246+00", UTC, milliseconds) on both engines. A bad
// id in a path or body is a 400 naming the field, a missing toggle 404
// "Feature toggle not found". The lists' text filters (search,
// identifier, name, category) go through checkText. The check routes answer {enabled, source, toggleId, identifier, tenantId}
// (boolean) or {valueType, value, source, toggleId, identifier, tenantId};
// a missing identifier is 400 "Missing required parameter: identifier", an
// unknown toggle 404 {error, code:"MISSING_TOGGLE"}, a toggle asked through
// another type's route 400 {error, code:"TYPE_MISMATCH"}.
package httpapi
