package ratelimit_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tenantkit/tenantkit/internal/testing/logbuf"

	"github.com/redis/go-redis/v9"

	"github.com/tenantkit/tenantkit/ratelimit"
	"github.com/tenantkit/tenantkit/ratelimit/ratelimittest"
)

// redisEnv names the Redis the Redis tests use; without it they are
// skipped.
const redisEnv = "TENANTKIT_TEST_REDIS_URL"

// redisURL returns the test Redis's URL, or skips tb.
func redisURL(tb testing.TB) string {
	tb.Helper()
	u := os.Getenv(redisEnv)
	if u == "" {
		tb.Skip("Redis tests skipped: set " + redisEnv + " (e.g. redis://127.0.0.1:6379) to run them")
	}
	return u
}

// redisClient returns a client of the test Redis, closed when tb ends,
// after checking that Redis answers.
func redisClient(tb testing.TB) *redis.Client {
	tb.Helper()
	opts, err := redis.ParseURL(redisURL(tb))
	if err != nil {
		tb.Fatalf("%s: %v", redisEnv, err)
	}
	client := redis.NewClient(opts)
	tb.Cleanup(func() { client.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := client.Ping(ctx).Err(); err != nil {
		tb.Fatalf("Redis at %s: %v", opts.Addr, err)
	}
	return client
}

// testPrefix is a key prefix unique to this test.
func testPrefix() string {
	var b [8]byte
	rand.Read(b[:])
	return "ratelimit-test:" + hex.EncodeToString(b[:]) + ":"
}

// noInsurance is an insurance limiter that fails the test when used: the
// tests that expect Redis to answer check that it did.
type noInsurance struct{ t *testing.T }

func (n noInsurance) Consume(_ context.Context, key string, _ ratelimit.Rule) (ratelimit.Result, error) {
	n.t.Errorf("insurance used for %q: Redis did not answer", key)
	return ratelimit.Result{}, errors.New("insurance used")
}

func (n noInsurance) Reset(context.Context, string) error { return nil }

func TestRedis(t *testing.T) {
	t.Parallel()
	client := redisClient(t)
	ratelimittest.Run(t, func(t *testing.T) ratelimit.Limiter {
		return ratelimit.NewRedis(client, ratelimit.RedisOptions{Insurance: noInsurance{t}})
	})
}

// proxy is a loopback TCP proxy to Redis that can be stopped, cutting
// every connection, and started again on the same address.
type proxy struct {
	t      *testing.T
	target string
	addr   string

	mu    sync.Mutex
	ln    net.Listener
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

func startProxy(t *testing.T, target string) *proxy {
	p := &proxy{t: t, target: target, addr: "127.0.0.1:0", conns: make(map[net.Conn]struct{})}
	p.start()
	t.Cleanup(p.stop)
	return p
}

// start listens on p.addr (the same port again after stop), retrying
// briefly.
func (p *proxy) start() {
	p.t.Helper()
	var ln net.Listener
	var err error
	for deadline := time.Now().Add(2 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if ln, err = net.Listen("tcp", p.addr); err == nil || time.Now().After(deadline) {
			break
		}
	}
	if err != nil {
		p.t.Fatalf("proxy: %v", err)
	}
	p.mu.Lock()
	p.ln, p.addr = ln, ln.Addr().String()
	p.mu.Unlock()
	p.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return // stopped
			}
			p.wg.Go(func() { p.serve(c) })
		}
	})
}

func (p *proxy) serve(c net.Conn) {
	up, err := net.DialTimeout("tcp", p.target, time.Second)
	if err != nil {
		c.Close()
		return
	}
	p.mu.Lock()
	if p.ln == nil { // stopped meanwhile
		p.mu.Unlock()
		c.Close()
		up.Close()
		return
	}
	p.conns[c], p.conns[up] = struct{}{}, struct{}{}
	p.mu.Unlock()
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		io.Copy(dst, src)
		done <- struct{}{}
	}
	go pipe(up, c)
	go pipe(c, up)
	<-done // either side ended: end both
	c.Close()
	up.Close()
	<-done
	p.mu.Lock()
	delete(p.conns, c)
	delete(p.conns, up)
	p.mu.Unlock()
}

// stop closes the listener and every live connection, and waits for the
// proxy's goroutines.
func (p *proxy) stop() {
	p.mu.Lock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// TestRedisOutage cuts Redis off and brings it back: the insurance counts
// meanwhile, and Redis counts again after RetryAfter.
func TestRedisOutage(t *testing.T) {
	t.Parallel()
	client := redisClient(t)
	p := startProxy(t, client.Options().Addr)
	u, err := url.Parse(redisURL(t))
	if err != nil {
		t.Fatal(err)
	}
	u.Host = p.addr
	var logs logbuf.Buffer
	const retryAfter = 100 * time.Millisecond
	l, err := ratelimit.OpenRedis(u.String(), ratelimit.RedisOptions{
		RetryAfter: retryAfter,
		Logger:     slog.New(slog.NewTextHandler(&logs, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	ctx := t.Context()
	key := testPrefix() + "outage"
	t.Cleanup(func() { client.Del(context.Background(), key) })
	rule := ratelimit.Rule{Points: 3, Duration: time.Minute}
	redisCount := func() int {
		t.Helper()
		n, err := client.Get(ctx, key).Int()
		if err != nil {
			t.Fatalf("GET %s: %v", key, err)
		}
		return n
	}
	const unreachable, answers = "redis unreachable", "redis answers again"
	// consume bounds each Consume (the client's timeouts are 250 ms, and
	// one dial attempt) and logs a slow one.
	consume := func(what string) ratelimit.Result {
		t.Helper()
		start := time.Now()
		r, err := l.Consume(ctx, key, rule)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Fatalf("%s took %s", what, d)
		} else if d > 300*time.Millisecond {
			t.Logf("%s took %s", what, d)
		}
		return r
	}

	// Redis counts.
	if r := consume("before the outage"); !r.Allowed || r.Remaining != 2 {
		t.Fatalf("before the outage: %+v, want allowed with Remaining 2", r)
	}
	if n := redisCount(); n != 1 {
		t.Fatalf("before the outage: Redis counted %d, want 1", n)
	}

	// Redis unreachable: the insurance counts, from zero (it does not know
	// Redis's count), Points requests then a refusal.
	p.stop()
	for i := range rule.Points {
		what := "outage request " + strconv.Itoa(i+1)
		if r := consume(what); !r.Allowed || r.Remaining != rule.Points-1-i {
			t.Fatalf("%s: %+v, want allowed by the insurance with Remaining %d", what, r, rule.Points-1-i)
		}
	}
	if r := consume("outage request 4"); r.Allowed {
		t.Fatalf("outage request 4: %+v, want refused by the insurance", r)
	}
	// Past RetryAfter Redis is tried again, fails again, and the outage
	// is not logged again.
	time.Sleep(retryAfter + 50*time.Millisecond)
	if r := consume("outage request 5, after RetryAfter"); r.Allowed {
		t.Fatalf("outage request 5: %+v, want refused by the insurance", r)
	}
	if n := redisCount(); n != 1 {
		t.Errorf("during the outage: Redis counted %d, want still 1", n)
	}
	if n := strings.Count(logs.String(), unreachable); n != 1 {
		t.Errorf("log has %q %d times, want once; log:\n%s", unreachable, n, logs.String())
	}
	if strings.Contains(logs.String(), answers) {
		t.Errorf("log has %q during the outage; log:\n%s", answers, logs.String())
	}

	// Redis back: after RetryAfter it counts again.
	p.start()
	var r ratelimit.Result
	for attempt := 1; ; attempt++ {
		time.Sleep(retryAfter + 50*time.Millisecond)
		r = consume("after the outage")
		if n := redisCount(); n == 2 {
			break
		} else if attempt == 10 {
			t.Fatalf("after the outage: Redis counted %d after %d attempts, want 2; log:\n%s", n, attempt, logs.String())
		}
		t.Logf("attempt %d after the outage did not reach Redis", attempt)
	}
	if !r.Allowed || r.Remaining != 1 {
		t.Errorf("after the outage: %+v, want allowed by Redis with Remaining 1", r)
	}
	if n := strings.Count(logs.String(), answers); n != 1 {
		t.Errorf("log has %q %d times, want once; log:\n%s", answers, n, logs.String())
	}
}

// TestRedisErrorReply checks that an error reply is returned, and does not
// switch to the insurance.
func TestRedisErrorReply(t *testing.T) {
	t.Parallel()
	client := redisClient(t)
	var logs logbuf.Buffer
	l := ratelimit.NewRedis(client, ratelimit.RedisOptions{
		Insurance:  noInsurance{t},
		RetryAfter: time.Minute,
		Logger:     slog.New(slog.NewTextHandler(&logs, nil)),
	})
	ctx := t.Context()
	prefix := testPrefix()
	bad, good := prefix+"not-a-counter", prefix+"good"
	t.Cleanup(func() { client.Del(context.Background(), bad, good) })
	if err := client.Set(ctx, bad, "abc", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	rule := ratelimit.Rule{Points: 3, Duration: time.Minute}
	r, err := l.Consume(ctx, bad, rule)
	if err == nil {
		t.Fatalf("Consume of a key holding %q: %+v, want an error", "abc", r)
	}
	if errors.Is(err, ratelimit.ErrInvalidRule) {
		t.Errorf("Consume of a key holding %q: %v, want a Redis error", "abc", err)
	}
	t.Logf("Consume of a key holding %q: %v", "abc", err)

	// Redis is not considered down: the next key is counted there.
	if r, err := l.Consume(ctx, good, rule); err != nil || !r.Allowed || r.Remaining != 2 {
		t.Fatalf("Consume after the error reply: %+v, %v; want allowed with Remaining 2", r, err)
	}
	if n, err := client.Get(ctx, good).Int(); err != nil || n != 1 {
		t.Errorf("GET %s after Consume: %d, %v; want 1", good, n, err)
	}
	if s := logs.String(); s != "" {
		t.Errorf("log after an error reply: %s; want nothing", s)
	}
	// The bad key can still be reset.
	if err := l.Reset(ctx, bad); err != nil {
		t.Fatal(err)
	}
	if r, err := l.Consume(ctx, bad, rule); err != nil || !r.Allowed {
		t.Errorf("Consume after Reset: %+v, %v; want allowed", r, err)
	}
}

// benchRedisKeys is the keys a Redis benchmark counts, deleted when it ends.
func benchRedisKeys(b *testing.B, client *redis.Client) []string {
	prefix := testPrefix()
	keys := make([]string, 16)
	for i := range keys {
		keys[i] = prefix + strconv.Itoa(i)
	}
	b.Cleanup(func() { client.Del(context.Background(), keys...) })
	return keys
}

// redisBenchRule is a rule of the size real limits have (the keys are
// soon refused; a refused Consume does the same work as an allowed one).
var redisBenchRule = ratelimit.Rule{Points: 100, Duration: time.Minute, BlockDuration: time.Minute}

// redisBenchConcurrency is the requests in flight per GOMAXPROCS: 1 (one
// request per core, latency-bound) and 8 (a busy server).
var redisBenchConcurrency = []int{1, 8}

// BenchmarkRedisConsume measures Consume from concurrent goroutines; compare
// it with BenchmarkRedisBaselinePipeline from the same run.
func BenchmarkRedisConsume(b *testing.B) {
	client := redisClient(b)
	l := ratelimit.NewRedis(client, ratelimit.RedisOptions{})
	keys := benchRedisKeys(b, client)
	ctx := context.Background()
	for _, p := range redisBenchConcurrency {
		b.Run("inflight="+strconv.Itoa(p*runtime.GOMAXPROCS(0)), func(b *testing.B) {
			b.ReportAllocs()
			b.SetParallelism(p)
			b.RunParallel(func(pb *testing.PB) {
				i := 0
				for pb.Next() {
					if _, err := l.Consume(ctx, keys[i%len(keys)], redisBenchRule); err != nil {
						b.Error(err)
						return
					}
					i++
				}
			})
		})
	}
}

// BenchmarkRedisBaselinePipeline is the least a Redis counter costs: INCR
// and PEXPIRE in one round trip.
func BenchmarkRedisBaselinePipeline(b *testing.B) {
	client := redisClient(b)
	keys := benchRedisKeys(b, client)
	ctx := context.Background()
	for _, p := range redisBenchConcurrency {
		b.Run("inflight="+strconv.Itoa(p*runtime.GOMAXPROCS(0)), func(b *testing.B) {
			b.ReportAllocs()
			b.SetParallelism(p)
			b.RunParallel(func(pb *testing.PB) {
				i := 0
				for pb.Next() {
					key := keys[i%len(keys)]
					pipe := client.Pipeline()
					pipe.Incr(ctx, key)
					pipe.PExpire(ctx, key, redisBenchRule.Duration)
					if _, err := pipe.Exec(ctx); err != nil {
						b.Error(err)
						return
					}
					i++
				}
			})
		})
	}
}
