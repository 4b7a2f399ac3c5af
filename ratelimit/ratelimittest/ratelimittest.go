// Package ratelimittest is a conformance suite for ratelimit.Limiter
// implementations: Run checks the contract documented on ratelimit.Rule,
// ratelimit.Result and ratelimit.Limiter (fixed windows counted from a
// key's first request, blocks, Reset, atomicity under concurrent use).
//
// The suite is written for backends shared between test runs (a Redis, say):
// every subtest uses keys under a random prefix, so state left by earlier
// runs never interferes. Its timing is meant to hold on a loaded machine:
// checks that a key is still refused use windows of seconds and never wait
// for them to end, checks that a window or block has ended use windows of a
// few hundred milliseconds and wait well past their end. The whole suite
// takes about half a second, its subtests running concurrently.
package ratelimittest

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/tenantkit/tenantkit/ratelimit"
)

// Run runs the conformance suite against the limiters newLimiter returns.
// newLimiter is called once per subtest, with that subtest's t (so it may
// register cleanups or fail the subtest); it may return a new limiter each
// time or share one, since subtests never share keys. Subtests run
// concurrently: the ones that wait for time to pass from goroutines, the
// others with t.Parallel, after those.
func Run(t *testing.T, newLimiter func(t *testing.T) ratelimit.Limiter) {
	t.Helper()
	s := &suite{prefix: "ratelimittest:" + randomHex(t) + ":", newLimiter: newLimiter}
	type subtest struct {
		name string
		test func(*testing.T, *suite)
	}
	// The subtests that wait for a window or a block to end mostly sleep.
	// They run concurrently, each from its own goroutine, rather than with
	// t.Parallel: -parallel (GOMAXPROCS by default) would cap them, and on
	// a small machine run their sleeps one after another.
	var wg sync.WaitGroup
	for _, c := range []subtest{
		{"WindowExpires", testWindowExpires},
		{"WindowStartsAtFirstRequest", testWindowStartsAtFirstRequest},
		{"BlockOutlastsWindow", testBlockOutlastsWindow},
		{"BlockNotExtendedAndExpires", testBlockNotExtended},
	} {
		wg.Go(func() {
			t.Run(c.name, func(t *testing.T) { c.test(t, s) })
		})
	}
	wg.Wait()
	for _, c := range []subtest{
		{"InvalidRule", testInvalidRule},
		{"LimitEqualsPoints", testLimitEqualsPoints},
		{"CountsDown", testCountsDown},
		{"RefusedUntilWindowEnds", testRefusedUntilWindowEnds},
		{"ZeroPointsRefusesEverything", testZeroPoints},
		{"BlockStartsAtFirstRefusal", testBlockStarts},
		{"KeysAreIndependent", testKeysIndependent},
		{"ResetForgetsKey", testReset},
		{"ResetMidBlock", testResetMidBlock},
		{"ResetUnknownKey", testResetUnknown},
		{"Concurrent", testConcurrent},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.test(t, s)
		})
	}
}

// slack is how far past the end of a short window or block a test waits
// before it expects the key to pass again.
const slack = 150 * time.Millisecond

// suite is the state one Run shares with its subtests.
type suite struct {
	prefix     string
	newLimiter func(t *testing.T) ratelimit.Limiter
}

// key returns a key unique to this Run, subtest and name.
func (s *suite) key(t *testing.T, name string) string {
	return s.prefix + t.Name() + ":" + name
}

// limiter returns a limiter for subtest t.
func (s *suite) limiter(t *testing.T) ratelimit.Limiter {
	t.Helper()
	l := s.newLimiter(t)
	if l == nil {
		t.Fatal("newLimiter returned nil")
	}
	return l
}

func randomHex(t *testing.T) string {
	t.Helper()
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatalf("crypto/rand: %v", err)
	}
	return hex.EncodeToString(b[:])
}

// consume calls Consume and fails the test on an error.
func consume(t *testing.T, l ratelimit.Limiter, key string, rule ratelimit.Rule) ratelimit.Result {
	t.Helper()
	r, err := l.Consume(t.Context(), key, rule)
	if err != nil {
		t.Fatalf("Consume(%q, %+v): %v", key, rule, err)
	}
	return r
}

// reset calls Reset and fails the test on an error.
func reset(t *testing.T, l ratelimit.Limiter, key string) {
	t.Helper()
	if err := l.Reset(t.Context(), key); err != nil {
		t.Fatalf("Reset(%q): %v", key, err)
	}
}

// wantAllowed checks an allowed result: Limit, Remaining and a ResetAfter
// in (0, rule.Duration].
func wantAllowed(t *testing.T, what string, r ratelimit.Result, rule ratelimit.Rule, remaining int) {
	t.Helper()
	if !r.Allowed {
		t.Fatalf("%s: refused (%+v), want allowed", what, r)
	}
	if r.Limit != rule.Points {
		t.Errorf("%s: Limit = %d, want Points %d", what, r.Limit, rule.Points)
	}
	if r.Remaining != remaining {
		t.Errorf("%s: Remaining = %d, want %d", what, r.Remaining, remaining)
	}
	if r.ResetAfter <= 0 || r.ResetAfter > rule.Duration {
		t.Errorf("%s: ResetAfter = %s, want in (0, %s]", what, r.ResetAfter, rule.Duration)
	}
}

// wantRefused checks a refused result: Limit, Remaining 0 and a ResetAfter
// in (lo, hi].
func wantRefused(t *testing.T, what string, r ratelimit.Result, rule ratelimit.Rule, lo, hi time.Duration) {
	t.Helper()
	if r.Allowed {
		t.Fatalf("%s: allowed (%+v), want refused", what, r)
	}
	if r.Limit != rule.Points {
		t.Errorf("%s: Limit = %d, want Points %d", what, r.Limit, rule.Points)
	}
	if r.Remaining != 0 {
		t.Errorf("%s: Remaining = %d, want 0", what, r.Remaining)
	}
	if r.ResetAfter <= lo || r.ResetAfter > hi {
		t.Errorf("%s: ResetAfter = %s, want in (%s, %s]", what, r.ResetAfter, lo, hi)
	}
}

// sleepUntil sleeps until t0 + d.
func sleepUntil(t0 time.Time, d time.Duration) {
	time.Sleep(time.Until(t0.Add(d)))
}

func testInvalidRule(t *testing.T, s *suite) {
	l := s.limiter(t)
	for _, rule := range []ratelimit.Rule{
		{Points: 1},
		{Points: 1, Duration: -time.Second},
		{Points: 1, Duration: time.Millisecond - 1},
		{Points: -1, Duration: time.Second},
		{Points: 1, Duration: time.Second, BlockDuration: -time.Second},
	} {
		_, err := l.Consume(t.Context(), s.key(t, "k"), rule)
		if !errors.Is(err, ratelimit.ErrInvalidRule) {
			t.Errorf("Consume with %+v: error %v, want one wrapping ErrInvalidRule", rule, err)
		}
	}
	// The smallest valid rule is accepted, and the invalid ones did not
	// count: the key's first request is allowed.
	rule := ratelimit.Rule{Points: 1, Duration: time.Millisecond}
	if _, err := l.Consume(t.Context(), s.key(t, "min"), rule); err != nil {
		t.Errorf("Consume with %+v: %v", rule, err)
	}
	rule = ratelimit.Rule{Points: 1, Duration: 10 * time.Second}
	wantAllowed(t, "first valid request after invalid ones", consume(t, l, s.key(t, "k"), rule), rule, 0)
}

func testLimitEqualsPoints(t *testing.T, s *suite) {
	l := s.limiter(t)
	for _, points := range []int{1, 3, 7, 1000} {
		rule := ratelimit.Rule{Points: points, Duration: 10 * time.Second}
		key := s.key(t, "points-"+strconv.Itoa(points))
		wantAllowed(t, "first request", consume(t, l, key, rule), rule, points-1)
	}
	// Limit is the rule's Points on refusals too, blocked or not.
	for _, rule := range []ratelimit.Rule{
		{Points: 2, Duration: 10 * time.Second},
		{Points: 2, Duration: 10 * time.Second, BlockDuration: 5 * time.Second},
	} {
		key := s.key(t, "refused-"+rule.BlockDuration.String())
		consume(t, l, key, rule)
		consume(t, l, key, rule)
		r := consume(t, l, key, rule)
		if r.Allowed || r.Limit != rule.Points {
			t.Errorf("third request under %+v: %+v, want refused with Limit %d", rule, r, rule.Points)
		}
	}
}

func testCountsDown(t *testing.T, s *suite) {
	l := s.limiter(t)
	rule := ratelimit.Rule{Points: 5, Duration: 10 * time.Second}
	key := s.key(t, "k")
	prev := rule.Duration
	for i := range rule.Points {
		r := consume(t, l, key, rule)
		wantAllowed(t, "request "+strconv.Itoa(i+1), r, rule, rule.Points-1-i)
		// The window does not move: ResetAfter only counts down (Redis
		// reports milliseconds, hence the tolerance).
		if r.ResetAfter > prev+2*time.Millisecond {
			t.Errorf("request %d: ResetAfter = %s, grew from %s", i+1, r.ResetAfter, prev)
		}
		prev = r.ResetAfter
	}
	for i := range 3 {
		r := consume(t, l, key, rule)
		wantRefused(t, "request "+strconv.Itoa(rule.Points+1+i), r, rule, rule.Duration/2, rule.Duration)
	}
}

func testRefusedUntilWindowEnds(t *testing.T, s *suite) {
	l := s.limiter(t)
	rule := ratelimit.Rule{Points: 2, Duration: 10 * time.Second}
	key := s.key(t, "k")
	consume(t, l, key, rule)
	first := consume(t, l, key, rule)
	prev := first.ResetAfter
	for i := range 5 {
		r := consume(t, l, key, rule)
		// Without a block, a refusal lasts as long as the window: what
		// remains of it, not more.
		wantRefused(t, "refusal "+strconv.Itoa(i+1), r, rule, rule.Duration/2, first.ResetAfter+2*time.Millisecond)
		if r.ResetAfter > prev+2*time.Millisecond {
			t.Errorf("refusal %d: ResetAfter = %s, grew from %s", i+1, r.ResetAfter, prev)
		}
		prev = r.ResetAfter
	}
}

func testWindowExpires(t *testing.T, s *suite) {
	l := s.limiter(t)
	rule := ratelimit.Rule{Points: 2, Duration: 200 * time.Millisecond}
	key := s.key(t, "k")
	t0 := time.Now()
	consume(t, l, key, rule)
	consume(t, l, key, rule)
	if r := consume(t, l, key, rule); r.Allowed {
		t.Fatalf("third request: %+v, want refused", r)
	}
	sleepUntil(t0, rule.Duration+slack)
	// A new window: the full Points again.
	wantAllowed(t, "first request of the next window", consume(t, l, key, rule), rule, 1)
	wantAllowed(t, "second request of the next window", consume(t, l, key, rule), rule, 0)
	if r := consume(t, l, key, rule); r.Allowed {
		t.Errorf("third request of the next window: %+v, want refused", r)
	}
}

func testWindowStartsAtFirstRequest(t *testing.T, s *suite) {
	l := s.limiter(t)
	// A window that is not a whole number of seconds, so a limiter
	// aligning windows to a clock boundary (or to its own start) shows.
	rule := ratelimit.Rule{Points: 10, Duration: 2700 * time.Millisecond}
	first, second := s.key(t, "first"), s.key(t, "second")
	const tol = 5 * time.Millisecond // Redis reports milliseconds
	a := time.Now()
	r1 := consume(t, l, first, rule)
	b := time.Now()
	// The window starts at the first request, somewhere in [a, b].
	if lo := rule.Duration - b.Sub(a) - tol; r1.ResetAfter < lo || r1.ResetAfter > rule.Duration {
		t.Errorf("first key, request 1: ResetAfter = %s, want in [%s, %s]", r1.ResetAfter, lo, rule.Duration)
	}
	time.Sleep(300 * time.Millisecond)
	c := time.Now()
	r2 := consume(t, l, first, rule)
	d := time.Now()
	// The second request is seen in [c, d]: what remains of the window is
	// Duration minus the time since the first request.
	lo, hi := rule.Duration-d.Sub(a)-tol, rule.Duration-c.Sub(b)+tol
	if r2.ResetAfter < lo || r2.ResetAfter > hi {
		t.Errorf("first key, request 2, %s after request 1: ResetAfter = %s, want in [%s, %s]",
			c.Sub(b).Round(time.Millisecond), r2.ResetAfter, lo, hi)
	}
	wantAllowed(t, "first key, request 2", r2, rule, rule.Points-2)
	// Another key's window starts at its own first request, now.
	c = time.Now()
	r3 := consume(t, l, second, rule)
	d = time.Now()
	if lo := rule.Duration - d.Sub(c) - tol; r3.ResetAfter < lo || r3.ResetAfter > rule.Duration {
		t.Errorf("second key, request 1, %s after the first key's: ResetAfter = %s, want in [%s, %s]",
			c.Sub(b).Round(time.Millisecond), r3.ResetAfter, lo, rule.Duration)
	}
}

func testZeroPoints(t *testing.T, s *suite) {
	l := s.limiter(t)
	rule := ratelimit.Rule{Points: 0, Duration: 10 * time.Second}
	key := s.key(t, "k")
	for i := range 3 {
		wantRefused(t, "request "+strconv.Itoa(i+1), consume(t, l, key, rule), rule, rule.Duration/2, rule.Duration)
	}
	// With a block, the very first request starts it.
	rule = ratelimit.Rule{Points: 0, Duration: time.Second, BlockDuration: 5 * time.Second}
	key = s.key(t, "block")
	for i := range 3 {
		wantRefused(t, "blocked request "+strconv.Itoa(i+1), consume(t, l, key, rule), rule,
			rule.BlockDuration/2, rule.BlockDuration)
	}
}

func testBlockStarts(t *testing.T, s *suite) {
	l := s.limiter(t)
	// A block shorter than the window replaces its end...
	rule := ratelimit.Rule{Points: 2, Duration: 30 * time.Second, BlockDuration: 5 * time.Second}
	key := s.key(t, "short-block")
	wantAllowed(t, "request 1", consume(t, l, key, rule), rule, 1)
	wantAllowed(t, "request 2", consume(t, l, key, rule), rule, 0)
	wantRefused(t, "request 3", consume(t, l, key, rule), rule, rule.BlockDuration/2, rule.BlockDuration)
	wantRefused(t, "request 4", consume(t, l, key, rule), rule, rule.BlockDuration/2, rule.BlockDuration)

	// ...and one longer than the window outlasts it.
	rule = ratelimit.Rule{Points: 1, Duration: 2 * time.Second, BlockDuration: 10 * time.Second}
	key = s.key(t, "long-block")
	wantAllowed(t, "request 1", consume(t, l, key, rule), rule, 0)
	wantRefused(t, "request 2", consume(t, l, key, rule), rule, rule.BlockDuration/2, rule.BlockDuration)
}

func testBlockOutlastsWindow(t *testing.T, s *suite) {
	l := s.limiter(t)
	rule := ratelimit.Rule{Points: 1, Duration: 200 * time.Millisecond, BlockDuration: 3 * time.Second}
	key := s.key(t, "k")
	t0 := time.Now()
	wantAllowed(t, "request 1", consume(t, l, key, rule), rule, 0)
	r1 := consume(t, l, key, rule)
	started := time.Now() // the block started before this
	wantRefused(t, "request 2 (starts the block)", r1, rule, rule.BlockDuration/2, rule.BlockDuration)
	sleepUntil(t0, rule.Duration+slack)
	elapsed := time.Since(started)
	r2 := consume(t, l, key, rule)
	// Past the window's end the key is still blocked, and this refusal did
	// not extend the block: it ends when it did, at the latest.
	wantRefused(t, "request 3 (after the window)", r2, rule, 0, r1.ResetAfter-elapsed+5*time.Millisecond)
}

func testBlockNotExtended(t *testing.T, s *suite) {
	l := s.limiter(t)
	rule := ratelimit.Rule{Points: 1, Duration: 10 * time.Second, BlockDuration: 300 * time.Millisecond}
	key := s.key(t, "k")
	wantAllowed(t, "request 1", consume(t, l, key, rule), rule, 0)
	// The block is counted from the refusal, not from the window's start.
	time.Sleep(100 * time.Millisecond)
	before := time.Now()
	r1 := consume(t, l, key, rule)
	started := time.Now() // the block started in [before, started]
	wantRefused(t, "request 2 (starts the block)", r1, rule,
		rule.BlockDuration-started.Sub(before)-5*time.Millisecond, rule.BlockDuration)
	time.Sleep(100 * time.Millisecond)
	elapsed := time.Since(started)
	r2 := consume(t, l, key, rule)
	if r2.Allowed {
		if time.Since(before) < rule.BlockDuration {
			t.Fatalf("request 3, %s into a block of %s: allowed", elapsed, rule.BlockDuration)
		}
		t.Skipf("the machine stalled past the block's end (%s after it started)", time.Since(before))
	}
	// This refusal did not move the block's end.
	wantRefused(t, "request 3 (during the block)", r2, rule, 0, r1.ResetAfter-elapsed+5*time.Millisecond)
	// The block ends BlockDuration after it started, although the window
	// (10s) has not: the key starts a new window with the full Points.
	sleepUntil(started, rule.BlockDuration+slack)
	r := consume(t, l, key, rule)
	wantAllowed(t, "request after the block", r, rule, 0)
	if r.ResetAfter <= rule.Duration/2 {
		t.Errorf("request after the block: ResetAfter = %s, want a new window of %s", r.ResetAfter, rule.Duration)
	}
}

func testKeysIndependent(t *testing.T, s *suite) {
	l := s.limiter(t)
	rule := ratelimit.Rule{Points: 2, Duration: 10 * time.Second, BlockDuration: 10 * time.Second}
	a, b := s.key(t, "a"), s.key(t, "b")
	consume(t, l, a, rule)
	consume(t, l, a, rule)
	if r := consume(t, l, a, rule); r.Allowed {
		t.Fatalf("key a, request 3: %+v, want refused", r)
	}
	wantAllowed(t, "key b, request 1", consume(t, l, b, rule), rule, 1)
	// A key that is a prefix of another is a different key.
	wantAllowed(t, "key a's prefix, request 1", consume(t, l, a[:len(a)-1], rule), rule, 1)
	reset(t, l, b)
	if r := consume(t, l, a, rule); r.Allowed {
		t.Errorf("key a after resetting b: %+v, want refused", r)
	}
}

func testReset(t *testing.T, s *suite) {
	l := s.limiter(t)
	rule := ratelimit.Rule{Points: 2, Duration: 10 * time.Second}
	key := s.key(t, "k")
	consume(t, l, key, rule)
	consume(t, l, key, rule)
	if r := consume(t, l, key, rule); r.Allowed {
		t.Fatalf("request 3: %+v, want refused", r)
	}
	reset(t, l, key)
	wantAllowed(t, "request 1 after Reset", consume(t, l, key, rule), rule, 1)
	// Reset mid-window too.
	reset(t, l, key)
	wantAllowed(t, "request 1 after the second Reset", consume(t, l, key, rule), rule, 1)
	wantAllowed(t, "request 2 after the second Reset", consume(t, l, key, rule), rule, 0)
}

func testResetMidBlock(t *testing.T, s *suite) {
	l := s.limiter(t)
	rule := ratelimit.Rule{Points: 1, Duration: 10 * time.Second, BlockDuration: 30 * time.Second}
	key := s.key(t, "k")
	consume(t, l, key, rule)
	wantRefused(t, "request 2 (starts the block)", consume(t, l, key, rule), rule,
		rule.BlockDuration/2, rule.BlockDuration)
	reset(t, l, key)
	r := consume(t, l, key, rule)
	wantAllowed(t, "request 1 after Reset", r, rule, 0)
	// And the key is counted afresh: the next request blocks it again.
	wantRefused(t, "request 2 after Reset", consume(t, l, key, rule), rule,
		rule.BlockDuration/2, rule.BlockDuration)
}

func testResetUnknown(t *testing.T, s *suite) {
	l := s.limiter(t)
	key := s.key(t, "never-used")
	reset(t, l, key)
	reset(t, l, key)
	rule := ratelimit.Rule{Points: 1, Duration: 10 * time.Second}
	wantAllowed(t, "request 1 after resetting an unknown key", consume(t, l, key, rule), rule, 0)
}

func testConcurrent(t *testing.T, s *suite) {
	l := s.limiter(t)
	const goroutines, each, points = 8, 25, 50
	rule := ratelimit.Rule{Points: points, Duration: 30 * time.Second}
	key := s.key(t, "k")
	var (
		mu        sync.Mutex
		remaining = make(map[int]int) // Remaining of allowed requests → how many
		refused   int
		wg        sync.WaitGroup
		start     = make(chan struct{})
	)
	for range goroutines {
		wg.Go(func() {
			<-start
			for range each {
				r, err := l.Consume(t.Context(), key, rule)
				if err != nil {
					t.Errorf("Consume: %v", err)
					return
				}
				mu.Lock()
				if r.Allowed {
					remaining[r.Remaining]++
				} else {
					refused++
					if r.Remaining != 0 {
						t.Errorf("refused with Remaining %d", r.Remaining)
					}
				}
				mu.Unlock()
			}
		})
	}
	close(start)
	wg.Wait()
	if t.Failed() {
		return
	}
	allowed := 0
	for _, n := range remaining {
		allowed += n
	}
	if allowed != points || refused != goroutines*each-points {
		t.Fatalf("%d concurrent requests with Points %d: %d allowed, %d refused; want %d allowed",
			goroutines*each, points, allowed, refused, points)
	}
	// Each count was handed out once: Remaining took every value in
	// [0, points) exactly once.
	for i := range points {
		if remaining[i] != 1 {
			t.Errorf("Remaining %d was reported %d times, want once", i, remaining[i])
		}
	}
}
