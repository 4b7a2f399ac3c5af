package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/tenantkit/tenantkit/full"
	"github.com/tenantkit/tenantkit/payments"
	"github.com/tenantkit/tenantkit/ratelimit"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// The payment benchmarks run in-process (httptest), in parallel, each
// beside a bare net/http handler doing the request's byte work (read the
// body, decode its JSON, write an answer of the same size): the
// difference is what routing, authentication, validation, the provider
// call (the mock's is nothing) and the durable write cost.

// benchPostJSON posts bodies (one per call of next) to h and expects want.
// Like the HTTP harness's 32 connections, 16 goroutines per core send.
func benchPostJSON(b *testing.B, h http.Handler, path string, want int, header func(*http.Request, []byte), next func() []byte) {
	b.ReportAllocs()
	b.SetParallelism(16)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			body := next()
			req := httptest.NewRequest("POST", path, bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			header(req, body)
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != want {
				b.Errorf("status %d: %s", rec.Code, rec.Body)
				return
			}
		}
	})
}

// bareJSON is the baseline: it reads and decodes the body and answers
// answer with status.
func bareJSON(status int, answer []byte) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var v map[string]any
		if json.Unmarshal(body, &v) != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.WriteHeader(status)
		_, _ = w.Write(answer)
	})
}

// BenchmarkPaymentSession compares POST /payment_gateways/sessions (the
// mock provider, automatic capture: one transaction row and its two
// events) with a bare net/http handler and with POST /entities/records
// (one record row, its value counts and its event: the same kind of
// durable write) in the same run, on each engine (PostgreSQL when
// TENANTKIT_TEST_POSTGRES_URL is set), with the CPU time per request and on
// PostgreSQL the statements and the server's CPU time (pgCost.measure).
// Rate limiting is off, as in the HTTP comparison harness.
func BenchmarkPaymentSession(b *testing.B) {
	engines := []struct {
		name string
		open func(b *testing.B) (*store.DB, *pgCost)
	}{
		{"sqlite", func(b *testing.B) (*store.DB, *pgCost) { return storetest.SQLite(b), nil }},
		{"postgres", countedPostgres},
	}
	for _, eng := range engines {
		b.Run(eng.name, func(b *testing.B) {
			db, cost := eng.open(b)
			e := newTestEnv(b, db)
			e.handler = mustNew(e.kit, Options{Auth: e.auth, RateLimit: ratelimit.NewPolicy(ratelimit.Config{}, nil, nil)})
			acme := e.newTenant("Acme")
			key := e.newKey(acme, "payment_gateways.manage", "entities.definitions.manage", "entities.records.manage")
			body := []byte(`{"providerKey":"mock","amount":19.99,"currencyCode":"USD","description":"Order 1001","metadata":{"orderId":"1001"}}`)
			answer := e.do("POST", "/api/payment_gateways/sessions", key, json.RawMessage(body)).expect(201).Body
			same := func() []byte { return body }
			withKey := func(req *http.Request, _ []byte) { req.Header.Set("X-Api-Key", key) }
			recordBody, _ := benchRecordEntity(e, key)

			b.Run("bare-net-http", func(b *testing.B) {
				benchPostJSON(b, bareJSON(201, answer), "/api/payment_gateways/sessions", 201, withKey, same)
			})
			b.Run("httpapi-session-mock", func(b *testing.B) {
				cost.measure(b, func() {
					benchPostJSON(b, e.handler, "/api/payment_gateways/sessions", 201, withKey, same)
				})
			})
			b.Run("httpapi-records-create", func(b *testing.B) {
				benchPostCost(b, cost, e.handler, "/api/entities/records", key, recordBody)
			})
		})
	}
}

// benchRecordEntity defines BenchmarkCreateRecordHTTP's entity (five
// fields, two of them filterable) for key's tenant and returns the body
// of a create and the answer to it.
func benchRecordEntity(e *testEnv, key string) (body, answer []byte) {
	e.do("POST", "/api/entities/entities", key, map[string]any{"entityId": "bench.items", "label": "Bench items"}).expect(200)
	e.do("POST", "/api/entities/definitions.batch", key, json.RawMessage(`{"entityId":"bench.items","definitions":[
		{"key":"title","kind":"text","configJson":{"label":"Title","listVisible":true}},
		{"key":"status","kind":"select","configJson":{"label":"Status","options":["open","closed","pending"],"filterable":true,"listVisible":true}},
		{"key":"total","kind":"float","configJson":{"label":"Total","filterable":true,"listVisible":true}},
		{"key":"qty","kind":"integer","configJson":{"label":"Quantity","listVisible":true}},
		{"key":"note","kind":"text","configJson":{"label":"Note"}}]}`)).expect(200)
	body = []byte(`{"entityId":"bench.items","values":{"title":"Bench item","status":"open","total":1234.56,"qty":3,"note":"created by the records-create scenario"}}`)
	return body, e.do("POST", "/api/entities/records", key, json.RawMessage(body)).expect(200).Body
}

// BenchmarkPaymentWebhook measures the webhook intake: verify the
// signature, find the payment, store the webhook and its job durably,
// answer 202. Each request is a new event (a new idempotency key) for one
// of 100 payments. Jobs are not run (the Kit is not started), so the
// figure is the intake alone.
func BenchmarkPaymentWebhook(b *testing.B) {
	const secret = "whsec_bench"
	creds := payments.CredentialFunc(func(context.Context, string, string) (payments.Credentials, error) {
		return payments.Credentials{"webhookSecret": secret}, nil
	})
	e := newTestEnvConfig(b, storetest.SQLite(b), full.Config{Payments: payments.Options{Credentials: creds}})
	acme := e.newTenant("Acme")
	key := e.newKey(acme, "payment_gateways.manage")
	var sessions []string
	for range 100 {
		s := e.do("POST", "/api/payment_gateways/sessions", key, map[string]any{"providerKey": "mock_processing", "amount": 10,
			"currencyCode": "USD"}).expect(201).JSON()
		sessions = append(sessions, s["sessionId"].(string))
	}
	var n atomic.Int64
	next := func() []byte {
		i := n.Add(1)
		return fmt.Appendf(nil, `{"id":"evt_%d","type":"payment.authorized","data":{"id":%q,"status":"authorized"}}`, i, sessions[i%100])
	}
	sign := func(req *http.Request, body []byte) {
		req.Header.Set(payments.MockSignatureHeader, payments.MockSignature(body, secret))
	}
	answer := []byte(`{"received":true,"queued":true}`)

	b.Run("bare-net-http", func(b *testing.B) {
		benchPostJSON(b, bareJSON(202, answer), "/api/payment_gateways/webhook/mock_processing", 202, sign, next)
	})
	// The route's limit (60 a minute per client) is off here: the figure
	// is the intake's.
	unlimited := mustNew(e.kit, Options{Auth: e.auth, RateLimit: ratelimit.NewPolicy(ratelimit.Config{}, nil, nil)})
	b.Run("httpapi-webhook-mock", func(b *testing.B) {
		benchPostJSON(b, unlimited, "/api/payment_gateways/webhook/mock_processing", 202, sign, next)
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "webhooks/s")
	})
}
