package tenantkit_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/tenantkit/tenantkit"
	"github.com/tenantkit/tenantkit/jobs"
	"github.com/tenantkit/tenantkit/store"
)

func TestOpenValidatesConfig(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	_, err := tenantkit.Open(t.Context(), tenantkit.Config{})
	is.True(err != nil) // no database
	_, err = tenantkit.Open(t.Context(), tenantkit.Config{DatabaseURL: "sqlite::memory:", SecretKey: []byte("short")})
	is.True(err != nil)
	_, err = tenantkit.Open(t.Context(), tenantkit.Config{DatabaseURL: "mysql://nope"})
	is.True(err != nil)
}

// An in-memory Kit runs background work on its single connection.
func TestInMemoryKitDeliversEvents(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	ctx := t.Context()
	kit, err := tenantkit.Open(ctx, tenantkit.Config{DatabaseURL: "sqlite::memory:"})
	is.NoErr(err)
	var mu sync.Mutex
	var got []string
	is.NoErr(kit.Jobs.Subscribe(jobs.Subscription{Name: "test", Handle: func(_ context.Context, ev store.Event) error {
		mu.Lock()
		got = append(got, ev.Type)
		mu.Unlock()
		return nil
	}}))
	is.NoErr(kit.Start(ctx))

	sc := store.Scope{TenantID: store.NewID()}
	is.NoErr(kit.DB.Tx(ctx, func(tx *store.Tx) error {
		_, err := tx.EmitData(ctx, "test.thing.created", sc, map[string]int{"n": 1})
		return err
	}))
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		n := len(got)
		mu.Unlock()
		if n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("event not delivered")
		}
		time.Sleep(10 * time.Millisecond)
	}
	closeCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	is.NoErr(kit.Close(closeCtx))
}
