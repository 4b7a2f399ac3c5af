package httpapi

import (
	"bytes"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"

	"github.com/tenantkit/tenantkit/httpapi/explorer"
	"github.com/tenantkit/tenantkit/httpapi/internal/apikit"
	"github.com/tenantkit/tenantkit/store"
)

// Route is an endpoint a host adds to the handler through
// Options.Routes. It is served under Options.BasePath behind the same
// chain as the built-in routes (body limit, authentication, features,
// scope, errors), and it appears in the API documentation.
type Route struct {
	// Method and Path (net/http pattern syntax relative to the base path:
	// "/reports/{id}").
	Method, Path string
	// Summary is a one-line description.
	Summary string
	// Description says more, when there is more to say; the documentation
	// adds the credentials and the error statuses.
	Description string
	// Area is the documentation section ("Reports"); "Custom" when empty.
	Area string
	// Public routes need no credential.
	Public bool
	// Features the caller must all hold.
	Features []string
	// Query documents the query parameters the handler reads.
	Query []apikit.Param
	// Request is a value of the JSON request body's Go type (nil: no
	// body); Response of the success body's (nil: none).
	Request, Response any
	// Example is an example request body for the documentation (nil: one
	// built from Request's schema).
	Example any
	// Status is the success status; 200 when zero.
	Status int
	// Errors lists error statuses the handler answers beyond those the
	// chain implies (401 and 403 for non-public routes, 404 for paths with
	// parameters, 400 and 413 for bodies and parameters).
	Errors []int
	// Handler serves the request once it is authorized. The caller's
	// identity is identity.IdentityFrom(r.Context()), its tenant and organization
	// store.ScopeFrom(r.Context()). A returned error is answered as the
	// built-in routes answer theirs: store.ErrInvalid → 400,
	// store.ErrNotFound → 404, store.ErrConflict → 409, others 500.
	Handler func(w http.ResponseWriter, r *http.Request) error
}

// hostRoutes turns Options.Routes into route table entries.
func hostRoutes(rs []Route) []apikit.Route {
	out := make([]apikit.Route, len(rs))
	for i, r := range rs {
		out[i] = apikit.Route{Method: r.Method, Path: r.Path, Handler: r.Handler,
			Access: apikit.Access{Public: r.Public, Features: r.Features},
			Doc: apikit.Doc{Summary: r.Summary, Description: r.Description, Area: r.Area, Query: r.Query, Request: r.Request,
				Example: r.Example, Response: r.Response, Status: r.Status, Errors: r.Errors}}
		if out[i].Doc.Area == "" {
			out[i].Doc.Area = "Custom"
		}
	}
	return out
}

// docs serves the API documentation built from the route table: the
// OpenAPI document, the same as Markdown, and the explorer page.
type docs struct {
	once     sync.Once
	build    func() (*openAPI, error)
	doc      *openAPI
	openapi  []byte
	markdown []byte
	// areas are the document's areas (explorer.Areas): the explorer shows
	// one at a time, from /docs/openapi?tag=<area>.
	areas []string
	err   error

	mu       sync.Mutex
	areaDocs map[string][]byte // area → its document, served without a mount prefix
}

// docsRoutes are the documentation endpoints; public unless
// Options.DocsRequireAuth. The document is built on first use from the
// final route table (these routes included), so it describes exactly
// what is served.
func (a *api) docsRoutes(d *docs) []apikit.Route {
	public := !a.opts.DocsRequireAuth
	const area = "Documentation"
	return []apikit.Route{
		{Method: "GET", Path: "/docs/openapi", Handler: d.serveOpenAPI,
			Access: apikit.Access{Public: public},
			Doc: apikit.Doc{Summary: "The OpenAPI 3.1 document of this API", Area: area,
				Description: "With tag, only the part of the document for that area (one of the document's tags): " +
					"its operations and the schemas they use. The explorer shows the API one area at a time from these parts.",
				Query:    []apikit.Param{apikit.TextQuery("tag", "An area (a tag of the document): answer the part of the document for that area only")},
				Response: map[string]any{}}},
		{Method: "GET", Path: "/docs/markdown", Handler: d.serveMarkdown,
			Access: apikit.Access{Public: public},
			Doc:    apikit.Doc{Summary: "The same API description as Markdown", Area: area, ResponseContent: []string{"text/markdown"}}},
		{Method: "GET", Path: "/docs/api", Handler: a.serveExplorer(d),
			Access: apikit.Access{Public: public},
			Doc: apikit.Doc{Summary: "The interactive API explorer (Swagger UI); it loads nothing from any other host", Area: area,
				ResponseContent: []string{"text/html"}}},
		// Public even with DocsRequireAuth: a <script src> cannot send an
		// API key, and the files are Swagger UI's own.
		{Method: "GET", Path: "/docs/api/assets/{name}", Handler: serveExplorerAsset,
			Access: apikit.Access{Public: true},
			Doc: apikit.Doc{Summary: "A file of the API explorer (Swagger UI's script and style)", Area: area,
				ResponseContent: []string{"text/javascript", "text/css", "text/plain"}}},
	}
}

func (d *docs) load() error {
	d.once.Do(func() {
		doc, err := d.build()
		if err != nil {
			d.err = err
			return
		}
		d.doc = doc
		d.openapi, d.err = doc.JSON()
		if d.err == nil {
			var buf bytes.Buffer
			writeDocMarkdown(&buf, doc)
			d.markdown = buf.Bytes()
			d.areas, d.err = explorer.Areas(d.openapi)
		}
	})
	return d.err
}

// serveOpenAPI serves the document. Behind http.StripPrefix its server
// is the stripped prefix followed by the base path, so that the paths
// resolve where the host mounts the handler.
func (d *docs) serveOpenAPI(w http.ResponseWriter, r *http.Request) error {
	if err := d.load(); err != nil {
		return err
	}
	body := d.openapi
	if prefix := mountPrefix(r); prefix != "" {
		doc := *d.doc
		server := d.doc.Servers[0]
		server.URL = prefix + strings.TrimSuffix(server.URL, "/") // the base path, "/" for none
		doc.Servers = []openAPIServer{server}
		var err error
		if body, err = doc.JSON(); err != nil {
			return err
		}
	}
	if q := r.URL.Query(); q.Has("tag") {
		var err error
		if body, err = d.areaDocument(body, q.Get("tag"), mountPrefix(r) == ""); err != nil {
			return err
		}
	}
	return writeDoc(w, "application/json; charset=utf-8", body)
}

// areaDocument returns the part of body (the document as served) for one
// area; cache keeps it for the next request (body is d.openapi).
func (d *docs) areaDocument(body []byte, area string, cache bool) ([]byte, error) {
	if !slices.Contains(d.areas, area) {
		return nil, store.Invalid("tag", fmt.Sprintf("no area %q in this API; the areas are %s", area, strings.Join(d.areas, ", ")))
	}
	if cache {
		d.mu.Lock()
		defer d.mu.Unlock()
		if part, ok := d.areaDocs[area]; ok {
			return part, nil
		}
	}
	part, ok, err := explorer.AreaDocument(body, area)
	if err != nil {
		return nil, err
	}
	if !ok { // Areas lists only areas with operations
		return nil, fmt.Errorf("httpapi: the area %q of the document has no operation", area)
	}
	if cache {
		if d.areaDocs == nil {
			d.areaDocs = make(map[string][]byte, len(d.areas))
		}
		d.areaDocs[area] = part
	}
	return part, nil
}

// mountPrefix is the path prefix a host stripped from the request before
// the handler saw it (http.StripPrefix keeps the request's original
// RequestURI): "/tenantkit" for /tenantkit/api/docs/openapi served as
// /api/docs/openapi; "" when nothing was stripped.
func mountPrefix(r *http.Request) string {
	if r.RequestURI == "" || r.RequestURI == "*" {
		return ""
	}
	u, err := url.ParseRequestURI(r.RequestURI)
	if err != nil || u.Path == r.URL.Path || !strings.HasSuffix(u.Path, r.URL.Path) {
		return ""
	}
	prefix := strings.TrimSuffix(strings.TrimSuffix(u.Path, r.URL.Path), "/")
	if !strings.HasPrefix(prefix, "/") {
		return ""
	}
	return prefix
}

func (d *docs) serveMarkdown(w http.ResponseWriter, _ *http.Request) error {
	if err := d.load(); err != nil {
		return err
	}
	return writeDoc(w, "text/markdown; charset=utf-8", d.markdown)
}

// serveExplorer serves the explorer page, which shows the API one area at
// a time (Swagger UI 5.35.0 renders no operation past the first tag of a
// document of 137 or more operations).
func (a *api) serveExplorer(d *docs) apikit.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		if err := d.load(); err != nil {
			return err
		}
		openapi := a.base + "/docs/openapi"
		areas := make([]explorer.Area, len(d.areas))
		for i, name := range d.areas {
			areas[i] = explorer.Area{Name: name, URL: openapi + "?tag=" + url.QueryEscape(name)}
		}
		explorer.ServePage(w, r, openapi, a.base+"/docs/api/assets/", areas...)
		return nil
	}
}

func serveExplorerAsset(w http.ResponseWriter, r *http.Request) error {
	if !explorer.ServeAsset(w, r, r.PathValue("name")) {
		return store.ErrNotFound
	}
	return nil
}

// writeDoc writes a documentation body (HEAD-safe, no caching: the
// document changes with the server's version and options).
func writeDoc(w http.ResponseWriter, contentType string, body []byte) error {
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	_, err := w.Write(body)
	return err
}
