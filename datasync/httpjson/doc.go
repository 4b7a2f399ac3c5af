// Package httpjson is the built-in data sync adapter sync_http_json: it
// imports and exports custom entity records from and to an HTTP API
// speaking JSON (API version v1).
//
// # Credentials
//
// baseUrl (required) is an absolute http or https URL; surrounding
// spaces and trailing slashes are dropped, a query is kept (the adapter
// sets its own limit and cursor over it), a fragment is dropped. token
// (optional) is sent as Authorization: Bearer <token>, trimmed; a token
// an HTTP header cannot carry (CR, LF, other control characters) is
// refused. A missing or malformed credential, an API version other than
// v1 (none means v1) and an entity type that cannot be a path segment
// ("", ".", "..") fail the call with a non-retryable
// *datasync.SourceError, before any request.
//
// Every request goes to {baseUrl}/{entityType}, the entity type escaped
// as one path segment (url.PathEscape: "a b/c" is a%20b%2Fc), with
// Accept: application/json and User-Agent: tenantkit-datasync.
//
// # Import
//
// GET {baseUrl}/{entityType}?cursor=<cursor>&limit=<batchSize>, the
// cursor parameter left out on the first page (empty cursor). The 2xx
// answer must be one JSON object
//
//	{"items": [{"externalId": "…", "data": {…}}, …], "nextCursor": "…" | null, "totalEstimate": 123}
//
// The page is taken whole or refused whole: any problem fails the call
// with a non-retryable SourceError "malformed page: …" naming the first
// problem (items[3].externalId …), and the run stops with it as its
// lastError. A source that sends a bad record is broken in a way a
// retry will not mend, and passing part of a page on would move the
// cursor past the records left out. The checks:
//
//   - the body is valid JSON (nothing after the object) and an object;
//     unknown members are ignored (member names match case-insensitively,
//     as encoding/json does);
//   - items is an array of at most batchSize objects (more than asked
//     for is refused, not cut: cutting would lose records);
//   - each externalId is a non-empty string of at most 255 bytes, valid
//     UTF-8 (encoding/json already turns invalid UTF-8 into U+FFFD),
//     without NUL; duplicate ids within a page are passed on;
//   - each data is an object (numbers decoded as float64, as everywhere
//     in tenantkit; the entity's field validation is the caller's);
//   - nextCursor is a string of at most 4096 bytes, null or absent; null,
//     absent and "" end the run; a nextCursor equal to the cursor of the
//     request is refused (it would loop forever);
//   - totalEstimate is absent, null, or a non-negative integer within
//     int64 (1e3 and 7.0 count as integers).
//
// The content type of the answer is not checked.
//
// # Export
//
// POST {baseUrl}/{entityType} with Content-Type: application/json and
// {"items": [{"localId": "…", "data": {…}}, …]} (nil data sent as {}),
// one request per batch; an empty batch sends nothing. The 2xx answer
// must be an object with a results array of objects, each with a string
// localId and an externalId and error that are strings, null or absent;
// otherwise the call fails with a non-retryable SourceError "malformed
// export response: …" (the target may have applied the batch: a run
// tried again sends it again, so targets should treat localId as an
// idempotency key). Results come back one per item, in the items' order:
//
//   - results of localIds not in the batch are ignored; of several results
//     for one localId the first counts;
//   - an item without a result gets status error, "no result from the
//     target";
//   - a status other than success, error or skipped (or not a string)
//     becomes error, `unknown status "…"` (before the target's error);
//   - an externalId that is not valid (as on import) is dropped, and a
//     success carrying one becomes an error;
//   - error texts are cleaned (valid UTF-8, control characters as spaces,
//     the token redacted) and cut to 1000 bytes.
//
// # Validate
//
// Validate is an import of the first page with limit 1: it passes on a
// 2xx well-formed page (so a source that ignores limit fails it, as its
// import would), and returns the import's error otherwise.
//
// # Errors and retries
//
// The adapter makes one request per call and never retries: the run's
// worker retries retryable errors with backoff. Every failure is a
// *datasync.SourceError, except the caller's own cancellation (ctx ended
// before the call did), returned wrapped as it is so that a cancelled run
// is not retried.
//
//   - 2xx: read (see above).
//   - 401, 403: not retryable (the run fails at once); the message says to
//     check the token.
//   - 408, 429 and 5xx: retryable; Retry-After, when given, is in the
//     message.
//   - 3xx: not retryable (redirects are not followed, as everywhere in
//     tenantkit's outbound calls); other 4xx: not retryable.
//   - No response (timeout, refused connection, DNS, TLS): retryable,
//     with netguard.Reason's generic text ("request failed: timeout");
//     the error itself, which may name the server's resolver or
//     addresses, goes to Options.Logger.
//   - A 2xx body over Options.MaxResponseBytes (32 MiB by default; by
//     Content-Length, or while reading, after decompression): not
//     retryable, "response larger than …".
//
// The message of a non-2xx answer has the status text and an excerpt of
// the body (200 bytes, cleaned), so a tenant can see what the source
// said. No message ever carries the token: it is never formatted into
// one, and redacted from any text the source sends back. Nor the base
// URL (which may carry credentials of its own).
//
// Options.Timeout (30 s by default) bounds each call, response body
// included (the run's own page time limit, datasync.Options.PageTimeout,
// applies too, through the call's context).
//
// A body arriving slower than Call.MinBytesPerSecond on average, judged
// from Call.ThroughputGrace after it began (the run sets both from
// datasync.Options: 512 bytes a second after 10 s by default), fails the
// call with a non-retryable SourceError "the source sent its answer too
// slowly: …": a source that trickles would do so again, and each attempt
// would hold the run that long. The rate is judged as bytes arrive; a
// source that sends nothing at all is stopped by the time limits.
//
// # Outbound safety
//
// Requests go through internal/netguard's client: no proxy, no redirects,
// and connections to loopback, private, link-local and other non-public
// addresses refused after DNS resolution. Before any request the base URL
// is checked with netguard.CheckURL, so a non-public IP literal in any
// spelling (127.1, 0x7f.1, [::ffff:127.0.0.1]) or a plainly local name
// (localhost, *.local, *.internal, single-label names) is refused
// without connecting. Both refusals are not retryable.
// Options.AllowPrivate (the host's APP_WEBHOOKS_ALLOW_PRIVATE_URLS)
// lifts both, for tests and sources on a private network.
package httpjson
