package toggles_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/tenantkit/tenantkit/store/storetest"
	"github.com/tenantkit/tenantkit/toggles"
)

// benchService is a Service on SQLite with a boolean toggle among others,
// overridden for the returned context's tenant (and for other tenants).
// Checks are answered from the cache, so the engine does not matter.
func benchService(b *testing.B) (*toggles.Service, context.Context, string) {
	b.Helper()
	db := storetest.SQLite(b, toggles.Migrations)
	svc, err := toggles.New(b.Context(), db, toggles.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { svc.Close() })
	ctx, _ := storetest.NewScope(b) // built once, outside the loop
	var target *toggles.Toggle
	for i := range 50 {
		tg, err := svc.Create(b.Context(), toggles.CreateInput{Identifier: fmt.Sprintf("bench.flag-%02d", i),
			Name: "Bench", Type: toggles.Boolean, DefaultValue: json.RawMessage("false")})
		if err != nil {
			b.Fatal(err)
		}
		if i == 25 {
			target = tg
		}
	}
	for range 20 { // other tenants' overrides of the same toggle
		other, _ := storetest.NewScope(b)
		if _, err := svc.SetOverride(other, target.ID, true, json.RawMessage("false")); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := svc.SetOverride(ctx, target.ID, true, json.RawMessage("true")); err != nil {
		b.Fatal(err)
	}
	if on, err := svc.Bool(ctx, target.Identifier); err != nil || !on {
		b.Fatalf("Bool = %v, %v; want the override true", on, err)
	}
	return svc, ctx, target.Identifier
}

func BenchmarkBoolWithOverride(b *testing.B) {
	svc, ctx, id := benchService(b)
	b.ReportAllocs()
	for b.Loop() {
		on, err := svc.Bool(ctx, id)
		if err != nil || !on {
			b.Fatalf("Bool = %v, %v", on, err)
		}
	}
}

func BenchmarkBoolParallel(b *testing.B) {
	svc, ctx, id := benchService(b)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			on, err := svc.Bool(ctx, id)
			if err != nil || !on {
				b.Errorf("Bool = %v, %v", on, err)
				return
			}
		}
	})
}
