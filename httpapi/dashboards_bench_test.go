package httpapi

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/tenantkit/tenantkit/httpapi/dashboardsapi"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// BenchmarkDashboardLayout measures GET /api/dashboards/layout of a saved
// layout (authentication, visibility from the role records, one layout
// read) beside a bare net/http handler writing the same answer, and PUT
// with If-Match (validation and the compare-and-set write), in parallel
// like the HTTP harness's 32 connections.
func BenchmarkDashboardLayout(b *testing.B) {
	e := newTestEnv(b, storetest.SQLite(b))
	acme := e.newTenant("Acme")
	key := e.newKey(acme, dashboardsapi.FeatureWidgetsView, dashboardsapi.FeatureWidgetsManage, "webhooks.view", "attachments.view", "payment_gateways.view", "business_rules.rules.view")
	answer := e.do("GET", "/api/dashboards/layout", key, nil).expect(200).Body
	get := func(b *testing.B, h http.Handler) {
		b.ReportAllocs()
		b.SetParallelism(16)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				req := httptest.NewRequest("GET", "/api/dashboards/layout", nil)
				req.Header.Set("X-Api-Key", key)
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				if rec.Code != 200 {
					b.Errorf("status %d: %s", rec.Code, rec.Body)
					return
				}
			}
		})
	}
	b.Run("bare-net-http", func(b *testing.B) {
		get(b, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json; charset=utf-8")
			_, _ = w.Write(answer)
		}))
	})
	b.Run("httpapi-get-layout", func(b *testing.B) { get(b, e.handler) })
	b.Run("httpapi-put-layout-if-match", func(b *testing.B) {
		b.ReportAllocs()
		body := []byte(`{"widgets":[{"id":"0b0e7a52-5c4e-4a8e-9d1e-3f1a2b3c4d5e","definitionId":"payment_gateways.summary","grid":{"x":0,"y":0,"w":12,"h":3},"config":{}}]}`)
		for b.Loop() {
			r := e.do("GET", "/api/dashboards/layout", key, nil)
			e.send("PUT", "/api/dashboards/layout", body, func(req *http.Request) {
				req.Header.Set("X-Api-Key", key)
				req.Header.Set("If-Match", r.Header.Get("ETag"))
			}).expect(200)
		}
	})
}
