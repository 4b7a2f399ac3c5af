package httpapi

import (
	"net/url"
	"testing"

	"github.com/matryer/is"

	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// The toggle lists refuse text filters neither engine can compare (NUL,
// invalid UTF-8) with a 400 naming the parameter, as the record lists do:
// on SQLite, LIKE stops at a NUL, so search=%00 used to list every toggle.
func TestToggleListsRefuseUnstorableText(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		e := newTestEnv(t, db)
		p := togglePrefix()
		e.createToggle(map[string]any{"identifier": p + ".a", "name": "A", "category": p, "type": "boolean", "defaultValue": true})
		e.createToggle(map[string]any{"identifier": p + ".b", "name": "B", "category": p, "type": "string", "defaultValue": "x"})
		tf := e.newTenant("Toggles NUL " + randomHex(3))

		lists := []struct {
			name   string
			get    func(query string) *response
			fields []string
		}{
			{"global", func(query string) *response {
				return e.do("GET", togglesBase+"/global?"+query, e.superKey, nil)
			}, []string{"search", "identifier", "name", "category"}},
			{"overrides", func(query string) *response {
				return e.superIn(tf.ID, "GET", togglesBase+"/overrides?"+query, nil)
			}, []string{"identifier", "name", "category"}},
		}
		for _, l := range lists {
			for _, field := range l.fields {
				for _, bad := range []string{"%00", "a%00", p + "%00zzz", "%ff"} {
					r := l.get(field + "=" + bad)
					body := expectInvalid(t, r, field)
					is.Equal(body["details"], map[string]any{field: "must be valid text"})
					// Beside good parameters, the bad one is still refused.
					expectInvalid(t, l.get("page=1&pageSize=10&sortDir=desc&"+field+"="+bad), field)
				}
			}
			// Several bad filters are named together.
			r := l.get("identifier=%00&name=%00")
			body := expectInvalid(t, r, "identifier")
			is.Equal(len(body["details"].(map[string]any)), 2)
			// Good filters still list.
			r = l.get("identifier=" + url.QueryEscape(p) + "&pageSize=100")
			r.expect(200)
			is.Equal(r.JSON()["total"], 2.0)
		}
	})
}
