package toggles_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
	"github.com/tenantkit/tenantkit/toggles"
)

// benchService is a Service on SQLite with a boolean toggle among others,
// overridden for the returned context's tenant (and for other tenants).
// Checks are answered from the cache, so the engine does not matter.
func benchService(b *testing.B) (*toggles.Service, context.Context, string) {
	b.Helper()
	db := storetest.SQLite(b, toggles.Migrations)
	svc := must(toggles.New(db, toggles.Options{}))
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

// naiveFlags is the baseline: the hand-written flag store a host might
// keep, a map of tenant overrides and defaults behind a read-write mutex,
// reading the tenant from the context as Bool does.
type naiveFlags struct {
	mu        sync.RWMutex
	defaults  map[string]bool
	overrides map[string]map[string]bool // identifier → tenant → value
}

func (f *naiveFlags) bool(ctx context.Context, identifier string) (bool, error) {
	sc, err := store.ScopeFrom(ctx)
	if err != nil {
		return false, err
	}
	f.mu.RLock()
	defer f.mu.RUnlock()
	if v, ok := f.overrides[identifier][sc.TenantID]; ok {
		return v, nil
	}
	return f.defaults[identifier], nil
}

// BenchmarkBaselineNaiveMap is BenchmarkBoolWithOverride over naiveFlags.
func BenchmarkBaselineNaiveMap(b *testing.B) {
	ctx, sc := storetest.NewScope(b)
	f := &naiveFlags{defaults: map[string]bool{}, overrides: map[string]map[string]bool{}}
	for i := range 50 {
		f.defaults[fmt.Sprintf("bench.flag-%02d", i)] = false
	}
	f.overrides["bench.flag-25"] = map[string]bool{sc.TenantID: true}
	b.ReportAllocs()
	for b.Loop() {
		if on, err := f.bool(ctx, "bench.flag-25"); err != nil || !on {
			b.Fatalf("bool = %v, %v", on, err)
		}
	}
}
