package identity_test

import (
	"testing"

	"github.com/tenantkit/tenantkit/identity"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// BenchmarkAuthenticateCached is the cost of verifying an API key the
// credential cache holds, on each engine, one caller at a time (serial:
// the latency a request pays) and from 8 goroutines per CPU (parallel: a busy
// server, where concurrent requests share the reads of the version
// counter).
func BenchmarkAuthenticateCached(b *testing.B) {
	run := func(b *testing.B, db *store.DB) {
		ctx := b.Context()
		svc, err := openIdentity(ctx, db, identity.Options{SecretKey: []byte("0123456789abcdef0123456789abcdef")})
		if err != nil {
			b.Fatal(err)
		}
		boot, err := svc.Bootstrap(ctx, identity.BootstrapInput{})
		if err != nil {
			b.Fatal(err)
		}
		key := boot.GeneratedAPIKey
		if key == "" {
			b.Fatal("no key generated")
		}
		cred := identity.Credential{Secret: key}
		if _, err := svc.Authenticate(ctx, cred, identity.Selection{}); err != nil {
			b.Fatal(err)
		}
		b.Run("serial", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := svc.Authenticate(ctx, cred, identity.Selection{}); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("parallel", func(b *testing.B) {
			b.ReportAllocs()
			b.SetParallelism(8)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := svc.Authenticate(ctx, cred, identity.Selection{}); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
	b.Run("sqlite", func(b *testing.B) { run(b, storetest.SQLite(b)) })
	b.Run("postgres", func(b *testing.B) {
		db, err := store.Open(b.Context(), storetest.IsolatedPostgresURL(b), nil)
		if err != nil {
			b.Fatal(err)
		}
		defer db.Close()
		run(b, db)
	})
}

// BenchmarkSessionVerify is the cost of verifying a session token without
// the credential cache (what a cache miss pays), on each engine, beside
// the cost of the one query logout added to it (the store's
// SessionRevoked), measured in the same run.
func BenchmarkSessionVerify(b *testing.B) {
	run := func(b *testing.B, db *store.DB) {
		ctx := b.Context()
		svc, err := openIdentity(ctx, db, identity.Options{SecretKey: []byte("0123456789abcdef0123456789abcdef"), CacheTTL: -1})
		if err != nil {
			b.Fatal(err)
		}
		tn, err := svc.CreateTenant(ctx, identity.System, "Bench")
		if err != nil {
			b.Fatal(err)
		}
		org, err := svc.CreateOrganization(ctx, identity.System, identity.OrganizationInput{Name: "HQ", TenantID: tn.ID})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := svc.CreateUser(ctx, identity.System, identity.UserInput{Email: "bench@example.test", Password: "bench-password",
			OrganizationID: org.ID}); err != nil {
			b.Fatal(err)
		}
		token, _, err := svc.Login(ctx, "bench@example.test", "bench-password", "")
		if err != nil {
			b.Fatal(err)
		}
		b.Run("verify", func(b *testing.B) {
			for b.Loop() {
				if _, err := svc.AuthenticateToken(ctx, token); err != nil {
					b.Fatal(err)
				}
			}
		})
		st := identity.NewSQLStore()
		b.Run("revocation-lookup", func(b *testing.B) {
			for b.Loop() {
				if _, err := st.SessionRevoked(ctx, db, "no-such-token"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("sqlite", func(b *testing.B) { run(b, storetest.SQLite(b)) })
	b.Run("postgres", func(b *testing.B) {
		db, err := store.Open(b.Context(), storetest.IsolatedPostgresURL(b), nil)
		if err != nil {
			b.Fatal(err)
		}
		defer db.Close()
		run(b, db)
	})
}
