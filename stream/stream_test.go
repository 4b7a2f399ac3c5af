package stream_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/tenantkit/tenantkit/identity"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
	"github.com/tenantkit/tenantkit/stream"
)

var testTypes = []store.EventType{
	{ID: "things.thing.created", ClientBroadcast: true, ViewFeature: "things.view"},
	{ID: "things.thing.secret", ClientBroadcast: false},
	{ID: "notes.note.created", ClientBroadcast: true, RecipientField: "userId"},
}

func emit(t testing.TB, db *store.DB, tenant, org, typ string, n int) {
	t.Helper()
	err := db.Tx(t.Context(), func(tx *store.Tx) error {
		for i := range n {
			if _, err := tx.Emit(t.Context(), store.Event{Type: typ, TenantID: tenant, OrganizationID: org,
				Data: []byte(fmt.Sprintf(`{"n":%d,"userId":"u1"}`, i))}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func next(t testing.TB, s *stream.Subscription) stream.Message {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	m, err := s.Next(ctx)
	if err != nil {
		t.Fatalf("next: %v", err)
	}
	return m
}

func none(t testing.TB, s *stream.Subscription) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	if m, err := s.Next(ctx); err == nil {
		t.Fatalf("got %+v, want nothing", m)
	}
}

// The hub delivers a tenant's broadcast events in order, once, to the
// callers that may see them, and replays after a last event id.
func TestHub(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		hub := stream.New(db, testTypes, stream.Options{Buffer: 50})
		defer hub.Close()
		_, sc := storetest.NewScope(t)
		_, other := storetest.NewScope(t)
		id := &identity.Identity{TenantID: sc.TenantID, UserID: "u1", Features: []string{"things.view"}}
		s, err := hub.Subscribe(t.Context(), id, stream.Filter{})
		if err != nil {
			t.Fatal(err)
		}
		blind, err := hub.Subscribe(t.Context(), &identity.Identity{TenantID: sc.TenantID, OrganizationIDs: []string{"o2"}, Features: []string{"*"}}, stream.Filter{})
		if err != nil {
			t.Fatal(err)
		}
		emit(t, db, other.TenantID, "", "things.thing.created", 1)
		emit(t, db, sc.TenantID, "", "things.thing.secret", 1)
		emit(t, db, sc.TenantID, "o1", "things.thing.created", 3)
		emit(t, db, sc.TenantID, "", "notes.note.created", 1)
		var ids []string
		for range 4 {
			m := next(t, s)
			if m.Kind != stream.KindEvent || m.Event.TenantID != sc.TenantID {
				t.Fatalf("got %+v", m)
			}
			ids = append(ids, m.ID)
		}
		none(t, s)
		none(t, blind)
		for i := 1; i < len(ids); i++ {
			if ids[i] <= ids[i-1] {
				t.Fatalf("ids not increasing: %v", ids)
			}
		}
		// Resume after the first: the other three again.
		r, err := hub.Subscribe(t.Context(), id, stream.Filter{LastEventID: ids[0]})
		if err != nil {
			t.Fatal(err)
		}
		for i := 1; i < 4; i++ {
			if m := next(t, r); m.ID != ids[i] {
				t.Fatalf("replay %d: got %s, want %s", i, m.ID, ids[i])
			}
		}
		emit(t, db, sc.TenantID, "", "things.thing.created", 1)
		next(t, r)
		none(t, r)
		// Overflow: more than the buffer while nobody reads.
		emit(t, db, sc.TenantID, "", "things.thing.created", 60)
		for end := time.Now().Add(10 * time.Second); hub.Stats().Overflows == 0; time.Sleep(5 * time.Millisecond) {
			if time.Now().After(end) {
				t.Fatal("no overflow within 10 s")
			}
		}
		var m stream.Message
		for m = next(t, s); m.Kind == stream.KindEvent; m = next(t, s) {
		}
		if m.Kind != stream.KindOverflow {
			t.Fatalf("got %+v, want overflow", m)
		}
		if _, err := s.Next(t.Context()); err != stream.ErrClosed {
			t.Fatalf("after overflow: %v", err)
		}
		// Reset for an unusable id.
		z, err := hub.Subscribe(t.Context(), id, stream.Filter{LastEventID: "nope"})
		if err != nil {
			t.Fatal(err)
		}
		if m := next(t, z); m.Kind != stream.KindReset {
			t.Fatalf("got %+v, want reset", m)
		}
	})
}

// Concurrent writers: every event reaches the subscriber once, in id
// order.
func TestHubConcurrentWriters(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		hub := stream.New(db, testTypes, stream.Options{Buffer: 10000})
		defer hub.Close()
		_, sc := storetest.NewScope(t)
		id := &identity.Identity{TenantID: sc.TenantID, Features: []string{"things.view"}}
		s, err := hub.Subscribe(t.Context(), id, stream.Filter{Types: []string{"things.*"}})
		if err != nil {
			t.Fatal(err)
		}
		const writers, each = 8, 25
		var wg sync.WaitGroup
		for range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range each {
					emit(t, db, sc.TenantID, "", "things.thing.created", 2)
				}
			}()
		}
		seen := map[string]bool{}
		last := ""
		for len(seen) < writers*each*2 {
			m := next(t, s)
			if seen[m.Event.ID] || m.ID <= last {
				t.Fatalf("duplicate or out of order: %s after %s", m.ID, last)
			}
			seen[m.Event.ID], last = true, m.ID
		}
		wg.Wait()
		none(t, s)
	})
}
