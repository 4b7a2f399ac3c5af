package stream_test

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tenantkit/tenantkit/identity"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
	"github.com/tenantkit/tenantkit/stream"
)

// loadEnv enables TestStreamLoad, which runs for about a minute per
// engine: TENANTKIT_STREAM_LOAD=1 go test ./stream -run TestStreamLoad -v.
const loadEnv = "TENANTKIT_STREAM_LOAD"

func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// TestStreamLoad measures the hub with many subscribers: the heap per
// idle subscription, and the fan-out latency (from the emitting commit
// returning to a subscriber's Next) at a steady event rate, events spread
// over the tenants, every subscriber of the event's tenant receiving it.
// Streams (default 1,000), tenants (10), events per second (1,000) and
// seconds (10) come from TENANTKIT_STREAM_{STREAMS,TENANTS,RATE,SECONDS}.
func TestStreamLoad(t *testing.T) {
	if os.Getenv(loadEnv) == "" {
		t.Skipf("set %s=1 to run the events stream load test", loadEnv)
	}
	streams, tenants := storetest.EnvInt("TENANTKIT_STREAM_STREAMS", 1000), storetest.EnvInt("TENANTKIT_STREAM_TENANTS", 10)
	rate, seconds := storetest.EnvInt("TENANTKIT_STREAM_RATE", 1000), storetest.EnvInt("TENANTKIT_STREAM_SECONDS", 10)
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		hub := stream.New(db, testTypes, stream.Options{})
		defer hub.Close()
		ids := make([]string, tenants)
		for i := range ids {
			_, sc := storetest.NewScope(t)
			ids[i] = sc.TenantID
		}
		base := heapInUse()
		subs := make([]*stream.Subscription, streams)
		for i := range subs {
			s, err := hub.Subscribe(t.Context(), &identity.Identity{TenantID: ids[i%tenants], Features: []string{"*"}}, stream.Filter{})
			if err != nil {
				t.Fatal(err)
			}
			subs[i] = s
		}
		idle := heapInUse()

		var sent sync.Map // event id → time its commit returned
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		lat := make([][]time.Duration, streams)
		var received atomic.Int64
		var wg sync.WaitGroup
		for i, s := range subs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					m, err := s.Next(ctx)
					if err != nil {
						return
					}
					if m.Kind != stream.KindEvent {
						t.Errorf("subscriber %d: %s", i, m.Kind)
						return
					}
					now := time.Now()
					if at, ok := sent.Load(m.Event.ID); ok {
						lat[i] = append(lat[i], now.Sub(at.(time.Time)))
					}
					received.Add(1)
				}
			}()
		}
		// rate events a second, in transactions of rate/100 every 10 ms.
		perTick := max(rate/100, 1)
		tick := time.NewTicker(10 * time.Millisecond)
		var peak uint64
		total := 0
		deadline := time.Now().Add(time.Duration(seconds) * time.Second)
		for time.Now().Before(deadline) {
			<-tick.C
			var evs []store.Event
			err := db.Tx(t.Context(), func(tx *store.Tx) error {
				evs = evs[:0]
				for j := range perTick {
					ev, err := tx.Emit(t.Context(), store.Event{Type: "things.thing.created", TenantID: ids[(total+j)%tenants],
						Data: []byte(fmt.Sprintf(`{"n":%d}`, total+j))})
					if err != nil {
						return err
					}
					evs = append(evs, ev)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			now := time.Now()
			for _, ev := range evs {
				sent.Store(ev.ID, now)
			}
			total += perTick
			if total%(rate) == 0 {
				var m runtime.MemStats
				runtime.ReadMemStats(&m)
				peak = max(peak, m.HeapInuse)
			}
		}
		tick.Stop()
		want := int64(total * streams / tenants)
		for end := time.Now().Add(30 * time.Second); received.Load() < want && time.Now().Before(end); {
			time.Sleep(10 * time.Millisecond)
		}
		cancel()
		wg.Wait()
		var all []time.Duration
		for _, l := range lat {
			all = append(all, l...)
		}
		slices.Sort(all)
		if len(all) == 0 {
			t.Fatal("nothing received")
		}
		p := func(q float64) time.Duration { return all[min(len(all)-1, int(float64(len(all))*q))] }
		t.Logf("%s: %d streams over %d tenants, %d events at %d/s for %d s: %d deliveries of %d (%d timed); "+
			"latency p50 %v, p99 %v, max %v; heap in use %.1f MiB with no subscriber, +%.1f KiB per idle stream, peak under load %.1f MiB",
			db.Dialect().Name(), streams, tenants, total, rate, seconds, received.Load(), want, len(all),
			p(0.5), p(0.99), all[len(all)-1], float64(base)/(1<<20), float64(idle-base)/float64(streams)/1024, float64(peak)/(1<<20))
		if received.Load() != want {
			t.Errorf("received %d deliveries, want %d", received.Load(), want)
		}
	})
}
