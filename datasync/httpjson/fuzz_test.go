package httpjson

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/tenantkit/tenantkit/datasync"
)

// Fuzz targets of the decoders of what a source answers. The seeds run
// as ordinary tests.

// FuzzImportPage feeds arbitrary bytes as an import page: decodePage
// never panics, and a page it accepts has valid items (a non-empty,
// bounded, NUL-free UTF-8 externalId and an object of data each), at
// most limit of them, a bounded nextCursor other than the request's, a
// non-negative totalEstimate; and it reads the same once encoded again.
func FuzzImportPage(f *testing.F) {
	for _, seed := range []string{
		`{"items":[{"externalId":"a","data":{"name":"A","n":1}},{"externalId":"b","data":{}}],"nextCursor":"c1","totalEstimate":5}`,
		`{"items":[],"nextCursor":null}`,
		`{"items":[{"externalId":"é\u00e9","data":{"x":[1,{"y":null}]}}],"nextCursor":""}`,
		`{"items":[{"externalId":"a\u0000","data":{}}]}`,
		`{"items":[{"externalId":"\ud800","data":{}}]}`,
		`{"items":[{"externalId":5,"data":{}}]}`,
		`{"items":[{"externalId":"a","data":null}]}`,
		`{"items":[{"externalId":"a","data":{}},{"externalId":"a","data":{}}]}`,
		`{"items":null}`,
		`{"ITEMS":[],"NextCursor":"x"}`,
		`{"items":[],"totalEstimate":1e3}`,
		`{"items":[],"totalEstimate":-1}`,
		`{"items":[],"totalEstimate":9223372036854775807}`,
		`{"items":[],"totalEstimate":9223372036854775808}`,
		`{"items":[],"nextCursor":"cur"}`,
		`{"items":[]} trailing`,
		`[{"externalId":"a","data":{}}]`,
		"\xff\xfe{}",
		``,
		`null`,
	} {
		f.Add([]byte(seed), "cur", uint8(2))
	}
	f.Fuzz(func(t *testing.T, body []byte, cursor string, limit uint8) {
		n := int(limit) + 1
		page, err := decodePage(body, cursor, n)
		if err != nil {
			if page != nil {
				t.Fatal("a page with an error")
			}
			if err.Error() == "" {
				t.Fatal("an empty error")
			}
			return
		}
		checkPage(t, page, cursor, n)

		// Encoded again, the page reads the same.
		again, err := json.Marshal(map[string]any{"items": page.Items, "nextCursor": page.NextCursor, "totalEstimate": page.TotalEstimate})
		if err != nil {
			t.Fatalf("encoding an accepted page: %v", err)
		}
		page2, err := decodePage(again, cursor, n)
		if err != nil {
			t.Fatalf("an accepted page, encoded again, is refused: %v", err)
		}
		if len(page2.Items) != len(page.Items) || page2.NextCursor != page.NextCursor ||
			(page2.TotalEstimate == nil) != (page.TotalEstimate == nil) ||
			(page.TotalEstimate != nil && *page2.TotalEstimate != *page.TotalEstimate) {
			t.Fatalf("the page read again differs: %+v, %+v", page, page2)
		}
		for i := range page.Items {
			if page2.Items[i].ExternalID != page.Items[i].ExternalID {
				t.Fatalf("items[%d] read again has externalId %q, not %q", i, page2.Items[i].ExternalID, page.Items[i].ExternalID)
			}
		}
	})
}

func checkPage(t *testing.T, page *datasync.ImportBatch, cursor string, limit int) {
	t.Helper()
	if page == nil {
		t.Fatal("no page and no error")
	}
	if len(page.Items) > limit {
		t.Fatalf("%d items, more than the limit %d", len(page.Items), limit)
	}
	for i, it := range page.Items {
		id := it.ExternalID
		if id == "" || len(id) > MaxExternalIDBytes || !utf8.ValidString(id) || strings.IndexByte(id, 0) >= 0 {
			t.Fatalf("items[%d] has an invalid externalId %q", i, id)
		}
		if it.Data == nil {
			t.Fatalf("items[%d] has no data", i)
		}
	}
	if len(page.NextCursor) > MaxCursorBytes || (page.NextCursor != "" && page.NextCursor == cursor) {
		t.Fatalf("invalid nextCursor %q after %q", page.NextCursor, cursor)
	}
	if page.TotalEstimate != nil && *page.TotalEstimate < 0 {
		t.Fatalf("negative totalEstimate %d", *page.TotalEstimate)
	}
}

// FuzzExportResults feeds arbitrary bytes as an export response:
// decodeResults never panics, and accepted results are one per item, in
// their order, with a known status, an error for every result without
// one from the target, valid external ids, and no token.
func FuzzExportResults(f *testing.F) {
	for _, seed := range []string{
		`{"results":[{"localId":"1","externalId":"e1","status":"success"},{"localId":"2","status":"error","error":"bad"}]}`,
		`{"results":[{"localId":"2","status":"skipped"},{"localId":"x","status":"success"},{"localId":"1","status":"done"}]}`,
		`{"results":[{"localId":"1","externalId":"a\u0000","status":"success"}]}`,
		`{"results":[{"localId":"1","status":"error","error":"token tok-SECRET\nleaked"}]}`,
		`{"results":[{"localId":"1","status":"success"},{"localId":"1","status":"error"}]}`,
		`{"results":[{"localId":1}]}`,
		`{"results":[{"localId":"1","externalId":null,"error":null,"status":"success"}]}`,
		`{"results":null}`,
		`{"results":[]}`,
		`[]`,
		``,
	} {
		f.Add([]byte(seed), "1", "2")
	}
	const token = "tok-SECRET"
	f.Fuzz(func(t *testing.T, body []byte, id1, id2 string) {
		items := []datasync.ExportItem{{LocalID: id1}, {LocalID: id2}}
		results, err := decodeResults(body, items, token)
		if err != nil {
			if results != nil {
				t.Fatal("results with an error")
			}
			return
		}
		if len(results) != len(items) {
			t.Fatalf("%d results for %d items", len(results), len(items))
		}
		for i, res := range results {
			if res.LocalID != items[i].LocalID {
				t.Fatalf("results[%d] is of %q, not %q", i, res.LocalID, items[i].LocalID)
			}
			switch res.Status {
			case statusSuccess, statusSkipped:
			case statusFailed:
			default:
				t.Fatalf("results[%d] has status %q", i, res.Status)
			}
			if res.ExternalID != "" && externalIDProblem(res.ExternalID) != "" {
				t.Fatalf("results[%d] has an invalid externalId %q", i, res.ExternalID)
			}
			if strings.Contains(res.Error, token) || len(res.Error) > maxErrorBytes || !utf8.ValidString(res.Error) {
				t.Fatalf("results[%d] has error %q", i, res.Error)
			}
		}
	})
}
