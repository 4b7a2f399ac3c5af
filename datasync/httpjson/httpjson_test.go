package httpjson_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/tenantkit/tenantkit/datasync"
	"github.com/tenantkit/tenantkit/datasync/httpjson"
)

// The tests call local sources (httptest, loopback only), so they allow
// private addresses except where the SSRF guard itself is tested.

const testToken = "tk_S3cr3t-t0ken.value"

// source is a local test source recording its requests.
type source struct {
	*httptest.Server
	hits atomic.Int64

	mu     sync.Mutex
	uris   []string // method and request URI
	bodies [][]byte
}

func newSource(t *testing.T, h http.HandlerFunc) *source {
	t.Helper()
	s := &source{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.hits.Add(1)
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		s.mu.Lock()
		s.uris = append(s.uris, r.Method+" "+r.RequestURI)
		s.bodies = append(s.bodies, body)
		s.mu.Unlock()
		h(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

// requests returns the method and request URI of each request so far.
func (s *source) requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.uris...)
}

// body returns the body of the i-th request.
func (s *source) body(i int) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bodies[i]
}

// reply answers a JSON body with a status.
func reply(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, body)
}

func call(baseURL, token, entityType string) datasync.Call {
	creds := map[string]any{"baseUrl": baseURL}
	if token != "" {
		creds["token"] = token
	}
	return datasync.Call{IntegrationID: "sync_http_json", Credentials: creds, APIVersion: "v1", EntityType: entityType}
}

func local() *httpjson.Adapter { return httpjson.New(httpjson.Options{AllowPrivate: true}) }

// sourceError returns err as a *SourceError, failing the test otherwise.
func sourceError(t *testing.T, err error) *datasync.SourceError {
	t.Helper()
	var se *datasync.SourceError
	if !errors.As(err, &se) {
		t.Fatalf("error %v (%T) is not a *datasync.SourceError", err, err)
	}
	if strings.Contains(err.Error(), testToken) {
		t.Fatalf("error %q contains the token", err)
	}
	return se
}

func TestAdapter(t *testing.T) {
	is := is.New(t)
	a := local()
	is.Equal(a.ProviderKey(), "sync_http_json")
	is.Equal(a.Directions(), []datasync.Direction{datasync.Import, datasync.Export})
	is.Equal(a.EntityTypes(context.Background(), []string{"orders", "products"}), []string{"orders", "products"})
	is.Equal(len(a.EntityTypes(context.Background(), nil)), 0)
}

func TestImportPaging(t *testing.T) {
	is := is.New(t)
	pages := map[string]string{
		"":       `{"items":[{"externalId":"a","data":{"name":"A","n":1}},{"externalId":"b","data":{}}],"nextCursor":"c1","totalEstimate":5}`,
		"c1":     `{"items":[{"externalId":"c","data":{"nested":{"x":[1,2]}}},{"externalId":"d","data":{"ok":true}}],"nextCursor":"c/2 &+"}`,
		"c/2 &+": `{"items":[{"externalId":"é","data":{"v":null}}],"nextCursor":null}`,
	}
	src := newSource(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet || r.URL.Path != "/orders" {
			reply(w, 404, `{}`)
			return
		}
		if r.Header.Get("Authorization") != "Bearer "+testToken || r.Header.Get("User-Agent") != "tenantkit-datasync" ||
			r.Header.Get("Accept") != "application/json" {
			reply(w, 401, `{}`)
			return
		}
		if r.URL.Query().Get("limit") != "2" {
			reply(w, 400, `{"error":"limit"}`)
			return
		}
		_, hasCursor := r.URL.Query()["cursor"]
		cursor := r.URL.Query().Get("cursor")
		page, ok := pages[cursor]
		if !ok || hasCursor == (cursor == "") {
			reply(w, 400, `{"error":"cursor"}`)
			return
		}
		reply(w, 200, page)
	})
	a := local()
	c := call(src.URL, testToken, "orders")
	var ids []string
	cursor, n := "", 0
	for {
		page, err := a.Import(context.Background(), c, cursor, 2)
		is.NoErr(err)
		n++
		if n == 1 {
			is.True(page.TotalEstimate != nil)
			is.Equal(*page.TotalEstimate, int64(5))
			is.Equal(page.Items[0].Data, map[string]any{"name": "A", "n": float64(1)})
		} else {
			is.Equal(page.TotalEstimate, nil) // absent
		}
		for _, it := range page.Items {
			is.True(it.Data != nil)
			ids = append(ids, it.ExternalID)
		}
		if page.NextCursor == "" {
			break
		}
		cursor = page.NextCursor
	}
	is.Equal(n, 3)
	is.Equal(ids, []string{"a", "b", "c", "d", "é"})
	is.Equal(src.requests(), []string{"GET /orders?limit=2", "GET /orders?cursor=c1&limit=2", "GET /orders?cursor=c%2F2+%26%2B&limit=2"})
}

func TestImportWithoutToken(t *testing.T) {
	is := is.New(t)
	var auth atomic.Int64
	src := newSource(t, func(w http.ResponseWriter, r *http.Request) {
		auth.Add(int64(len(r.Header.Values("Authorization"))))
		reply(w, 200, `{"items":[],"nextCursor":null}`)
	})
	a := local()
	page, err := a.Import(context.Background(), call(src.URL, "", "orders"), "", 10)
	is.NoErr(err)
	is.Equal(len(page.Items), 0)
	is.Equal(page.NextCursor, "")
	c := call(src.URL, "", "orders")
	c.Credentials["token"] = nil
	_, err = a.Import(context.Background(), c, "", 10)
	is.NoErr(err)
	c.Credentials["token"] = "  "
	_, err = a.Import(context.Background(), c, "", 10)
	is.NoErr(err)
	is.Equal(auth.Load(), int64(0))
	is.Equal(src.hits.Load(), int64(3))
}

func TestImportLastPage(t *testing.T) {
	for _, body := range []string{
		`{"items":[{"externalId":"a","data":{}}],"nextCursor":null}`,
		`{"items":[{"externalId":"a","data":{}}],"nextCursor":""}`,
		`{"items":[{"externalId":"a","data":{}}]}`,
		`{"items":[{"externalId":"a","data":{}}],"totalEstimate":null,"other":1}`,
	} {
		t.Run(body, func(t *testing.T) {
			is := is.New(t)
			src := newSource(t, func(w http.ResponseWriter, r *http.Request) { reply(w, 200, body) })
			page, err := local().Import(context.Background(), call(src.URL, testToken, "orders"), "c9", 10)
			is.NoErr(err)
			is.Equal(len(page.Items), 1)
			is.Equal(page.NextCursor, "")
			is.Equal(page.TotalEstimate, nil)
		})
	}
}

func TestImportTotalEstimate(t *testing.T) {
	for body, want := range map[string]int64{
		`{"items":[],"totalEstimate":0}`:                0,
		`{"items":[],"totalEstimate":12345}`:            12345,
		`{"items":[],"totalEstimate":1e3}`:              1000,
		`{"items":[],"totalEstimate":7.0}`:              7,
		`{"items":[],"totalEstimate":-0}`:               0,
		`{"items":[],"totalEstimate":9007199254740993}`: 9007199254740993,
	} {
		t.Run(body, func(t *testing.T) {
			is := is.New(t)
			src := newSource(t, func(w http.ResponseWriter, r *http.Request) { reply(w, 200, body) })
			page, err := local().Import(context.Background(), call(src.URL, testToken, "orders"), "", 10)
			is.NoErr(err)
			is.True(page.TotalEstimate != nil)
			is.Equal(*page.TotalEstimate, want)
		})
	}
}

func TestImportMalformed(t *testing.T) {
	long := strings.Repeat("x", 256)
	for _, tc := range []struct{ body, want string }{
		{``, "not valid JSON"},
		{`not json`, "not valid JSON"},
		{`{"items":[]`, "not valid JSON"},
		{`{"items":[]} {}`, "not valid JSON"},
		{`null`, "must be a JSON object"},
		{`[]`, "must be a JSON object"},
		{`"page"`, "must be a JSON object"},
		{`{}`, "items must be an array"},
		{`{"items":null}`, "items must be an array"},
		{`{"items":{}}`, "items must be an array"},
		{`{"items":"a"}`, "items must be an array"},
		{`{"items":[1]}`, "items[0] must be an object"},
		{`{"items":[{"externalId":"a","data":{}},null]}`, "items[1] must be an object"},
		{`{"items":[{"data":{}}]}`, "items[0].externalId must be a non-empty string"},
		{`{"items":[{"externalId":"","data":{}}]}`, "items[0].externalId must be a non-empty string"},
		{`{"items":[{"externalId":5,"data":{}}]}`, "items[0].externalId must be a non-empty string"},
		{`{"items":[{"externalId":null,"data":{}}]}`, "items[0].externalId must be a non-empty string"},
		{`{"items":[{"externalId":"` + long + `","data":{}}]}`, "items[0].externalId is longer than 255 bytes"},
		{`{"items":[{"externalId":"a\u0000b","data":{}}]}`, "items[0].externalId contains a NUL character"},
		{`{"items":[{"externalId":"a"}]}`, "items[0].data must be an object"},
		{`{"items":[{"externalId":"a","data":null}]}`, "items[0].data must be an object"},
		{`{"items":[{"externalId":"a","data":[1]}]}`, "items[0].data must be an object"},
		{`{"items":[{"externalId":"a","data":"x"}]}`, "items[0].data must be an object"},
		{`{"items":[],"nextCursor":5}`, "nextCursor must be a string or null"},
		{`{"items":[],"nextCursor":{}}`, "nextCursor must be a string or null"},
		{`{"items":[],"nextCursor":"` + strings.Repeat("c", 4097) + `"}`, "nextCursor is longer than 4096 bytes"},
		{`{"items":[],"nextCursor":"c1"}`, "nextCursor repeats the cursor"},
		{`{"items":[],"totalEstimate":-1}`, "totalEstimate must be a non-negative integer"},
		{`{"items":[],"totalEstimate":1.5}`, "totalEstimate must be a non-negative integer"},
		{`{"items":[],"totalEstimate":"5"}`, "totalEstimate must be a non-negative integer"},
		{`{"items":[],"totalEstimate":1e30}`, "totalEstimate must be a non-negative integer"},
		{`{"items":[{"externalId":"a","data":{}},{"externalId":"b","data":{}},{"externalId":"c","data":{}},{"externalId":"d","data":{}}]}`,
			"the page has 4 items, more than the limit 3"},
	} {
		t.Run(tc.want, func(t *testing.T) {
			is := is.New(t)
			src := newSource(t, func(w http.ResponseWriter, r *http.Request) { reply(w, 200, tc.body) })
			page, err := local().Import(context.Background(), call(src.URL, testToken, "orders"), "c1", 3)
			is.Equal(page, nil)
			se := sourceError(t, err)
			is.Equal(se.Retryable, false)
			is.Equal(se.Status, 200)
			if !strings.Contains(se.Message, tc.want) || !strings.HasPrefix(se.Message, "malformed page: ") {
				t.Fatalf("message %q, want malformed page: …%s…", se.Message, tc.want)
			}
		})
	}
}

func TestStatuses(t *testing.T) {
	for _, tc := range []struct {
		status    int
		retryable bool
		want      string
	}{
		{401, false, "Unauthorized (check the token)"},
		{403, false, "Forbidden"},
		{400, false, "Bad Request"},
		{404, false, "Not Found"},
		{422, false, "Unprocessable Entity"},
		{302, false, "redirects are not followed"},
		{408, true, "Request Timeout"},
		{429, true, "Too Many Requests; Retry-After: 30"},
		{500, true, "Internal Server Error"},
		{502, true, "Bad Gateway"},
		{503, true, "Service Unavailable; Retry-After: 30"},
		{599, true, "unexpected status"},
	} {
		t.Run(strconv.Itoa(tc.status), func(t *testing.T) {
			is := is.New(t)
			src := newSource(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Retry-After", "30")
				w.Header().Set("Location", "/elsewhere")
				// The body echoes the token: it must not reach the error.
				reply(w, tc.status, `{"error":"bad token `+strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")+`"}`)
			})
			a := local()
			c := call(src.URL, testToken, "orders")
			_, err := a.Import(context.Background(), c, "", 10)
			se := sourceError(t, err)
			is.Equal(se.Status, tc.status)
			is.Equal(se.Retryable, tc.retryable)
			if !strings.Contains(se.Message, tc.want) {
				t.Fatalf("message %q, want %q", se.Message, tc.want)
			}
			if tc.status != 302 {
				is.True(strings.Contains(se.Message, `bad token [redacted]`))
			}
			if !tc.retryable {
				is.True(!strings.Contains(se.Message, "Retry-After"))
			}
			_, err = a.Export(context.Background(), c, []datasync.ExportItem{{LocalID: "1"}})
			se = sourceError(t, err)
			is.Equal(se.Status, tc.status)
			is.Equal(se.Retryable, tc.retryable)
			is.True(a.Validate(context.Background(), c) != nil)
			is.Equal(src.hits.Load(), int64(3)) // one call each, no retries, no redirect followed
		})
	}
}

func TestErrorBodyExcerpt(t *testing.T) {
	is := is.New(t)
	src := newSource(t, func(w http.ResponseWriter, r *http.Request) {
		reply(w, 400, "line one\n\tline\x00two "+strings.Repeat("é", 300)+"\xff")
	})
	_, err := local().Import(context.Background(), call(src.URL, testToken, "orders"), "", 10)
	se := sourceError(t, err)
	is.True(strings.HasPrefix(se.Message, `Bad Request: "line one line two éé`))
	is.True(strings.HasSuffix(se.Message, `…"`))
	is.True(len(se.Message) < 260)
}

func TestOversizeResponse(t *testing.T) {
	big := `{"items":[],"pad":"` + strings.Repeat("x", 2000) + `"}`
	for name, h := range map[string]http.HandlerFunc{
		"content-length": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Length", strconv.Itoa(len(big)))
			reply(w, 200, big)
		},
		"chunked": func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(200)
			for i := 0; i < len(big); i += 100 {
				_, _ = io.WriteString(w, big[i:min(i+100, len(big))])
				w.(http.Flusher).Flush()
			}
		},
	} {
		t.Run(name, func(t *testing.T) {
			is := is.New(t)
			src := newSource(t, h)
			a := httpjson.New(httpjson.Options{AllowPrivate: true, MaxResponseBytes: 1024})
			c := call(src.URL, testToken, "orders")
			_, err := a.Import(context.Background(), c, "", 10)
			se := sourceError(t, err)
			is.Equal(se.Retryable, false)
			is.Equal(se.Message, "response larger than 1024 bytes")
			_, err = a.Export(context.Background(), c, []datasync.ExportItem{{LocalID: "1"}})
			se = sourceError(t, err)
			is.Equal(se.Retryable, false)

			// At the limit exactly, the page is read.
			b := httpjson.New(httpjson.Options{AllowPrivate: true, MaxResponseBytes: int64(len(big))})
			_, err = b.Import(context.Background(), c, "", 10)
			is.NoErr(err)
		})
	}
	is := is.New(t)
	a := httpjson.New(httpjson.Options{AllowPrivate: true, MaxResponseBytes: 1 << 20})
	src := newSource(t, func(w http.ResponseWriter, r *http.Request) {
		reply(w, 200, `{"items":[],"pad":"`+strings.Repeat("x", 1<<20)+`"}`)
	})
	_, err := a.Import(context.Background(), call(src.URL, "", "orders"), "", 10)
	is.Equal(sourceError(t, err).Message, "response larger than 1 MiB")
}

func TestTimeout(t *testing.T) {
	is := is.New(t)
	release := make(chan struct{})
	src := newSource(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	defer close(release)
	var logs bytes.Buffer
	a := httpjson.New(httpjson.Options{AllowPrivate: true, Timeout: 50 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	_, err := a.Import(context.Background(), call(src.URL, testToken, "orders"), "", 10)
	se := sourceError(t, err)
	is.Equal(se.Retryable, true)
	is.Equal(se.Status, 0)
	is.Equal(se.Message, "request failed: timeout")
	is.True(strings.Contains(logs.String(), "sync_http_json request failed"))
	is.True(!strings.Contains(logs.String(), testToken))
}

func TestSlowBody(t *testing.T) {
	is := is.New(t)
	release := make(chan struct{})
	src := newSource(t, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(200)
		_, _ = io.WriteString(w, `{"items":[`)
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	defer close(release)
	a := httpjson.New(httpjson.Options{AllowPrivate: true, Timeout: 50 * time.Millisecond})
	_, err := a.Import(context.Background(), call(src.URL, testToken, "orders"), "", 10)
	se := sourceError(t, err)
	is.Equal(se.Retryable, true)
	is.Equal(se.Message, "request failed: timeout")
}

// A body trickling below Call.MinBytesPerSecond once ThroughputGrace has
// passed fails the call, not retryably; the same body with no floor, or
// a floor it meets, is read.
func TestThroughputFloor(t *testing.T) {
	const page = `{"items": [], "nextCursor": null}`
	src := newSource(t, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(200)
		for _, b := range []byte(page) {
			if _, err := w.Write([]byte{b}); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			select {
			case <-time.After(10 * time.Millisecond):
			case <-r.Context().Done():
				return
			}
		}
	})
	for _, c := range []struct {
		name    string
		min     int64
		grace   time.Duration
		tooSlow bool
	}{
		{"no floor", 0, 0, false},
		{"a floor it meets", 10, 100 * time.Millisecond, false},
		{"a floor it misses", 1000, 100 * time.Millisecond, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			is := is.New(t)
			cl := call(src.URL, testToken, "orders")
			cl.MinBytesPerSecond, cl.ThroughputGrace = c.min, c.grace
			page, err := local().Import(context.Background(), cl, "", 10)
			if !c.tooSlow {
				is.NoErr(err)
				is.Equal(len(page.Items), 0)
				return
			}
			se := sourceError(t, err)
			is.Equal(se.Retryable, false)
			is.Equal(se.Status, 200)
			is.True(strings.HasPrefix(se.Message, "the source sent its answer too slowly: "))
			is.True(strings.HasSuffix(se.Message, "below the minimum of 1000 bytes a second"))
		})
	}
}

func TestCallerCancels(t *testing.T) {
	is := is.New(t)
	ctx, cancel := context.WithCancel(context.Background())
	release := make(chan struct{})
	src := newSource(t, func(w http.ResponseWriter, r *http.Request) {
		cancel()
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	defer close(release)
	_, err := local().Import(ctx, call(src.URL, testToken, "orders"), "", 10)
	is.True(errors.Is(err, context.Canceled))
	var se *datasync.SourceError
	is.True(!errors.As(err, &se))
}

func TestConnectionRefused(t *testing.T) {
	is := is.New(t)
	src := newSource(t, func(w http.ResponseWriter, r *http.Request) {})
	url := src.URL
	src.Close()
	_, err := local().Import(context.Background(), call(url, testToken, "orders"), "", 10)
	se := sourceError(t, err)
	is.Equal(se.Retryable, true)
	is.Equal(se.Message, "request failed: connection refused")
}

func TestExport(t *testing.T) {
	is := is.New(t)
	type sent struct {
		Items []struct {
			LocalID string         `json:"localId"`
			Data    map[string]any `json:"data"`
		} `json:"items"`
	}
	src := newSource(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/orders" || r.URL.RawQuery != "" ||
			r.Header.Get("Content-Type") != "application/json" || r.Header.Get("Authorization") != "Bearer "+testToken {
			reply(w, 400, `{}`)
			return
		}
		// Out of order, an unknown localId, a duplicate, an odd status,
		// and nothing for "5".
		reply(w, 200, `{"results":[
			{"localId":"3","status":"skipped"},
			{"localId":"x","externalId":"ext-x","status":"success"},
			{"localId":"1","externalId":"ext-1","status":"success"},
			{"localId":"2","status":"error","error":"bad\nvalue for `+testToken+`"},
			{"localId":"1","externalId":"ext-1b","status":"error"},
			{"localId":"4","externalId":"ext-4","status":"done"},
			{"localId":"6","externalId":null,"status":"success","error":null},
			{"localId":"7","externalId":"a\u0000b","status":"success"}
		]}`)
	})
	items := []datasync.ExportItem{
		{LocalID: "1", Data: map[string]any{"name": "one", "n": 1}},
		{LocalID: "2", Data: map[string]any{"name": "two"}},
		{LocalID: "3"},
		{LocalID: "4", Data: map[string]any{}},
		{LocalID: "5", Data: map[string]any{"x": []any{1, "a"}}},
		{LocalID: "6", Data: map[string]any{}},
		{LocalID: "7", Data: map[string]any{}},
	}
	results, err := local().Export(context.Background(), call(src.URL, testToken, "orders"), items)
	is.NoErr(err)
	is.Equal(results, []datasync.ExportResult{
		{LocalID: "1", ExternalID: "ext-1", Status: "success"},
		{LocalID: "2", Status: "error", Error: "bad value for [redacted]"},
		{LocalID: "3", Status: "skipped"},
		{LocalID: "4", ExternalID: "ext-4", Status: "error", Error: `unknown status "done"`},
		{LocalID: "5", Status: "error", Error: "no result from the target"},
		{LocalID: "6", Status: "success"},
		{LocalID: "7", Status: "error", Error: "the target's externalId contains a NUL character"},
	})
	is.Equal(src.requests(), []string{"POST /orders"}) // one POST for the batch
	var got sent
	is.NoErr(json.Unmarshal(src.body(0), &got))
	is.Equal(len(got.Items), 7)
	is.Equal(got.Items[0].LocalID, "1")
	is.Equal(got.Items[0].Data, map[string]any{"name": "one", "n": float64(1)})
	is.Equal(got.Items[2].Data, map[string]any{}) // nil data is sent as {}
	is.Equal(got.Items[4].Data, map[string]any{"x": []any{float64(1), "a"}})
}

func TestExportNoResults(t *testing.T) {
	is := is.New(t)
	src := newSource(t, func(w http.ResponseWriter, r *http.Request) { reply(w, 201, `{"results":[]}`) })
	results, err := local().Export(context.Background(), call(src.URL, "", "orders"),
		[]datasync.ExportItem{{LocalID: "1"}, {LocalID: "2"}})
	is.NoErr(err)
	is.Equal(results, []datasync.ExportResult{
		{LocalID: "1", Status: "error", Error: "no result from the target"},
		{LocalID: "2", Status: "error", Error: "no result from the target"},
	})
}

func TestExportEmptyBatch(t *testing.T) {
	is := is.New(t)
	src := newSource(t, func(w http.ResponseWriter, r *http.Request) { reply(w, 500, `{}`) })
	results, err := local().Export(context.Background(), call(src.URL, testToken, "orders"), nil)
	is.NoErr(err)
	is.Equal(len(results), 0)
	is.Equal(src.hits.Load(), int64(0))
}

func TestExportMalformed(t *testing.T) {
	for _, tc := range []struct{ body, want string }{
		{``, "not valid JSON"},
		{`{"results":[]`, "not valid JSON"},
		{`[]`, "must be a JSON object"},
		{`{}`, "results must be an array"},
		{`{"results":null}`, "results must be an array"},
		{`{"results":{"1":{}}}`, "results must be an array"},
		{`{"results":[1]}`, "results[0] must be an object"},
		{`{"results":[{"status":"success"}]}`, "results[0].localId must be a string"},
		{`{"results":[{"localId":1,"status":"success"}]}`, "results[0].localId must be a string"},
		{`{"results":[{"localId":"1","externalId":2,"status":"success"}]}`, "results[0].externalId must be a string or null"},
		{`{"results":[{"localId":"1","status":"error","error":{"m":"x"}}]}`, "results[0].error must be a string or null"},
	} {
		t.Run(tc.want, func(t *testing.T) {
			is := is.New(t)
			src := newSource(t, func(w http.ResponseWriter, r *http.Request) { reply(w, 200, tc.body) })
			_, err := local().Export(context.Background(), call(src.URL, testToken, "orders"), []datasync.ExportItem{{LocalID: "1"}})
			se := sourceError(t, err)
			is.Equal(se.Retryable, false)
			is.Equal(se.Status, 200)
			if !strings.Contains(se.Message, tc.want) || !strings.HasPrefix(se.Message, "malformed export response: ") {
				t.Fatalf("message %q, want malformed export response: …%s…", se.Message, tc.want)
			}
		})
	}
}

func TestExportStatusWithoutString(t *testing.T) {
	is := is.New(t)
	src := newSource(t, func(w http.ResponseWriter, r *http.Request) {
		reply(w, 200, `{"results":[{"localId":"1","status":5},{"localId":"2"}]}`)
	})
	results, err := local().Export(context.Background(), call(src.URL, testToken, "orders"),
		[]datasync.ExportItem{{LocalID: "1"}, {LocalID: "2"}})
	is.NoErr(err)
	is.Equal(results, []datasync.ExportResult{
		{LocalID: "1", Status: "error", Error: `unknown status ""`},
		{LocalID: "2", Status: "error", Error: `unknown status ""`},
	})
}

func TestURLs(t *testing.T) {
	for _, tc := range []struct{ base, entity, want string }{
		{"", "orders", "/orders?limit=5"},
		{"/", "orders", "/orders?limit=5"},
		{"/api/v2", "orders", "/api/v2/orders?limit=5"},
		{"/api/v2/", "orders", "/api/v2/orders?limit=5"},
		{"/api/v2//", "orders", "/api/v2/orders?limit=5"},
		{"/api/v2/?key=k1", "orders", "/api/v2/orders?key=k1&limit=5"},
		{"/api/v2#frag", "orders", "/api/v2/orders?limit=5"},
		{"/a%2Fb/", "orders", "/a%2Fb/orders?limit=5"},
		{"", "a b/c?d#é%", "/a%20b%2Fc%3Fd%23%C3%A9%25?limit=5"},
		{"", "../x", "/..%2Fx?limit=5"},
	} {
		t.Run(tc.base+" "+tc.entity, func(t *testing.T) {
			is := is.New(t)
			src := newSource(t, func(w http.ResponseWriter, r *http.Request) {
				if r.Method == http.MethodPost {
					reply(w, 200, `{"results":[]}`)
					return
				}
				reply(w, 200, `{"items":[]}`)
			})
			c := call(src.URL+tc.base, testToken, tc.entity)
			_, err := local().Import(context.Background(), c, "", 5)
			is.NoErr(err)
			_, err = local().Export(context.Background(), c, []datasync.ExportItem{{LocalID: "1"}})
			is.NoErr(err)
			path, _, _ := strings.Cut(tc.want, "?")
			if strings.Contains(tc.base, "key=k1") {
				path += "?key=k1"
			}
			is.Equal(src.requests(), []string{"GET " + tc.want, "POST " + path})
		})
	}
}

func TestBadCalls(t *testing.T) {
	src := newSource(t, func(w http.ResponseWriter, r *http.Request) { reply(w, 200, `{"items":[]}`) })
	with := func(f func(c *datasync.Call)) datasync.Call {
		c := call(src.URL, testToken, "orders")
		f(&c)
		return c
	}
	for _, tc := range []struct {
		name string
		call datasync.Call
		want string
	}{
		{"no credentials", with(func(c *datasync.Call) { c.Credentials = nil }), "the baseUrl credential is missing"},
		{"no baseUrl", with(func(c *datasync.Call) { delete(c.Credentials, "baseUrl") }), "the baseUrl credential is missing"},
		{"empty baseUrl", with(func(c *datasync.Call) { c.Credentials["baseUrl"] = "" }), "the baseUrl credential is missing"},
		{"null baseUrl", with(func(c *datasync.Call) { c.Credentials["baseUrl"] = nil }), "the baseUrl credential is missing"},
		{"number baseUrl", with(func(c *datasync.Call) { c.Credentials["baseUrl"] = 5 }), "the baseUrl credential must be a string"},
		{"relative baseUrl", with(func(c *datasync.Call) { c.Credentials["baseUrl"] = "/api" }), "must be an absolute http or https URL"},
		{"no host", with(func(c *datasync.Call) { c.Credentials["baseUrl"] = "http:///api" }), "must be an absolute http or https URL"},
		{"ftp baseUrl", with(func(c *datasync.Call) { c.Credentials["baseUrl"] = "ftp://127.0.0.1/" }), "must be an absolute http or https URL"},
		{"opaque baseUrl", with(func(c *datasync.Call) { c.Credentials["baseUrl"] = "http:127.0.0.1" }), "must be an absolute http or https URL"},
		{"bad host", with(func(c *datasync.Call) { c.Credentials["baseUrl"] = "http://256.1.1.1/" }), "must be an absolute http or https URL"},
		{"number token", with(func(c *datasync.Call) { c.Credentials["token"] = 42 }), "the token credential must be a string"},
		{"token with newline", with(func(c *datasync.Call) { c.Credentials["token"] = testToken + "\r\nX-Evil: 1" }), "the token credential has characters"},
		{"api version", with(func(c *datasync.Call) { c.APIVersion = "v2" }), `API version "v2" is not supported`},
		{"no entity type", with(func(c *datasync.Call) { c.EntityType = "" }), "cannot name a URL path segment"},
		{"dot dot", with(func(c *datasync.Call) { c.EntityType = ".." }), "cannot name a URL path segment"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			a := local()
			_, err := a.Import(context.Background(), tc.call, "", 10)
			se := sourceError(t, err)
			is.Equal(se.Retryable, false)
			is.Equal(se.Status, 0)
			if !strings.Contains(se.Message, tc.want) {
				t.Fatalf("message %q, want %q", se.Message, tc.want)
			}
			_, err = a.Export(context.Background(), tc.call, []datasync.ExportItem{{LocalID: "1"}})
			is.Equal(sourceError(t, err).Message, se.Message)
			is.Equal(sourceError(t, a.Validate(context.Background(), tc.call)).Message, se.Message)
		})
	}
	is := is.New(t)
	_, err := local().Import(context.Background(), call(src.URL, testToken, "orders"), "", 0)
	is.Equal(sourceError(t, err).Retryable, false)
	is.Equal(src.hits.Load(), int64(0))

	// No API version is v1; a token is trimmed.
	c := call(src.URL, " "+testToken+"\n", "orders")
	c.APIVersion = ""
	_, err = local().Import(context.Background(), c, "", 10)
	is.NoErr(err)
}

// refusing is a client that connects nowhere and counts its calls.
type refusing struct{ calls atomic.Int64 }

func (r *refusing) RoundTrip(*http.Request) (*http.Response, error) {
	r.calls.Add(1)
	return nil, errors.New("the test client connects nowhere")
}

func TestSSRFGuard(t *testing.T) {
	is := is.New(t)
	src := newSource(t, func(w http.ResponseWriter, r *http.Request) { reply(w, 200, `{"items":[],"results":[]}`) })
	_, port, _ := strings.Cut(strings.TrimPrefix(src.URL, "http://"), ":")
	refused := func(t *testing.T, a *httpjson.Adapter, base string) {
		t.Helper()
		is := is.New(t)
		c := call(base, testToken, "orders")
		_, err := a.Import(context.Background(), c, "", 10)
		se := sourceError(t, err)
		is.Equal(se.Retryable, false)
		is.Equal(se.Message, "the baseUrl credential points to a non-public address")
		_, err = a.Export(context.Background(), c, []datasync.ExportItem{{LocalID: "1"}})
		is.Equal(sourceError(t, err).Message, se.Message)
		is.Equal(sourceError(t, a.Validate(context.Background(), c)).Message, se.Message)
	}
	// Loopback spellings of the test server's address, through the
	// guard's own client and through a replaced one (which does not
	// check addresses, so the base URL check alone refuses).
	for _, base := range []string{
		"http://127.0.0.1:" + port,
		"http://127.0.0.1:" + port + "/api/",
		"http://localhost:" + port,
		"http://LOCALHOST.:" + port,
		"http://[::1]:" + port,
		"http://[::ffff:127.0.0.1]:" + port,
		"http://0x7f.1:" + port,
		"http://2130706433:" + port,
	} {
		t.Run(base, func(t *testing.T) {
			refused(t, httpjson.New(httpjson.Options{}), base)
			refused(t, httpjson.New(httpjson.Options{Client: src.Client()}), base)
		})
	}
	is.Equal(src.hits.Load(), int64(0)) // nothing connected

	// Other non-public targets, with a client that connects nowhere.
	rt := &refusing{}
	a := httpjson.New(httpjson.Options{Client: &http.Client{Transport: rt}})
	for _, base := range []string{
		"http://10.0.0.1/",
		"http://192.168.1.1:8080/api",
		"http://169.254.169.254/latest/meta-data",
		"http://[fd00::1]/",
		"http://metadata.internal/",
		"http://printer.local/",
		"http://intranet/",
	} {
		t.Run(base, func(t *testing.T) { refused(t, a, base) })
	}
	is.Equal(rt.calls.Load(), int64(0))

	// A public name passes the check (the client here connects nowhere;
	// the guard's client checks the address it would connect to).
	_, err := a.Import(context.Background(), call("https://sync.example.com/api", testToken, "orders"), "", 10)
	se := sourceError(t, err)
	is.Equal(se.Message, "request failed: connection failed")
	is.Equal(rt.calls.Load(), int64(1))

	// Allowed, the loopback URL is called.
	_, err = httpjson.New(httpjson.Options{AllowPrivate: true}).Import(context.Background(),
		call("http://127.0.0.1:"+port, testToken, "orders"), "", 10)
	is.NoErr(err)
	is.Equal(src.hits.Load(), int64(1))
}

func TestValidate(t *testing.T) {
	is := is.New(t)
	body := `{"items":[{"externalId":"a","data":{}}],"nextCursor":"n"}`
	var mu sync.Mutex
	src := newSource(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		reply(w, 200, body)
	})
	setBody := func(b string) {
		mu.Lock()
		defer mu.Unlock()
		body = b
	}
	a := local()
	c := call(src.URL, testToken, "orders")
	is.NoErr(a.Validate(context.Background(), c))
	is.Equal(src.requests(), []string{"GET /orders?limit=1"})

	setBody(`{"items":[{"externalId":"a","data":{}},{"externalId":"b","data":{}}]}`) // ignores the limit
	se := sourceError(t, a.Validate(context.Background(), c))
	is.Equal(se.Retryable, false)
	setBody(`{"items":[{"externalId":"a","data":1}]}`)
	se = sourceError(t, a.Validate(context.Background(), c))
	is.Equal(se.Message, "malformed page: items[0].data must be an object")
}
