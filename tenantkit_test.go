package tenantkit_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/tenantkit/tenantkit/full"
	"github.com/tenantkit/tenantkit/jobs"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
	"github.com/tenantkit/tenantkit/toggles"
)

func TestOpenValidatesConfig(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	_, err := full.OpenPlain(t.Context(), full.Config{})
	is.True(err != nil) // no database
	_, err = full.OpenPlain(t.Context(), full.Config{DatabaseURL: "sqlite::memory:", SecretKey: []byte("short")})
	is.True(err != nil)
	_, err = full.OpenPlain(t.Context(), full.Config{DatabaseURL: "mysql://nope"})
	is.True(err != nil)
}

// An in-memory Kit runs background work on its single connection.
func TestInMemoryKitDeliversEvents(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	ctx := t.Context()
	kit, err := full.OpenPlain(ctx, full.Config{DatabaseURL: "sqlite::memory:"})
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

// TestTogglesFreshAcrossKits runs two Kits on one database, as two server
// processes: a change made through one shows in the other's in-process
// checks within a second.
func TestTogglesFreshAcrossKits(t *testing.T) {
	t.Parallel()
	storetest.EachURL(t, func(t *testing.T, url string) {
		open := func() *full.Kit {
			kit, err := full.OpenPlain(t.Context(), full.Config{DatabaseURL: url})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = kit.Close(context.Background()) })
			return kit
		}
		one, two := open(), open()
		ctx := store.WithScope(t.Context(), store.Scope{TenantID: "tenant-a"})
		within := func(what string, want bool) {
			t.Helper()
			start := time.Now()
			for {
				got, err := two.Toggles.Bool(ctx, "checkout.v2")
				if err == nil && got == want {
					t.Logf("%s seen by the other Kit after %v", what, time.Since(start).Round(time.Millisecond))
					return
				}
				if time.Since(start) > time.Second {
					t.Fatalf("%s: the other Kit still answers %v, %v after 1s", what, got, err)
				}
				time.Sleep(5 * time.Millisecond)
			}
		}
		tg, err := one.Toggles.Create(ctx, toggles.CreateInput{Identifier: "checkout.v2", Name: "New checkout", Type: toggles.Boolean, DefaultValue: json.RawMessage("false")})
		if err != nil {
			t.Fatal(err)
		}
		within("a new toggle", false)
		if _, err := one.Toggles.SetOverride(ctx, tg.ID, true, json.RawMessage("true")); err != nil {
			t.Fatal(err)
		}
		within("an override", true)
		if _, err := one.Toggles.SetOverride(ctx, tg.ID, false, nil); err != nil {
			t.Fatal(err)
		}
		within("the override's removal", false)
	})
}
