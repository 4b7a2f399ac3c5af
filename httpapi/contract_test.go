package httpapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path"
	"slices"
	"strings"
	"sync"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	"github.com/pb33f/libopenapi-validator/config"
	verrors "github.com/pb33f/libopenapi-validator/errors"
	"github.com/tenantkit/tenantkit/httpapi/internal/apikit"
)

// The contract check: every request the HTTP tests send through testEnv
// and its response are validated against the OpenAPI document the
// handler serves (libopenapi-validator). A response whose status or body
// the document does not describe fails the test that got it; so does a
// request the handler accepted (2xx) that the document says is invalid.
// Requests the handler refused are not checked: the tests send bad input
// on purpose.

// contract is the validator of the document, built once from the first
// test environment's handler (every testEnv serves the same routes).
var contract struct {
	once sync.Once
	v    validator.Validator
	area func(*http.Request) string
	err  error
}

func (e *testEnv) loadContract() error {
	contract.once.Do(func() {
		rec := httptest.NewRecorder()
		e.handler.ServeHTTP(rec, httptest.NewRequest("GET", "/api/docs/openapi", nil))
		if rec.Code != 200 {
			contract.err = fmt.Errorf("GET /api/docs/openapi: %d %s", rec.Code, rec.Body)
			return
		}
		doc, err := libopenapi.NewDocument(rec.Body.Bytes())
		if err != nil {
			contract.err = err
			return
		}
		v, errs := validator.NewValidator(doc, config.WithFormatAssertions())
		if len(errs) > 0 {
			contract.err = fmt.Errorf("validator: %v", errs)
			return
		}
		contract.v = v
		// Which area a request is in: the route table in a mux, whose
		// handlers apply the routes' Match as the served one does.
		a := &api{kit: e.kit.Kit, opts: Options{Auth: e.auth}, base: "/api"}
		mux := http.NewServeMux()
		shared := map[string][]apikit.Route{}
		for _, rt := range a.routes() {
			pattern := rt.Method + " " + a.base + rt.Path
			if _, ok := shared[pattern]; !ok {
				mux.Handle(pattern, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					for _, rt := range shared[pattern] {
						if rt.Match == nil || rt.Match(r) {
							w.Header().Set("X-Area", rt.Doc.Area)
							return
						}
					}
				}))
			}
			shared[pattern] = append(shared[pattern], rt)
		}
		contract.area = func(r *http.Request) string {
			rec := httptest.NewRecorder()
			mux.ServeHTTP(rec, r.Clone(r.Context()))
			return rec.Header().Get("X-Area")
		}
	})
	return contract.err
}

// checkContract validates one exchange of a test (body is the request
// body that was sent).
func (e *testEnv) checkContract(req *http.Request, body []byte, rec *httptest.ResponseRecorder) {
	e.t.Helper()
	if err := e.loadContract(); err != nil {
		e.t.Fatalf("contract: %v", err)
	}
	if strings.HasPrefix(req.URL.Path, "/api/docs/api/assets/") {
		return // Swagger UI's files: their bodies are not what the check reads
	}
	if contract.area(req) == "" || path.Clean(req.URL.Path) != req.URL.Path {
		return // no route: the catch-all 404 and 405, net/http's redirect of an unclean path
	}
	clone := func() *http.Request {
		r := req.Clone(req.Context())
		// An empty query value counts as absent (the document says so).
		q := r.URL.Query()
		for name, values := range q {
			if slices.Contains(values, "") {
				q[name] = slices.DeleteFunc(slices.Clone(values), func(v string) bool { return v == "" })
			}
		}
		r.URL.RawQuery = q.Encode()
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		return r
	}
	resp := &http.Response{StatusCode: rec.Code, Header: rec.Header(), Body: io.NopCloser(bytes.NewReader(rec.Body.Bytes())), Request: req}
	var problems []*verrors.ValidationError
	if _, errs := contract.v.ValidateHttpResponse(clone(), resp); len(errs) > 0 {
		problems = append(problems, errs...)
	}
	if rec.Code < 300 {
		_, errs := contract.v.ValidateHttpRequestSync(clone())
		for _, e := range errs {
			// The validator cannot decode valid JSON that Go cannot
			// (numbers beyond float64: 1e999), which handlers may ignore.
			if json.Valid(body) && json.Unmarshal(body, new(any)) != nil && strings.Contains(strings.ToLower(e.Message+e.Reason), "decode") {
				continue
			}
			problems = append(problems, e)
		}
	}
	if len(problems) > 0 {
		var b strings.Builder
		for _, p := range problems {
			fmt.Fprintf(&b, "\n  %s: %s", p.Message, p.Reason)
			for _, f := range p.SchemaValidationErrors {
				fmt.Fprintf(&b, "\n    %s: %s (%s)", f.FieldPath, f.Reason, f.KeywordLocation)
			}
		}
		e.t.Errorf("contract: %s %s answered %d, which the OpenAPI document does not describe:%s\nbody: %.500s",
			req.Method, req.URL.Path, rec.Code, b.String(), rec.Body.Bytes())
	}
}
