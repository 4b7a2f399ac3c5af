package payments_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/tenantkit/tenantkit/full"
	"github.com/tenantkit/tenantkit/payments"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// Service-level benchmarks, each beside a baseline measured in the same
// run: the bare store work of the same rows (the HTTP-level comparison is
// httpapi's). The Kit is opened but not started: its job engine keeps
// the webhooks' processing jobs, so the intake figures are the intake
// alone, and ApplyWebhook is called directly.

// benchGoroutines is how many goroutines per core the parallel
// benchmarks run (several callers at once is what group commit is for).
const benchGoroutines = 8

// benchKit opens a Kit (not started) on a fresh database of the engine,
// with per-tenant mock secrets; "postgres" skips without
// TENANTKIT_TEST_POSTGRES_URL.
func benchKit(b *testing.B, engine string) *full.Kit {
	b.Helper()
	url := storetest.SQLiteURL(b)
	opts := &store.Options{Logger: quiet()}
	switch engine {
	case "postgres":
		url = storetest.IsolatedPostgresURL(b)
	case "postgres-pool16":
		// pgx's default pool is 4 connections on this 2-core machine.
		url, opts.MaxReaders = storetest.IsolatedPostgresURL(b), 16
	}
	db, err := store.Open(b.Context(), url, opts)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	kit, err := full.OpenPlain(b.Context(), full.Config{DB: db, Logger: quiet(),
		Payments: payments.Options{Credentials: tenantSecrets}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = kit.Close(context.Background()) })
	return kit
}

// eachBenchEngine runs fn as sub-benchmarks of the engines: sqlite and
// postgres unless others are named.
func eachBenchEngine(b *testing.B, fn func(b *testing.B, kit *full.Kit), engines ...string) {
	if engines == nil {
		engines = []string{"sqlite", "postgres"}
	}
	for _, engine := range engines {
		b.Run(engine, func(b *testing.B) { fn(b, benchKit(b, engine)) })
	}
}

// perSecond reports b.N per second of the run under unit.
func perSecond(b *testing.B, unit string) {
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), unit)
}

// insertTransactionSQL is the bare insert of a payment's row.
const insertTransactionSQL = `INSERT INTO payment_transactions (id, tenant_id, organization_id, payment_id,
	provider_key, session_id, status, gateway_status, amount, captured_amount, refunded_amount, currency_code,
	capture_method, description, metadata, redirect_url, provider_data, created_at, updated_at)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19)`

// BenchmarkCreateSession opens mock payments (captured at once: the row,
// session.created and payment.captured, in the caller's tenant) from
// parallel goroutines, on SQLite. Baselines: the same row inserted in a
// transaction of its own (bare-tx-insert) and group-committed as the
// Service does (bare-batched-insert), without validation, provider call
// or events.
func BenchmarkCreateSession(b *testing.B) {
	kit := benchKit(b, "sqlite")
	tn := newTenant(b)
	req := payments.SessionRequest{ProviderKey: payments.KeyMock, Amount: "19.99", CurrencyCode: "USD",
		Description: "Order 1001", Metadata: map[string]any{"orderId": "1001"}}
	insert := func(ctx context.Context, tx *store.Tx) error {
		now := tx.Now()
		_, err := tx.Exec(ctx, insertTransactionSQL, store.NewID(), tn.id, tn.org, store.NewID(), payments.KeyMock,
			"mock_pi_"+store.NewID(), "captured", "captured", 1999, 1999, 0, "USD", "automatic", "Order 1001",
			`{"orderId":"1001"}`, "", `{"mockPaymentIntentId":"mock_pi_1"}`, now, now)
		return err
	}
	parallel := func(b *testing.B, unit string, op func() error) {
		b.ReportAllocs()
		b.SetParallelism(benchGoroutines)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if err := op(); err != nil {
					b.Error(err)
					return
				}
			}
		})
		perSecond(b, unit)
	}
	b.Run("bare-tx-insert", func(b *testing.B) {
		parallel(b, "rows/s", func() error {
			return kit.DB.Tx(b.Context(), func(tx *store.Tx) error { return insert(b.Context(), tx) })
		})
	})
	b.Run("bare-batched-insert", func(b *testing.B) {
		batch := store.NewBatcher(kit.DB)
		parallel(b, "rows/s", func() error { return batch.Do(insert) })
	})
	b.Run("service-mock", func(b *testing.B) {
		parallel(b, "sessions/s", func() error {
			_, err := kit.Payments.CreateSession(tn.ctx, req)
			return err
		})
	})
}

// benchSessions opens n mock_processing payments (pending) in tn and
// returns their sessions.
func benchSessions(b *testing.B, svc *payments.Service, tn tenant, n int) []string {
	b.Helper()
	out := make([]string, n)
	for i := range out {
		out[i] = session(b, svc, tn, payments.KeyMockProcessing, "10", "").SessionID
	}
	return out
}

// insertWebhookSQL is the bare insert of a webhook's row.
const insertWebhookSQL = `INSERT INTO payment_webhooks (id, tenant_id, transaction_id, provider_key, idempotency_key,
	event_type, event_id, provider_status, amount, mapped_status, received_at)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`

// BenchmarkReceiveWebhook measures the webhook intake from parallel
// goroutines: Service.Receive of a signed mock webhook, each a new event
// for one of 100 payments (read the session, find its payment, verify the
// signature with its tenant's secret, store the webhook and its
// processing job durably). The baseline, bare-verify-insert, checks the
// same HMAC and inserts the same row in a transaction of its own. On
// PostgreSQL it runs with pgx's default pool and with 16 connections.
func BenchmarkReceiveWebhook(b *testing.B) {
	eachBenchEngine(b, func(b *testing.B, kit *full.Kit) {
		tn := newTenant(b)
		sessions := benchSessions(b, kit.Payments, tn, 100)
		var transactions []string
		items, _, err := kit.Payments.List(tn.ctx, payments.Filter{Limit: 100})
		if err != nil {
			b.Fatal(err)
		}
		bySession := map[string]string{}
		for _, t := range items {
			bySession[t.SessionID] = t.ID
		}
		for _, s := range sessions {
			transactions = append(transactions, bySession[s])
		}
		secret := secretOf(tn.id)
		var n atomic.Int64
		next := func() (int, []byte, http.Header) {
			i := int(n.Add(1))
			body := mockEvent(fmt.Sprintf("evt_%d", i), sessions[i%len(sessions)], payments.StatusAuthorized, nil)
			return i % len(sessions), body, signed(body, secret)
		}
		parallel := func(b *testing.B, op func() error) {
			b.ReportAllocs()
			b.SetParallelism(benchGoroutines)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := op(); err != nil {
						b.Error(err)
						return
					}
				}
			})
			perSecond(b, "webhooks/s")
		}
		b.Run("bare-verify-insert", func(b *testing.B) {
			parallel(b, func() error {
				i, body, header := next()
				mac := hmac.New(sha256.New, []byte(secret))
				mac.Write(body)
				got, err := hex.DecodeString(header.Get(payments.MockSignatureHeader))
				if err != nil || !hmac.Equal(got, mac.Sum(nil)) {
					return fmt.Errorf("bad signature")
				}
				return kit.DB.Tx(b.Context(), func(tx *store.Tx) error {
					_, err := tx.Exec(b.Context(), insertWebhookSQL, store.NewID(), tn.id, transactions[i], payments.KeyMockProcessing,
						"evt_"+store.NewID(), "payment.authorized", "evt", "authorized", nil, "authorized", tx.Now())
					return err
				})
			})
		})
		b.Run("service-receive", func(b *testing.B) {
			parallel(b, func() error {
				_, body, header := next()
				duplicate, err := kit.Payments.Receive(b.Context(), payments.KeyMockProcessing, header, body)
				if err == nil && duplicate {
					err = fmt.Errorf("a new event was taken for a duplicate")
				}
				return err
			})
		})
	}, "sqlite", "postgres", "postgres-pool16")
}

// BenchmarkApplyWebhook measures processing a stored webhook, one at a
// time as a job worker does (the Kit runs 4 at once): applied, each an
// "authorized" that moves a pending payment (lock it, decide, update it,
// emit payment.authorized, finish the history entry), and ignored, each a
// late "authorized" on a captured payment (lock, decide, finish the
// entry). The baseline, bare-read-update, is the same transaction's bare
// statements: read the webhook, lock and update the payment, update the
// webhook.
func BenchmarkApplyWebhook(b *testing.B) {
	eachBenchEngine(b, func(b *testing.B, kit *full.Kit) {
		svc := kit.Payments
		tn := newTenant(b)
		// stored receives n webhooks, one per payment of kind, and returns
		// their ids.
		stored := func(b *testing.B, n int, status payments.Status, capture bool) []string {
			b.Helper()
			ids := make([]string, 0, n)
			for range n {
				provider, method := payments.KeyMockProcessing, ""
				if capture {
					provider, method = payments.KeyMock, payments.CaptureAutomatic
				}
				s := session(b, svc, tn, provider, "10", method)
				body := mockEvent("evt_"+store.NewID(), s.SessionID, status, nil)
				if _, err := svc.Receive(b.Context(), provider, signed(body, secretOf(tn.id)), body); err != nil {
					b.Fatal(err)
				}
				d, err := svc.GetDetail(tn.ctx, s.TransactionID)
				if err != nil {
					b.Fatal(err)
				}
				ids = append(ids, d.Webhooks[0].ID)
			}
			return ids
		}
		apply := func(b *testing.B, status payments.Status, capture bool) {
			ids := stored(b, b.N, status, capture)
			b.ReportAllocs()
			b.ResetTimer()
			for _, id := range ids {
				if err := svc.ApplyWebhook(b.Context(), tn.id, id); err != nil {
					b.Fatal(err)
				}
			}
			perSecond(b, "webhooks/s")
		}
		b.Run("bare-read-update", func(b *testing.B) {
			ids := stored(b, b.N, payments.StatusAuthorized, false)
			ctx := b.Context()
			b.ReportAllocs()
			b.ResetTimer()
			for _, id := range ids {
				err := kit.DB.Tx(ctx, func(tx *store.Tx) error {
					var transaction, mapped string
					if err := tx.QueryRow(ctx, `SELECT transaction_id, mapped_status FROM payment_webhooks
						WHERE tenant_id = $1 AND id = $2`, tn.id, id).Scan(&transaction, &mapped); err != nil {
						return err
					}
					lock := ""
					if tx.Dialect().Name() == "postgres" {
						lock = " FOR UPDATE"
					}
					var status string
					if err := tx.QueryRow(ctx, `SELECT status FROM payment_transactions WHERE tenant_id = $1 AND id = $2`+lock,
						tn.id, transaction).Scan(&status); err != nil {
						return err
					}
					if _, err := tx.Exec(ctx, `UPDATE payment_transactions SET status = $3, updated_at = $4
						WHERE tenant_id = $1 AND id = $2`, tn.id, transaction, mapped, tx.Now()); err != nil {
						return err
					}
					_, err := tx.Exec(ctx, `UPDATE payment_webhooks SET outcome = 'applied', status_before = $3,
						status_after = $4, processed_at = $5 WHERE tenant_id = $1 AND id = $2`, tn.id, id, status, mapped, tx.Now())
					return err
				})
				if err != nil {
					b.Fatal(err)
				}
			}
			perSecond(b, "webhooks/s")
		})
		b.Run("applied", func(b *testing.B) { apply(b, payments.StatusAuthorized, false) })
		b.Run("ignored", func(b *testing.B) { apply(b, payments.StatusAuthorized, true) })
	})
}
