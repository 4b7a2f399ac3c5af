package explorer

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"html/template"
	"net/http"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// SwaggerUIVersion is the version of the npm package swagger-ui-dist
// vendored in dist/ (scripts/vendor-explorer.sh pins the same; a test
// checks that dist/VERSION agrees).
const SwaggerUIVersion = "5.35.0"

// ContentSecurityPolicy is the policy ServePage sends with the page:
// scripts, styles, fonts and fetches from the page's own origin only, and
// images from it or inlined (data:, as Swagger UI's stylesheet inlines its
// icons); no frames, no plugins, no <base>, and no framing of the page.
// connect-src 'self' lets Swagger UI fetch the OpenAPI document and send
// "Try it out" requests to this server, and nowhere else. Swagger UI sets
// its inline styles through the DOM, which a policy does not govern, so
// styles need no 'unsafe-inline' (the browser test fails on any violation).
const ContentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; " +
	"img-src 'self' data:; font-src 'self'; connect-src 'self'; " +
	"base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// AssetCacheControl is the Cache-Control of an asset fetched with the
// version the page puts in its URL (?v=): the bytes under that URL never
// change, since a new binary with other bytes asks for another version.
const AssetCacheControl = "public, max-age=31536000, immutable"

//go:embed dist/swagger-ui-bundle.js dist/swagger-ui.css dist/LICENSE dist/NOTICE dist/swagger-ui-bundle.js.LICENSE.txt
//go:embed dist/SHA256SUMS dist/VERSION
//go:embed init.js
var files embed.FS

// asset is one file served under the assets URL.
type asset struct {
	data        []byte
	contentType string
	sum         string // hex sha256 of data
	version     string // the sum's first 16 hex digits: the ?v= of its URL

	gzipOnce sync.Once
	gzipped  []byte // nil when gzip does not make it smaller, or not text
}

// assetFiles maps an asset's name to its file in files.
var assetFiles = map[string]string{
	"swagger-ui-bundle.js":             "dist/swagger-ui-bundle.js",
	"swagger-ui.css":                   "dist/swagger-ui.css",
	"LICENSE":                          "dist/LICENSE",
	"NOTICE":                           "dist/NOTICE",
	"swagger-ui-bundle.js.LICENSE.txt": "dist/swagger-ui-bundle.js.LICENSE.txt",
	"init.js":                          "init.js",
}

var assets = func() map[string]*asset {
	m := make(map[string]*asset, len(assetFiles))
	for name, file := range assetFiles {
		data, err := files.ReadFile(file)
		if err != nil {
			panic("explorer: " + err.Error()) // go:embed guarantees it
		}
		sum := sha256.Sum256(data)
		a := &asset{data: data, contentType: contentType(name), sum: hex.EncodeToString(sum[:])}
		a.version = a.sum[:16]
		m[name] = a
	}
	return m
}()

func contentType(name string) string {
	switch path.Ext(name) {
	case ".js":
		return "text/javascript; charset=utf-8"
	case ".css":
		return "text/css; charset=utf-8"
	default: // LICENSE, NOTICE, .txt
		return "text/plain; charset=utf-8"
	}
}

// Assets lists the names of the assets, sorted.
func Assets() []string {
	names := make([]string, 0, len(assets))
	for name := range assets {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// Asset returns the bytes and the Content-Type of the named asset
// ("swagger-ui-bundle.js", "swagger-ui.css", "init.js", "LICENSE",
// "NOTICE", "swagger-ui-bundle.js.LICENSE.txt"); ok is false for any other
// name. The caller must not modify data. ServeAsset serves one with its
// caching headers.
func Asset(name string) (data []byte, contentType string, ok bool) {
	a, ok := assets[name]
	if !ok {
		return nil, "", false
	}
	return a.data, a.contentType, true
}

// ServeAsset answers a GET or HEAD request for the named asset and reports
// true, or reports false without writing anything when there is no such
// asset (the caller answers 404 its own way). It sets Content-Type,
// X-Content-Type-Options: nosniff, ETag (the sha256 of the bytes), Vary:
// Accept-Encoding, and Cache-Control: AssetCacheControl when the request
// carries the version that Page puts in the asset's URL (?v=), no-cache
// otherwise. It answers 304 Not Modified to a matching If-None-Match, and
// sends text gzipped to a client that accepts gzip.
func ServeAsset(w http.ResponseWriter, r *http.Request, name string) bool {
	a, ok := assets[name]
	if !ok {
		return false
	}
	body, etag := a.data, `"`+a.sum+`"`
	gz := acceptsGzip(r) && a.gzip() != nil
	if gz {
		body, etag = a.gzipped, `"`+a.sum+`-gzip"`
	}
	h := w.Header()
	h.Set("Content-Type", a.contentType)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("ETag", etag)
	h.Add("Vary", "Accept-Encoding")
	if r.URL.Query().Get("v") == a.version {
		h.Set("Cache-Control", AssetCacheControl)
	} else {
		h.Set("Cache-Control", "no-cache")
	}
	if etagMatches(r.Header.Get("If-None-Match"), etag) {
		h.Del("Content-Type")
		w.WriteHeader(http.StatusNotModified)
		return true
	}
	if gz {
		h.Set("Content-Encoding", "gzip")
	}
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(body) // an error means the client went away
	}
	return true
}

// gzip returns the asset gzipped, compressing it on first use; nil when
// that is not worth it.
func (a *asset) gzip() []byte {
	a.gzipOnce.Do(func() {
		if len(a.data) < 1024 {
			return
		}
		var buf bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
		_, _ = zw.Write(a.data) // a bytes.Buffer does not fail
		_ = zw.Close()
		if buf.Len() < len(a.data)*9/10 {
			a.gzipped = buf.Bytes()
		}
	})
	return a.gzipped
}

// acceptsGzip reports whether Accept-Encoding lists gzip with a non-zero
// quality.
func acceptsGzip(r *http.Request) bool {
	for _, v := range r.Header.Values("Accept-Encoding") {
		for part := range strings.SplitSeq(v, ",") {
			coding, params, _ := strings.Cut(part, ";")
			if !strings.EqualFold(strings.TrimSpace(coding), "gzip") {
				continue
			}
			params = strings.ReplaceAll(strings.TrimSpace(params), " ", "")
			if q, ok := strings.CutPrefix(params, "q="); ok {
				if f, err := strconv.ParseFloat(q, 64); err == nil && f == 0 {
					return false
				}
			}
			return true
		}
	}
	return false
}

// etagMatches reports whether an If-None-Match value matches etag (weak
// comparison, as RFC 9110 says for If-None-Match).
func etagMatches(header, etag string) bool {
	if header == "" {
		return false
	}
	for tag := range strings.SplitSeq(header, ",") {
		tag = strings.TrimSpace(tag)
		if tag == "*" || strings.TrimPrefix(tag, "W/") == etag {
			return true
		}
	}
	return false
}

var page = template.Must(template.New("page").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>API explorer</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="{{.Assets}}swagger-ui.css?v={{.CSS}}">
</head>
<body>
<noscript><p>The API explorer needs JavaScript. The OpenAPI document is at <a href="{{.OpenAPI}}">{{.OpenAPI}}</a>.</p></noscript>
{{if .Areas}}<div class="swagger-ui"><div class="topbar"><div class="wrapper"><div class="topbar-wrapper"><div class="download-url-wrapper"><label class="select-label" for="explorer-area"><span>Area of the API</span><select id="explorer-area">
{{range .Areas}}<option value="{{.URL}}" data-area="{{.Name}}">{{.Name}}</option>
{{end}}</select></label></div></div></div></div></div>
{{end}}<div id="swagger-ui" data-openapi-url="{{.OpenAPI}}"></div>
<script src="{{.Assets}}swagger-ui-bundle.js?v={{.Bundle}}"></script>
<script src="{{.Assets}}init.js?v={{.Init}}"></script>
</body>
</html>
`))

// Area is one part of the API that the explorer shows on its own: Name is
// what the page's picker says (a tag of the document, see Areas), URL the
// path (or URL) of the document of that part (AreaDocument), such as
// "/api/docs/openapi?tag=Identity".
type Area struct {
	// Name is what the picker says: a tag of the document.
	Name string
	// URL is where the area's document is: a path or a URL of this origin.
	URL string
}

// Page returns the explorer's HTML page. openapiURL is the path (or URL)
// of the OpenAPI document, "/api/docs/openapi"; assetsURL is the prefix
// under which ServeAsset serves the assets, ending in a slash,
// "/api/docs/api/assets/". Without areas the page shows the whole
// document; with areas it has a picker (a <select> in Swagger UI's top
// bar) and shows one area's document at a time, the first one, or the
// one whose tag the address's fragment names (a deep link,
// #/Identity/listUsers). Every URL and name is escaped for HTML. The page
// has no inline script; it asks for each asset with its version (?v=, a
// prefix of its sha256), so that the assets can be cached for good. Serve
// it with ContentSecurityPolicy, or use ServePage.
func Page(openapiURL, assetsURL string, areas ...Area) []byte {
	var buf bytes.Buffer
	err := page.Execute(&buf, struct {
		OpenAPI, Assets, CSS, Bundle, Init string
		Areas                              []Area
	}{openapiURL, assetsURL, assets["swagger-ui.css"].version,
		assets["swagger-ui-bundle.js"].version, assets["init.js"].version, areas})
	if err != nil {
		panic("explorer: " + err.Error()) // strings into a fixed template cannot fail
	}
	return buf.Bytes()
}

// ServePage answers a GET or HEAD request with Page(openapiURL, assetsURL,
// areas...) and the headers it needs: Content-Type text/html, Content-Security-Policy
// (ContentSecurityPolicy), Cache-Control: no-cache (the page names the
// assets' versions, which change with the binary), Referrer-Policy:
// no-referrer and X-Content-Type-Options: nosniff.
func ServePage(w http.ResponseWriter, r *http.Request, openapiURL, assetsURL string, areas ...Area) {
	body := Page(openapiURL, assetsURL, areas...)
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", ContentSecurityPolicy)
	h.Set("Cache-Control", "no-cache")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(body) // an error means the client went away
	}
}
