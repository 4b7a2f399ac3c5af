package metrics_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/tenantkit/tenantkit/full"
	"github.com/tenantkit/tenantkit/metrics"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
	"github.com/tenantkit/tenantkit/webhooks"
)

// TestWebhookSeries: delivery attempts are counted by outcome (a test
// send to a target answering 204, then to one answering 500) with their
// lag.
func TestWebhookSeries(t *testing.T) {
	t.Parallel()
	var status atomic.Int32
	status.Store(http.StatusNoContent)
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(int(status.Load())) }))
	defer target.Close()
	kit, err := full.OpenPlain(t.Context(), full.Config{DB: storetest.SQLite(t),
		Webhooks: webhooks.Options{AllowPrivateURLs: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer kit.Close(t.Context())
	m := metrics.New(kit.DB)
	m.WatchWebhooks(kit.Webhooks)
	ctx := store.WithScope(t.Context(), store.Scope{TenantID: store.NewID()})
	wh, _, err := kit.Webhooks.Create(ctx, webhooks.Input{Name: "metrics", URL: target.URL, SubscribedEvents: []string{"*"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kit.Webhooks.Test(ctx, wh.ID); err != nil {
		t.Fatal(err)
	}
	status.Store(http.StatusInternalServerError)
	if _, err := kit.Webhooks.Test(ctx, wh.ID); err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	for _, want := range []string{
		`tenantkit_webhook_deliveries_total{outcome="delivered"} 1`,
		`tenantkit_webhook_deliveries_total{outcome="failed"} 1`, // a test send is not retried
		`tenantkit_webhook_delivery_lag_seconds_count{outcome="delivered"} 1`,
	} {
		if !strings.Contains(rec.Body.String(), want) {
			t.Errorf("the scrape lacks %q", want)
		}
	}
}
