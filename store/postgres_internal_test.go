//go:build !tenantkit_nopostgres

package store

import (
	"testing"
	"time"
)

func TestInUTC(t *testing.T) {
	t.Parallel()
	berlin := time.FixedZone("CET", 3600)
	local := time.Date(2026, 11, 22, 10, 0, 0, 0, berlin)
	a := local
	b := &local
	var none *time.Time
	if err := inUTC(nil, []any{&a, &b, &none, new(string)}); err != nil {
		t.Fatal(err)
	}
	if a.Location() != time.UTC || !a.Equal(local) {
		t.Errorf("time: got %v", a)
	}
	if b.Location() != time.UTC || !b.Equal(local) || local.Location() != berlin {
		t.Errorf("*time: got %v (the source must stay untouched: %v)", b, local)
	}
	if none != nil {
		t.Error("nil *time.Time was filled")
	}
}
