package metrics_test

import (
	"encoding/json"
	"net/http/httptest"
	"regexp"
	"strconv"
	"testing"

	"github.com/tenantkit/tenantkit/metrics"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
	"github.com/tenantkit/tenantkit/toggles"
)

// TestTogglesSeries: the gauge shows the version the process resolves
// from, and moves when a toggle changes and is resolved again.
func TestTogglesSeries(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		svc := must(toggles.New(db, toggles.Options{}))
		m := metrics.New(db)
		m.WatchToggles(svc)
		ctx := store.WithScope(t.Context(), store.Scope{TenantID: store.NewID()})
		version := func() int64 {
			rec := httptest.NewRecorder()
			m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
			match := regexp.MustCompile(`(?m)^tenantkit_toggles_cache_version (\d+)$`).FindStringSubmatch(rec.Body.String())
			if match == nil {
				t.Fatalf("no tenantkit_toggles_cache_version in the scrape")
			}
			n, _ := strconv.ParseInt(match[1], 10, 64)
			return n
		}
		id := "metrics_" + store.NewID()[:8]
		if _, err := svc.Create(ctx, toggles.CreateInput{Identifier: id, Name: "m", Type: toggles.Boolean,
			DefaultValue: json.RawMessage("true")}); err != nil {
			t.Fatal(err)
		}
		if _, err := svc.Bool(ctx, id); err != nil {
			t.Fatal(err)
		}
		first := version()
		if first <= 0 {
			t.Fatalf("version %d after a resolution, want > 0", first)
		}
		if _, err := svc.Create(ctx, toggles.CreateInput{Identifier: id + "b", Name: "m", Type: toggles.Boolean,
			DefaultValue: json.RawMessage("false")}); err != nil {
			t.Fatal(err)
		}
		if _, err := svc.Bool(ctx, id+"b"); err != nil {
			t.Fatal(err)
		}
		if second := version(); second <= first {
			t.Errorf("version %d after a change, want more than %d", second, first)
		}
	}, toggles.Migrations)
}
