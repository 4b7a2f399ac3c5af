package webhooks_test

import (
	"strconv"
	"testing"

	"github.com/tenantkit/tenantkit/jobs"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
	"github.com/tenantkit/tenantkit/webhooks"
)

// BenchmarkEmit measures what the webhooks emit hook adds to a host's
// transaction: one transaction emitting 10 events, in a tenant with no
// webhooks (the hook's one lookup) and with 10 subscribed webhooks (100
// deliveries written), against the same transaction without the webhooks
// area (baseline). No drain runs: only the emitting side is measured.
//
//	go test ./webhooks -run '^$' -bench Emit -benchmem
func BenchmarkEmit(b *testing.B) {
	for _, engine := range []string{"sqlite", "postgres"} {
		for _, hooks := range []int{-1, 0, 10} {
			name := engine + "/baseline"
			if hooks >= 0 {
				name = engine + "/webhooks=" + strconv.Itoa(hooks)
			}
			b.Run(name, func(b *testing.B) {
				var db *store.DB
				if engine == "sqlite" {
					db = storetest.SQLite(b, webhooks.Migrations)
				} else {
					db = storetest.Postgres(b, webhooks.Migrations) // skips without TENANTKIT_TEST_POSTGRES_URL
				}
				e, err := jobs.New(b.Context(), db, jobs.Config{})
				if err != nil {
					b.Fatal(err)
				}
				ctx, sc := storetest.NewScope(b)
				if hooks >= 0 {
					svc, err := webhooks.New(db, webhooks.Options{SecretKey: make([]byte, 32), AllowPrivateURLs: true})
					if err != nil {
						b.Fatal(err)
					}
					if err := svc.RegisterJobs(e); err != nil {
						b.Fatal(err)
					}
					b.Cleanup(svc.Wait)
					for i := range hooks {
						if _, _, err := svc.Create(ctx, webhooks.Input{Name: "h" + strconv.Itoa(i), URL: "http://127.0.0.1:9/h",
							SubscribedEvents: []string{"orders.*"}}); err != nil {
							b.Fatal(err)
						}
					}
				}
				b.ResetTimer()
				for i := 0; b.Loop(); i++ {
					err := db.Tx(ctx, func(tx *store.Tx) error {
						for j := range 10 {
							if _, err := tx.EmitData(ctx, "orders.order.created", sc, map[string]int{"n": i*10 + j}); err != nil {
								return err
							}
						}
						return nil
					})
					if err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
