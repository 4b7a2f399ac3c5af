package httpapi

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/tenantkit/tenantkit/httpapi/webhooksapi"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// getCapped is GET path with key, the lists' search cap lowered to n
// (storetest.WithSearchCap), expecting 200.
func (e *testEnv) getCapped(path, key string, n int) map[string]any {
	e.t.Helper()
	return e.send("GET", path, nil, func(req *http.Request) {
		req.Header.Set("X-Api-Key", key)
		*req = *req.WithContext(storetest.WithSearchCap(req.Context(), n))
	}).expect(200).JSON()
}

// checkCapped fails unless obj's total is want and totalCapped is true
// when capped, absent otherwise.
func checkCapped(t *testing.T, what string, obj map[string]any, want int, capped bool) {
	t.Helper()
	if obj["total"] != float64(want) {
		t.Errorf("%s: total %v, want %d", what, obj["total"], want)
	}
	v, ok := obj["totalCapped"]
	if capped && v != true || !capped && ok {
		t.Errorf("%s: totalCapped %v (present %v), want capped %v", what, v, ok, capped)
	}
}

// A list with a search reports at most the search cap as its total and
// says so with totalCapped beside the total; the field is absent when
// the total is exact (below the cap, or without a search). The cap is
// lowered to 3 for the test; five of six rows match.
func TestSearchTotalCapped(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newTestEnv(t, db)
		tf := e.newTenant("Cap " + randomHex(3))
		key := e.newKey(tf, append([]string{webhooksapi.FeatureWebhooksView, webhooksapi.FeatureWebhooksManage}, allRuleFeatures...)...)
		for i := range 5 {
			e.createRule(key, ruleBody(fmt.Sprint("ALPHA_", i)))
			e.createSet(key, "ALPHA_SET_"+string(rune('A'+i)), fmt.Sprint("Alpha ", i))
			e.do("POST", webhooksBase, key, map[string]any{"name": fmt.Sprint("Alpha ", i), "url": "https://hooks.example.com/a",
				"subscribedEvents": []string{"entities.*"}}).expect(201)
		}
		e.createRule(key, ruleBody("OTHER"))
		e.createSet(key, "OTHER", "Other")
		e.do("POST", webhooksBase, key, map[string]any{"name": "Other", "url": "https://hooks.example.com/o",
			"subscribedEvents": []string{"entities.*"}}).expect(201)

		pagination := func(body map[string]any) map[string]any { return body["pagination"].(map[string]any) }
		for _, c := range []struct {
			what   string
			path   string
			body   func(map[string]any) map[string]any
			cap    int
			total  int
			capped bool
		}{
			{"rules, capped", rulesBase + "?search=alpha", pagination, 3, 3, true},
			{"rules, exact at the cap", rulesBase + "?search=alpha", pagination, 5, 5, false},
			{"rules, no search", rulesBase, pagination, 3, 6, false},
			{"sets, capped", setsBase + "?search=alpha", pagination, 3, 3, true},
			{"sets, exact", setsBase + "?search=alpha", pagination, 9, 5, false},
			{"sets, no search", setsBase, pagination, 3, 6, false},
			{"webhooks, capped", webhooksBase + "?search=alpha", nil, 3, 3, true},
			{"webhooks, exact", webhooksBase + "?search=alpha", nil, 5, 5, false},
			{"webhooks, no search", webhooksBase, nil, 3, 6, false},
		} {
			body := e.getCapped(c.path, key, c.cap)
			if c.body != nil {
				body = c.body(body)
			}
			checkCapped(t, c.what, body, c.total, c.capped)
		}
		// The rules list's pages follow the capped total.
		if p := pagination(e.getCapped(rulesBase+"?search=alpha&pageSize=2", key, 3)); p["totalPages"] != 2.0 {
			t.Errorf("rules, capped: totalPages %v, want 2", p["totalPages"])
		}
	})
}

// The records list caps a search's total as the other lists do.
func TestRecordSearchTotalCapped(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		f := recSetup(t, db)
		f.define(recField{Key: "name", Kind: "text"})
		for i := range 5 {
			f.create(map[string]any{"name": fmt.Sprint("Alpha ", i)})
		}
		f.create(map[string]any{"name": "Other"})
		path := recRecords + "?entityId=" + f.eid
		checkCapped(t, "capped", f.e.getCapped(path+"&search=alpha", f.key, 3), 3, true)
		checkCapped(t, "exact", f.e.getCapped(path+"&search=alpha", f.key, 5), 5, false)
		checkCapped(t, "no search", f.e.getCapped(path, f.key, 3), 6, false)
	})
}
