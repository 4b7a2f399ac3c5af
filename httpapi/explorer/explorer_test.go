package explorer_test

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/tenantkit/tenantkit/httpapi/explorer"
)

const (
	openapiURL = "/api/docs/openapi"
	assetsURL  = "/api/docs/api/assets/"
)

func TestPage(t *testing.T) {
	page := string(explorer.Page(openapiURL, assetsURL))
	for _, want := range []string{
		`<div id="swagger-ui" data-openapi-url="/api/docs/openapi"></div>`,
		`<link rel="stylesheet" href="/api/docs/api/assets/swagger-ui.css?v=` + version(t, "swagger-ui.css") + `">`,
		`<script src="/api/docs/api/assets/swagger-ui-bundle.js?v=` + version(t, "swagger-ui-bundle.js") + `"></script>`,
		`<script src="/api/docs/api/assets/init.js?v=` + version(t, "init.js") + `"></script>`,
		`<link rel="icon" href="data:,">`, // no /favicon.ico request
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %s:\n%s", want, page)
		}
	}
	// No inline script, and nothing from another origin.
	for _, m := range regexp.MustCompile(`<script[^>]*>([^<]*)</script>`).FindAllStringSubmatch(page, -1) {
		if !strings.Contains(m[0], " src=") || strings.TrimSpace(m[1]) != "" {
			t.Errorf("inline script: %s", m[0])
		}
	}
	if strings.Contains(page, "http:") || strings.Contains(page, "https:") || strings.Contains(page, "//") {
		t.Errorf("the page names another origin:\n%s", page)
	}
}

func TestPageEscapes(t *testing.T) {
	page := string(explorer.Page(`/api/docs/openapi?a=1&b="><script>x</script>`, `/a"b/<assets>/`))
	for _, bad := range []string{`"><script>x`, `<assets>`, `/a"b`} {
		if strings.Contains(page, bad) {
			t.Errorf("the page holds %q unescaped:\n%s", bad, page)
		}
	}
	if !strings.Contains(page, `data-openapi-url="/api/docs/openapi?a=1&amp;b=%22%3e%3cscript%3ex%3c/script%3e"`) {
		t.Errorf("the OpenAPI URL is not escaped as expected:\n%s", page)
	}
	// A script URL is neutralized, not made a link.
	page = string(explorer.Page("javascript:alert(1)", assetsURL))
	if strings.Contains(page, `="javascript:`) || !strings.Contains(page, `data-openapi-url="#ZgotmplZ"`) {
		t.Errorf("the page holds a javascript: URL:\n%s", page)
	}
}

func TestServePage(t *testing.T) {
	for _, method := range []string{"GET", "HEAD"} {
		rec := httptest.NewRecorder()
		explorer.ServePage(rec, httptest.NewRequest(method, "/api/docs/api", nil), openapiURL, assetsURL)
		h := rec.Result().Header
		if rec.Code != 200 {
			t.Errorf("%s: status %d", method, rec.Code)
		}
		for name, want := range map[string]string{
			"Content-Type":            "text/html; charset=utf-8",
			"Content-Security-Policy": explorer.ContentSecurityPolicy,
			"Cache-Control":           "no-cache",
			"X-Content-Type-Options":  "nosniff",
			"Referrer-Policy":         "no-referrer",
		} {
			if got := h.Get(name); got != want {
				t.Errorf("%s: %s: %q, want %q", method, name, got, want)
			}
		}
		wantBody := explorer.Page(openapiURL, assetsURL)
		if method == "HEAD" {
			wantBody = nil
		}
		if !bytes.Equal(rec.Body.Bytes(), wantBody) {
			t.Errorf("%s: body %q", method, rec.Body.String())
		}
	}
	csp := explorer.ContentSecurityPolicy
	for _, want := range []string{"default-src 'none'", "script-src 'self';", "connect-src 'self'", "img-src 'self' data:", "frame-ancestors 'none'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("the policy lacks %s: %s", want, csp)
		}
	}
	if strings.Contains(csp, "unsafe-eval") || strings.Contains(csp, "script-src 'self' 'unsafe-inline'") || strings.Contains(csp, "*") {
		t.Errorf("the policy is too loose: %s", csp)
	}
}

var wantAssets = map[string]string{
	"swagger-ui-bundle.js":             "text/javascript; charset=utf-8",
	"swagger-ui.css":                   "text/css; charset=utf-8",
	"init.js":                          "text/javascript; charset=utf-8",
	"LICENSE":                          "text/plain; charset=utf-8",
	"NOTICE":                           "text/plain; charset=utf-8",
	"swagger-ui-bundle.js.LICENSE.txt": "text/plain; charset=utf-8",
}

func TestAssets(t *testing.T) {
	names := explorer.Assets()
	if len(names) != len(wantAssets) || !slices.IsSorted(names) {
		t.Errorf("Assets() = %v", names)
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			data, ctype, ok := explorer.Asset(name)
			if !ok || len(data) == 0 || ctype != wantAssets[name] {
				t.Fatalf("Asset(%q) = %d bytes, %q, %v; want type %q", name, len(data), ctype, ok, wantAssets[name])
			}
			sum := sha256.Sum256(data)
			etag := `"` + hex.EncodeToString(sum[:]) + `"`
			url := assetsURL + name + "?v=" + version(t, name)

			// GET with the version: the bytes, immutable.
			rec := serveAsset(t, "GET", url, name, nil)
			if rec.Code != 200 || !bytes.Equal(rec.Body.Bytes(), data) {
				t.Fatalf("GET: status %d, %d bytes, want 200 and %d bytes", rec.Code, rec.Body.Len(), len(data))
			}
			h := rec.Result().Header
			for header, want := range map[string]string{
				"Content-Type":           ctype,
				"Cache-Control":          explorer.AssetCacheControl,
				"ETag":                   etag,
				"X-Content-Type-Options": "nosniff",
				"Vary":                   "Accept-Encoding",
				"Content-Encoding":       "",
			} {
				if got := h.Get(header); got != want {
					t.Errorf("GET: %s: %q, want %q", header, got, want)
				}
			}
			// Without the version, or another one: revalidate.
			for _, u := range []string{assetsURL + name, assetsURL + name + "?v=0123456789abcdef"} {
				if got := serveAsset(t, "GET", u, name, nil).Header().Get("Cache-Control"); got != "no-cache" {
					t.Errorf("GET %s: Cache-Control %q, want no-cache", u, got)
				}
			}
			// If-None-Match: 304 with no body.
			for _, inm := range []string{etag, "W/" + etag, `"x", ` + etag, "*"} {
				rec := serveAsset(t, "GET", url, name, http.Header{"If-None-Match": {inm}})
				if rec.Code != http.StatusNotModified || rec.Body.Len() != 0 || rec.Header().Get("ETag") != etag {
					t.Errorf("If-None-Match %s: status %d, %d bytes, ETag %q", inm, rec.Code, rec.Body.Len(), rec.Header().Get("ETag"))
				}
			}
			if rec := serveAsset(t, "GET", url, name, http.Header{"If-None-Match": {`"other"`}}); rec.Code != 200 {
				t.Errorf("If-None-Match another tag: status %d", rec.Code)
			}
			// HEAD: the headers, no body.
			if rec := serveAsset(t, "HEAD", url, name, nil); rec.Code != 200 || rec.Body.Len() != 0 || rec.Header().Get("ETag") != etag {
				t.Errorf("HEAD: status %d, %d bytes", rec.Code, rec.Body.Len())
			}
			// gzip, for a client that takes it and an asset worth it.
			rec = serveAsset(t, "GET", url, name, http.Header{"Accept-Encoding": {"br, gzip;q=0.8"}})
			switch enc := rec.Header().Get("Content-Encoding"); {
			case enc == "gzip":
				zr, err := gzip.NewReader(rec.Body)
				if err != nil {
					t.Fatal(err)
				}
				got, err := io.ReadAll(zr)
				if err != nil || !bytes.Equal(got, data) {
					t.Errorf("gzip: %d bytes (%v), want the asset's %d", len(got), err, len(data))
				}
				if rec.Header().Get("ETag") == etag {
					t.Error("gzip: the gzipped body has the ETag of the plain one")
				}
			case enc != "":
				t.Errorf("Content-Encoding %q", enc)
			case len(data) > 10000:
				t.Errorf("%s (%d bytes) is not gzipped", name, len(data))
			}
			if rec := serveAsset(t, "GET", url, name, http.Header{"Accept-Encoding": {"gzip;q=0"}}); rec.Header().Get("Content-Encoding") != "" {
				t.Error("gzip;q=0: gzipped all the same")
			}
		})
	}
}

func TestUnknownAsset(t *testing.T) {
	for _, name := range []string{"", "nope.js", "SHA256SUMS", "VERSION", "explorer.go", "../explorer.go",
		"dist/LICENSE", "swagger-ui-bundle.js.map", "index.html", "Init.js"} {
		if data, ctype, ok := explorer.Asset(name); ok || data != nil || ctype != "" {
			t.Errorf("Asset(%q) = %d bytes, %q, %v", name, len(data), ctype, ok)
		}
		rec := httptest.NewRecorder()
		if explorer.ServeAsset(rec, httptest.NewRequest("GET", "/x", nil), name) {
			t.Errorf("ServeAsset(%q) served it", name)
		}
		if len(rec.Header()) != 0 || rec.Body.Len() != 0 || rec.Flushed {
			t.Errorf("ServeAsset(%q) wrote %v %q", name, rec.Header(), rec.Body.String())
		}
	}
}

// TestVendoredSums checks the embedded Swagger UI against dist/SHA256SUMS,
// which scripts/vendor-explorer.sh writes, and the version pins against
// each other.
func TestVendoredSums(t *testing.T) {
	f, err := os.Open("dist/SHA256SUMS")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var listed []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		sum, name, ok := strings.Cut(sc.Text(), "  ")
		if !ok {
			t.Fatalf("SHA256SUMS: bad line %q", sc.Text())
		}
		listed = append(listed, name)
		data, _, ok := explorer.Asset(name)
		if !ok {
			t.Errorf("SHA256SUMS lists %s, which is not served", name)
			continue
		}
		got := sha256.Sum256(data)
		if hex.EncodeToString(got[:]) != sum {
			t.Errorf("%s: embedded sha256 %x, SHA256SUMS says %s", name, got, sum)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	// Every served asset but init.js (ours) is vendored and listed.
	for _, name := range explorer.Assets() {
		if name != "init.js" && !slices.Contains(listed, name) {
			t.Errorf("%s is served but not in SHA256SUMS", name)
		}
	}

	v, err := os.ReadFile("dist/VERSION")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(string(v)); got != explorer.SwaggerUIVersion {
		t.Errorf("dist/VERSION is %s, SwaggerUIVersion %s", got, explorer.SwaggerUIVersion)
	}
	script, err := os.ReadFile("../../scripts/vendor-explorer.sh")
	if err != nil {
		t.Fatal(err)
	}
	if m := regexp.MustCompile(`(?m)^VERSION=(\S+)$`).FindSubmatch(script); m == nil || string(m[1]) != explorer.SwaggerUIVersion {
		t.Errorf("scripts/vendor-explorer.sh pins %q, SwaggerUIVersion is %s", m, explorer.SwaggerUIVersion)
	}
	bundle, _, _ := explorer.Asset("swagger-ui-bundle.js")
	if !bytes.Contains(bundle, []byte(`"`+explorer.SwaggerUIVersion+`"`)) {
		t.Errorf("the bundle does not name version %s", explorer.SwaggerUIVersion)
	}
}

// TestInitScript checks the settings that keep the explorer on this server.
func TestInitScript(t *testing.T) {
	data, _, _ := explorer.Asset("init.js")
	js := string(data)
	for _, want := range []string{"validatorUrl: null", "queryConfigEnabled: false", `getAttribute("data-openapi-url")`} {
		if !strings.Contains(js, want) {
			t.Errorf("init.js lacks %s", want)
		}
	}
	if strings.Contains(js, "http:") || strings.Contains(js, "https:") {
		t.Error("init.js names a URL")
	}
}

// version is the ?v= that the page puts in the asset's URL.
func version(t testing.TB, name string) string {
	t.Helper()
	data, _, ok := explorer.Asset(name)
	if !ok {
		t.Fatalf("no asset %s", name)
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])[:16]
}

func serveAsset(t *testing.T, method, url, name string, h http.Header) *httptest.ResponseRecorder {
	t.Helper()
	r := httptest.NewRequest(method, url, nil)
	for k, v := range h {
		r.Header[k] = v
	}
	rec := httptest.NewRecorder()
	if !explorer.ServeAsset(rec, r, name) {
		t.Fatalf("ServeAsset(%q) = false", name)
	}
	return rec
}

// TestPageAreas: with areas the page has a picker with one option per area
// (the first selected), names and URLs escaped; without, none.
func TestPageAreas(t *testing.T) {
	page := string(explorer.Page(openapiURL, assetsURL,
		explorer.Area{Name: "Identity", URL: openapiURL + "?tag=Identity"},
		explorer.Area{Name: `Feature "toggles" & <b>`, URL: openapiURL + "?tag=Feature+%22toggles%22+%26+%3Cb%3E"}))
	for _, want := range []string{
		`<select id="explorer-area">`,
		`<option value="/api/docs/openapi?tag=Identity" data-area="Identity">Identity</option>`,
		`<option value="/api/docs/openapi?tag=Feature&#43;%22toggles%22&#43;%26&#43;%3Cb%3E" data-area="Feature &#34;toggles&#34; &amp; &lt;b&gt;">Feature &#34;toggles&#34; &amp; &lt;b&gt;</option>`,
		`<div id="swagger-ui" data-openapi-url="/api/docs/openapi"></div>`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %s:\n%s", want, page)
		}
	}
	if strings.Contains(page, "<b>") {
		t.Errorf("an area's name is not escaped:\n%s", page)
	}
	if strings.Contains(string(explorer.Page(openapiURL, assetsURL)), "<select") {
		t.Error("the page without areas has a picker")
	}
}
