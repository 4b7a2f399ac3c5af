package httpapi

import (
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/tenantkit/tenantkit/httpapi/dashboardsapi"
)

// fuzzETag is the form of a layout's ETag.
var fuzzETag = regexp.MustCompile(`^"[0-9]+"$`)

// fuzzIfMatches is whether an If-Match header names etag: one of its
// comma-separated tags (weak or strong) is etag or "*".
func fuzzIfMatches(header, etag string) bool {
	for tag := range strings.SplitSeq(header, ",") {
		tag = strings.TrimPrefix(strings.TrimSpace(tag), "W/")
		if tag == etag || tag == "*" {
			return true
		}
	}
	return false
}

// FuzzLayoutIfMatch replaces the caller's dashboard layout (PUT
// /api/dashboards/layout) and removes one of its widgets (DELETE
// /api/dashboards/layout/{itemId}) with arbitrary If-Match headers,
// bodies and item ids, in which $ETAG stands for the layout's current
// ETag, $WIDGETS for its current widgets (a JSON array) and $ITEM for the
// id of its first widget. No answer is a 5xx. A write succeeds only when
// If-Match is absent or names the current ETag (or *), and then gives a
// new ETag; a 412 comes only from an If-Match that does not, and
// changes nothing; a removal succeeds only for a widget of the layout
// (ids compare regardless of case).
func FuzzLayoutIfMatch(f *testing.F) {
	for _, s := range [][3]string{
		{"", `{"widgets":$WIDGETS}`, "$ITEM"},
		{"$ETAG", `{"widgets":$WIDGETS}`, "$ITEM"},
		{"W/$ETAG", `{"widgets":[]}`, "$ITEM"},
		{`"0"`, `{"widgets":$WIDGETS}`, "$ITEM"},
		{"*", `{"widgets":$WIDGETS}`, "nope"},
		{`"9", $ETAG`, `{"widgets":$WIDGETS}`, "$ITEM"},
		{` $ETAG `, `{"widgets":$WIDGETS}`, "$ITEM"},
		{"$ETAG$ETAG", `{"widgets":$WIDGETS}`, "$ITEM"},
		{`"9", *`, `{"widgets":[{"id":"x"}]}`, "$ITEM"},
		{"$ETAG", `{"widgets":null}`, ""},
		{"$ETAG", `{"widgets":[{"id":"$ITEM","definitionId":"nope","grid":{"x":0,"y":0,"w":1,"h":1}}]}`, "%00"},
		{"$ETAG", `{"widgets":[$WIDGETS]}`, "$ITEM/.."},
		{"\x00", "\xff", "\xff"},
		{",,,", `{"widgets":"x"}`, strings.Repeat("a", 300)},
		{"W/", `{"widgets":{}}`, "$ITEM"},
	} {
		f.Add(s[0], s[1], s[2])
	}
	type fixture struct {
		fuzzEnv
		key     string
		initial json.RawMessage
	}
	var fxs []fixture
	for _, fe := range fuzzEnvs(f) {
		tf := fe.newTenant("Fuzz Dashboards")
		key := fe.newKey(tf, dashboardsapi.FeatureWidgetsView, dashboardsapi.FeatureWidgetsManage, "*")
		var body struct{ Widgets json.RawMessage }
		if err := json.Unmarshal(fe.do("GET", dashBase+"/layout", key, nil).expect(200).Body, &body); err != nil {
			f.Fatal(err)
		}
		fxs = append(fxs, fixture{fe, key, body.Widgets})
	}
	f.Fuzz(func(t *testing.T, ifMatch, body, itemID string) {
		for _, fx := range fxs {
			e := fx.with(t)
			get := func() (string, json.RawMessage, []map[string]any) {
				r := e.do("GET", dashBase+"/layout", fx.key, nil).expect(200)
				var b struct{ Widgets json.RawMessage }
				var ws []map[string]any
				if err := json.Unmarshal(r.Body, &b); err != nil || json.Unmarshal(b.Widgets, &ws) != nil {
					t.Fatalf("%s: layout %s", fx.engine, r.Body)
				}
				return r.Header.Get("ETag"), b.Widgets, ws
			}
			etag, raw, widgets := get()
			if len(widgets) < 2 { // keep widgets to remove
				e.do("PUT", dashBase+"/layout", fx.key, `{"widgets":`+string(fx.initial)+`}`).expect(200)
				etag, raw, widgets = get()
			}
			item := "01a21429-0000-7000-8000-000000000000"
			if len(widgets) > 0 {
				item, _ = widgets[0]["id"].(string)
			}
			expand := func(s string) string {
				return strings.NewReplacer("$ETAG", etag, "$WIDGETS", string(raw), "$ITEM", item).Replace(s)
			}

			im := expand(ifMatch)
			r := e.send("PUT", dashBase+"/layout", expand(body), func(r *http.Request) {
				r.Header.Set("Content-Type", "application/json")
				r.Header.Set("X-Api-Key", fx.key)
				r.Header["If-Match"] = []string{im}
			})
			where := fx.engine + ": PUT layout with If-Match " + fzQuote(im) + " (ETag " + etag + ") and body " + fzQuote(expand(body))
			switch r.Status {
			case http.StatusOK:
				if im != "" && !fuzzIfMatches(im, etag) {
					t.Fatalf("%s: written", where)
				}
				if got := r.Header.Get("ETag"); !fuzzETag.MatchString(got) || got == etag {
					t.Fatalf("%s: new ETag %q", where, got)
				}
			case http.StatusPreconditionFailed:
				if im == "" || fuzzIfMatches(im, etag) {
					t.Fatalf("%s: 412: %s", where, r.Body)
				}
				if now, _, _ := get(); now != etag {
					t.Fatalf("%s: a 412 changed the layout (ETag %s)", where, now)
				}
			case http.StatusBadRequest:
			default:
				t.Fatalf("%s: status %d: %s", where, r.Status, r.Body)
			}
			if r.Status != http.StatusOK && r.JSON()["error"] == nil {
				t.Fatalf("%s: %d without an error: %s", where, r.Status, r.Body)
			}

			etag, _, widgets = get()
			im, id := expand(ifMatch), expand(itemID)
			r = e.send("DELETE", dashBase+"/layout/"+url.PathEscape(id), nil, func(r *http.Request) {
				r.Header.Set("X-Api-Key", fx.key)
				r.Header["If-Match"] = []string{im}
			})
			where = fx.engine + ": DELETE layout item " + fzQuote(id) + " with If-Match " + fzQuote(im) + " (ETag " + etag + ")"
			held := false
			for _, w := range widgets {
				held = held || strings.EqualFold(w["id"].(string), id)
			}
			switch r.Status {
			case http.StatusOK:
				if im != "" && !fuzzIfMatches(im, etag) || !held {
					t.Fatalf("%s: removed (held: %v)", where, held)
				}
			case http.StatusPreconditionFailed:
				if im == "" || fuzzIfMatches(im, etag) {
					t.Fatalf("%s: 412: %s", where, r.Body)
				}
			case http.StatusNotFound:
				if held && (im == "" || fuzzIfMatches(im, etag)) {
					t.Fatalf("%s: 404 for a widget of the layout: %s", where, r.Body)
				}
			case http.StatusBadRequest, http.StatusMovedPermanently, http.StatusTemporaryRedirect:
			default:
				t.Fatalf("%s: status %d: %s", where, r.Status, r.Body)
			}
		}
	})
}
