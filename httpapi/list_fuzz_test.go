package httpapi

import (
	"errors"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/tenantkit/tenantkit/httpapi/entitiesapi"
	"github.com/tenantkit/tenantkit/httpapi/internal/apikit"
	"github.com/tenantkit/tenantkit/store"
)

// fuzzFields fails unless err is a *store.ValidationError naming only
// fields of allowed.
func fuzzFields(t *testing.T, what string, err error, allowed ...string) {
	t.Helper()
	var ve *store.ValidationError
	if !errors.As(err, &ve) || !errors.Is(err, store.ErrInvalid) || len(ve.Fields) == 0 {
		t.Fatalf("%s: error %v (%T), want a validation error", what, err, err)
	}
	for f := range ve.Fields {
		if !slices.Contains(allowed, f) {
			t.Fatalf("%s: the error names %q, want one of %v", what, f, allowed)
		}
	}
}

// FuzzListParams reads arbitrary query strings with the shared list
// parameter parsers. parsePage gives a page ≥ 1 and a pageSize in
// 1..max whose offset does not overflow, taking a valid value as given;
// parseLimitOffset a limit in 1..max and an offset ≥ 0; parseSort one of
// the allowed fields and desc exactly for sortDir=desc (any case);
// parseBool nothing for an absent value and true/false for 1/0/true/false
// (any case); parseExportFormat one of the formats; checkText refuses
// exactly the values that are not storable text; entityIDsOf gives
// non-empty, trimmed ids. Every refusal is a validation error naming the
// parameter.
func FuzzListParams(f *testing.F) {
	for _, s := range []string{"", "page=2&pageSize=10", "page=0&pageSize=0", "page=-1", "page=1e3", "page=%00", "pageSize=101",
		"page=9223372036854775807&pageSize=100", "page=92233720368547759&pageSize=100", "page=+3&pageSize=07", "page= 1",
		"limit=0&offset=-1", "limit=500&offset=9223372036854775807", "sortField=name&sortDir=DESC", "sortField=nope&sortDir=up",
		"sortField=&sortDir=", "x=TRUE", "x=0", "x=yes", "format=CSV", "format=pdf", "format=%00", "search=%ff&q=%00",
		"entityId=a&entityId=%20&entityIds=b,,%20c%20,", "page=1&page=2", "page", "%zz=1&page=3"} {
		f.Add(s)
	}
	allowed := []string{"createdAt", "name", "id"}
	f.Fuzz(func(t *testing.T, raw string) {
		q, _ := url.ParseQuery(raw)
		what := func(fn string) string { return fn + "(" + strconv.Quote(raw) + ")" }

		p, err := apikit.ParsePage(q, 50, 100)
		if err != nil {
			fuzzFields(t, what("parsePage"), err, "page", "pageSize")
		} else {
			if p.Page < 1 || p.PageSize < 1 || p.PageSize > 100 || p.Offset() < 0 || p.Page-1 > math.MaxInt/p.PageSize {
				t.Fatalf("%s = %+v", what("parsePage"), p)
			}
			if n, err := strconv.Atoi(q.Get("page")); err == nil && n != p.Page {
				t.Fatalf("%s: page %d, want %d", what("parsePage"), p.Page, n)
			}
		}

		lo, err := apikit.ParseLimitOffset(q, 50, 100)
		if err != nil {
			fuzzFields(t, what("parseLimitOffset"), err, "limit", "offset")
		} else if lo.Limit < 1 || lo.Limit > 100 || lo.Offset < 0 {
			t.Fatalf("%s = %+v", what("parseLimitOffset"), lo)
		}

		sp, err := apikit.ParseSort(q, allowed, "createdAt")
		if err != nil {
			fuzzFields(t, what("parseSort"), err, "sortField", "sortDir")
		} else if !slices.Contains(allowed, sp.Field) || sp.Desc != strings.EqualFold(q.Get("sortDir"), "desc") {
			t.Fatalf("%s = %+v", what("parseSort"), sp)
		}

		b, err := apikit.ParseBool(q, "x")
		switch v := strings.ToLower(q.Get("x")); {
		case v == "":
			if b != nil || err != nil {
				t.Fatalf("%s = (%v, %v), want nothing", what("parseBool"), b, err)
			}
		case v == "true" || v == "1" || v == "false" || v == "0":
			if err != nil || b == nil || *b != (v == "true" || v == "1") {
				t.Fatalf("%s = (%v, %v)", what("parseBool"), b, err)
			}
		default:
			fuzzFields(t, what("parseBool"), err, "x")
		}

		format, err := apikit.ParseExportFormat(q)
		if err != nil {
			fuzzFields(t, what("parseExportFormat"), err, "format")
		} else if _, ok := apikit.ExportFormats[format]; format != "" && !ok || format == "" && q.Get("format") != "" {
			t.Fatalf("%s = %q", what("parseExportFormat"), format)
		}

		err = apikit.CheckText(q, "search", "q")
		bad := !store.Storable(q.Get("search")) || !store.Storable(q.Get("q"))
		if bad {
			fuzzFields(t, what("checkText"), err, "search", "q")
		} else if err != nil {
			t.Fatalf("%s: %v", what("checkText"), err)
		}

		r := httptest.NewRequest("GET", "/api/entities/definitions", nil)
		r.URL.RawQuery = raw
		for _, id := range entitiesapi.EntityIDsOf(r) {
			if id == "" || strings.TrimSpace(id) != id {
				t.Fatalf("%s: id %q", what("entityIDsOf"), id)
			}
		}
	})
}

// FuzzGetRoutes sends every GET route of the route table, as a super
// admin (who passes every feature check, so that the handlers meet the
// input), an arbitrary query string, with its path wildcards ({id},
// {itemId}, …) set to an arbitrary segment: no answer is a 5xx, and
// every 4xx carries a JSON error body. A new GET route is covered by
// being in the table.
func FuzzGetRoutes(f *testing.F) {
	for _, s := range [][2]string{
		{"", "x"},
		{"page=2&pageSize=1", "01a21429-6a01-79aa-aa5c-eb58d0801dae"},
		{"page=1e999&pageSize=-1", "%00"},
		{"page=%00&pageSize=%ff&search=%00&q=%00", "\x00"},
		{"id=%00&entityId=%ff%fe&tenantId=%00&roleId=%00&userId=%ff", "\xff\xfe"},
		{"sortField=%00&sortDir=sideways&status=%00&tags=%00&isActive=maybe", "a b"},
		{"width=99999999999999999999&height=-1&fit=%00&download=%ff", "../../etc/passwd"},
		{"q=%00&limit=1e9&offset=-1&cursor=%ff", strings.Repeat("9", 400)},
		{"transactionId=" + strings.Repeat("9", 400) + "&providerKey=%00", "."},
		{"format=csv&all=true&exportScope=full", "%2F"},
		{"identifier=%00&entityType=%ff&eventType=%00&ruleId=%00&setId=%00", "'; DROP TABLE x; --"},
		{"partitionCode=%00&recordId=%ff&withDeleted=true", "%"},
	} {
		f.Add(s[0], s[1])
	}
	envs := fuzzEnvs(f)
	routes := (&api{kit: envs[0].kit.Kit, opts: Options{Auth: envs[0].auth}}).routes()
	f.Fuzz(func(t *testing.T, query, segment string) {
		for _, fe := range envs {
			e := fe.with(t)
			for _, rt := range routes {
				if rt.Method != "GET" || rt.Path == "/ready" { // /ready is 503 until the Kit starts
					continue
				}
				path := "/api" + rt.Path
				for {
					i := strings.IndexByte(path, '{')
					j := strings.IndexByte(path, '}')
					if i < 0 || j < i {
						break
					}
					path = path[:i] + url.PathEscape(segment) + path[j+1:]
				}
				key := e.superKey
				if rt.Access.Public {
					key = ""
				}
				r := e.fuzzGet(path, query, key)
				if r.Status >= 500 {
					t.Fatalf("%s: GET %s?%s (route %s): status %d: %s", fe.engine, path, query, rt.Path, r.Status, r.Body)
				}
				if r.Status >= 400 && r.Status != http.StatusNotFound || r.Status == http.StatusNotFound && len(r.Body) > 0 {
					if r.JSON()["error"] == nil {
						t.Fatalf("%s: GET %s?%s: %d without an error: %s", fe.engine, path, query, r.Status, r.Body)
					}
				}
			}
		}
	})
}
