package httpapi

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tenantkit/tenantkit/httpapi/entitiesapi"
	"github.com/tenantkit/tenantkit/ratelimit"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// streamLoadEnv enables TestEventStreamHTTPLoad:
// TENANTKIT_STREAM_HTTP_LOAD=1 go test ./httpapi -run TestEventStreamHTTPLoad -v.
// It holds 2 file descriptors per stream (both ends are in the process):
// check ulimit -n.
const streamLoadEnv = "TENANTKIT_STREAM_HTTP_LOAD"

// gcHeap is the heap in use (spans) and allocated (live objects) after
// a collection.
func gcHeap() (inUse, alloc uint64) {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse, m.HeapAlloc
}

// sideOf says whose a stack is: the server's (its connections, the
// handler, the hub), the client's (the transport and this test's
// readers), or neither.
func sideOf(funcs []string) string {
	for _, f := range funcs {
		if strings.Contains(f, "TestEventStreamHTTPLoad") || strings.Contains(f, "net/http.(*Transport)") ||
			strings.Contains(f, "net/http.(*persistConn)") || strings.Contains(f, "net/http.(*Client)") {
			return "client"
		}
	}
	for _, f := range funcs {
		if strings.Contains(f, "net/http.(*conn)") || strings.Contains(f, "net/http.(*connReader)") ||
			strings.Contains(f, "net/http.(*Server)") || strings.Contains(f, "tenantkit/httpapi.") ||
			strings.Contains(f, "tenantkit/stream.") || strings.Contains(f, "net/http/httptest.") {
			return "server"
		}
	}
	return "other"
}

// intAfter is the integer after key (and spaces) in s, or -1.
func intAfter(s, key string) int {
	at := strings.Index(s, key)
	if at < 0 {
		return -1
	}
	s = strings.TrimLeft(s[at+len(key):], " ")
	end := 0
	for end < len(s) && s[end] >= '0' && s[end] <= '9' {
		end++
	}
	n, err := strconv.Atoi(s[:end])
	if err != nil {
		return -1
	}
	return n
}

// heapBySide is the heap in use, by side, of what was allocated since
// the memory profile rate was set to 1.
func heapBySide() (map[string]int64, map[string]int64) {
	runtime.GC()
	runtime.GC()
	runtime.GC() // the profile is up to two cycles old
	n, _ := runtime.MemProfile(nil, true)
	recs := make([]runtime.MemProfileRecord, n+100)
	n, _ = runtime.MemProfile(recs, true)
	out, sites := map[string]int64{}, map[string]int64{}
	for _, r := range recs[:n] {
		var funcs []string
		frames := runtime.CallersFrames(r.Stack())
		for {
			f, more := frames.Next()
			funcs = append(funcs, f.Function)
			if !more {
				break
			}
		}
		side := sideOf(funcs)
		out[side] += r.InUseBytes()
		if side == "server" {
			for _, f := range funcs {
				if !strings.HasPrefix(f, "runtime.") && !strings.HasPrefix(f, "bufio.") && !strings.HasPrefix(f, "sync.") {
					sites[f] += r.InUseBytes()
					break
				}
			}
		}
	}
	return out, sites
}

// topSites formats the largest of sites, per stream.
func topSites(sites map[string]int64, streams, n int) string {
	names := make([]string, 0, len(sites))
	for f := range sites {
		names = append(names, f)
	}
	slices.SortFunc(names, func(a, b string) int { return int(sites[b] - sites[a]) })
	var out []string
	for _, f := range names[:min(n, len(names))] {
		out = append(out, fmt.Sprintf("%s %.1f KiB", f, float64(sites[f])/float64(streams)/1024))
	}
	return strings.Join(out, ", ")
}

// goroutinesBySide counts the goroutines by side.
func goroutinesBySide() map[string]int {
	buf := make([]byte, 64<<20)
	buf = buf[:runtime.Stack(buf, true)]
	out := map[string]int{}
	for _, g := range strings.Split(string(buf), "\n\n") {
		var funcs []string
		for _, line := range strings.Split(g, "\n") {
			if line != "" && !strings.HasPrefix(line, "\t") {
				funcs = append(funcs, line)
			}
		}
		out[sideOf(funcs)]++
	}
	return out
}

// TestEventStreamHTTPLoad opens many GET /api/events/stream connections
// (default 1,000, over 10 tenants) to one server on loopback, and emits
// events (default 1,000 a second, in transactions of a hundredth of that
// every 10 ms, round-robin over the tenants) for some seconds (default
// 10). It logs the heap and goroutines per idle stream (the server's,
// attributed by allocation stack, and the process's, client included),
// the fan-out latency from the emitting commit returning to the client
// reading the message, and the rate the emitter reached. It checks only
// that every stream received every event of its tenant and none of
// another. TENANTKIT_STREAM_HTTP_{STREAMS,TENANTS,RATE,SECONDS} change
// the defaults.
func TestEventStreamHTTPLoad(t *testing.T) {
	if os.Getenv(streamLoadEnv) == "" {
		t.Skipf("set %s=1 to run the events stream HTTP load test", streamLoadEnv)
	}
	streams, tenants := storetest.EnvInt("TENANTKIT_STREAM_HTTP_STREAMS", 1000), storetest.EnvInt("TENANTKIT_STREAM_HTTP_TENANTS", 10)
	rate, seconds := storetest.EnvInt("TENANTKIT_STREAM_HTTP_RATE", 1000), storetest.EnvInt("TENANTKIT_STREAM_HTTP_SECONDS", 10)
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newTestEnv(t, db)
		e.handler = mustNew(e.kit, Options{Auth: e.auth, RateLimit: ratelimit.NewPolicy(ratelimit.Config{Enabled: false}, nil, nil)})
		srv := httptest.NewServer(e.handler)
		t.Cleanup(srv.Close)
		tr := &http.Transport{MaxConnsPerHost: 0, MaxIdleConns: streams + 10, MaxIdleConnsPerHost: streams + 10, DisableCompression: true}
		t.Cleanup(tr.CloseIdleConnections)
		client := &http.Client{Transport: tr}
		ids, keys := make([]string, tenants), make([]string, tenants)
		for i := range tenants {
			tf := e.newTenant(fmt.Sprintf("Load %d %s", i, randomHex(3)))
			ids[i], keys[i] = tf.ID, e.newKey(tf, entitiesapi.FeatureEntitiesRecordsView)
		}
		maxEvents := rate*seconds + rate
		committed := make([]atomic.Int64, maxEvents) // event n → unix ns its commit returned

		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		goBase := goroutinesBySide()
		base, baseAlloc := gcHeap()
		oldRate := runtime.MemProfileRate
		runtime.MemProfileRate = 1
		bodies := make([]*bufio.Reader, streams)
		closers := make([]func(), streams)
		var openWG sync.WaitGroup
		var openMu sync.Mutex
		var openErr error
		sem := make(chan struct{}, 32)
		for i := range streams {
			openWG.Add(1)
			sem <- struct{}{}
			go func() {
				defer openWG.Done()
				defer func() { <-sem }()
				req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/api/events/stream?types=entities.record.created", nil)
				req.Header.Set("X-Api-Key", keys[i%tenants])
				resp, err := client.Do(req)
				if err != nil {
					openMu.Lock()
					openErr = err
					openMu.Unlock()
					return
				}
				if resp.StatusCode != http.StatusOK {
					resp.Body.Close()
					openMu.Lock()
					openErr = fmt.Errorf("stream %d: %s", i, resp.Status)
					openMu.Unlock()
					return
				}
				bodies[i], closers[i] = bufio.NewReaderSize(resp.Body, 4<<10), func() { resp.Body.Close() }
			}()
		}
		openWG.Wait()
		if openErr != nil {
			t.Fatal(openErr)
		}
		for _, c := range closers {
			defer c()
		}
		idle, idleAlloc := gcHeap()
		sides, sites := heapBySide()
		runtime.MemProfileRate = oldRate
		goIdle := goroutinesBySide()

		lat := make([][]time.Duration, streams)
		var received, foreign, early atomic.Int64
		var readWG sync.WaitGroup
		for i := range streams {
			readWG.Add(1)
			go func() {
				defer readWG.Done()
				br, mine := bodies[i], strconv.Itoa(i%tenants)
				for {
					line, err := br.ReadSlice('\n')
					if err != nil {
						return
					}
					// data: {"type":…,"data":{"n":N,"t":T},…} (PostgreSQL
					// stores the data as jsonb: {"n": N, "t": T}).
					s := string(line)
					if !strings.HasPrefix(s, "data: ") {
						continue
					}
					now := time.Now().UnixNano()
					n, tn := intAfter(s, `"n":`), intAfter(s, `"t":`)
					if n < 0 || n >= len(committed) {
						foreign.Add(1)
						continue
					}
					if strconv.Itoa(tn) != mine {
						foreign.Add(1)
					}
					if c := committed[n].Load(); c > 0 {
						lat[i] = append(lat[i], time.Duration(now-c))
					} else {
						early.Add(1) // read before the commit returned: 0
						lat[i] = append(lat[i], 0)
					}
					received.Add(1)
				}
			}()
		}

		// Every 10 ms, one transaction of the events due by then (a
		// hundredth of the rate, more after a late tick), at most a tenth
		// of the rate.
		tick := time.NewTicker(10 * time.Millisecond)
		var peak uint64
		total, lastPeak := 0, 0
		start := time.Now()
		deadline := start.Add(time.Duration(seconds) * time.Second)
		for time.Now().Before(deadline) {
			<-tick.C
			due := min(int(time.Since(start).Seconds()*float64(rate)), rate*seconds, maxEvents)
			perTick := min(due-total, max(rate/10, 1))
			if perTick <= 0 {
				continue
			}
			err := db.Tx(t.Context(), func(tx *store.Tx) error {
				evs := make([]store.Event, perTick)
				for j := range evs {
					n := total + j
					evs[j] = store.Event{Type: "entities.record.created", TenantID: ids[n%tenants],
						Data: fmt.Appendf(nil, `{"n":%d,"t":%d}`, n, n%tenants)}
				}
				_, err := tx.EmitMany(t.Context(), evs)
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			now := time.Now().UnixNano()
			for j := range perTick {
				committed[total+j].Store(now)
			}
			total += perTick
			if total-lastPeak >= rate {
				lastPeak = total
				var m runtime.MemStats
				runtime.ReadMemStats(&m)
				peak = max(peak, m.HeapInuse)
			}
		}
		elapsed := time.Since(start)
		tick.Stop()
		want := int64(0)
		for i := range streams {
			want += int64(total / tenants)
			if i%tenants < total%tenants {
				want++
			}
		}
		for end := time.Now().Add(60 * time.Second); received.Load() < want && time.Now().Before(end); {
			time.Sleep(10 * time.Millisecond)
		}
		cancel()
		for _, c := range closers {
			c()
		}
		readWG.Wait()

		var all []time.Duration
		for _, l := range lat {
			all = append(all, l...)
		}
		slices.Sort(all)
		if len(all) == 0 {
			t.Fatal("nothing received")
		}
		p := func(q float64) time.Duration { return all[min(len(all)-1, int(float64(len(all))*q))] }
		kib := func(b int64) float64 { return float64(b) / float64(streams) / 1024 }
		per := func(side string) float64 { return float64(goIdle[side]-goBase[side]) / float64(streams) }
		t.Logf("%s: %d HTTP streams over %d tenants; idle: heap in use +%.1f KiB per stream in the process (live objects +%.1f KiB; server +%.1f KiB, client +%.1f KiB, other +%.1f KiB by allocation stack), "+
			"goroutines per stream %.2f server, %.2f client",
			db.Dialect().Name(), streams, tenants, float64(idle-base)/float64(streams)/1024, kib(int64(idleAlloc)-int64(baseAlloc)), kib(sides["server"]), kib(sides["client"]), kib(sides["other"]),
			per("server"), per("client"))
		t.Logf("%s: server heap per idle stream by allocating function: %s", db.Dialect().Name(), topSites(sites, streams, 6))
		t.Logf("%s: %d events in %.1f s (%.0f/s asked %d/s); %d deliveries of %d, %d from another tenant, %d read before the commit returned; "+
			"latency p50 %v, p99 %v, max %v; heap in use at peak %.1f MiB",
			db.Dialect().Name(), total, elapsed.Seconds(), float64(total)/elapsed.Seconds(), rate, received.Load(), want, foreign.Load(), early.Load(),
			p(0.5), p(0.99), all[len(all)-1], float64(peak)/(1<<20))
		if received.Load() != want || foreign.Load() != 0 {
			t.Errorf("received %d deliveries, want %d; %d from another tenant", received.Load(), want, foreign.Load())
		}
	})
}
