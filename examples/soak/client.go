package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// client sends the soak's requests to the server's API and counts them.
type client struct {
	base string // http://127.0.0.1:port/api
	hc   *http.Client
	st   *stats
}

func newClient(base string, workers int, logf func(string, ...any)) *client {
	tr := &http.Transport{
		Proxy:               nil, // loopback only, never a proxy from the environment
		MaxIdleConns:        2*workers + 8,
		MaxIdleConnsPerHost: 2*workers + 8,
		IdleConnTimeout:     90 * time.Second,
	}
	hc := &http.Client{Transport: tr, Timeout: 60 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return &client{base: base, hc: hc, st: newStats(logf)}
}

// call is one request.
type call struct {
	op     string // the operation it belongs to, for the counts
	method string
	path   string // under /api
	body   any    // nil, []byte (sent as it is, with ctype) or a value sent as JSON
	ctype  string
	key    string // an API key, or "Bearer <token>"
	header map[string]string
	tenant string // the super admin's selected tenant (cookie)
	want   []int  // the statuses the soak expects; another is "unexpected"
}

// answer is a response, read whole.
type answer struct {
	status int
	body   []byte
	header http.Header
	err    error
}

// ok reports a 2xx.
func (a answer) ok() bool { return a.err == nil && a.status >= 200 && a.status < 300 }

// decode reads the JSON body into v.
func (a answer) decode(v any) bool {
	return a.err == nil && json.Unmarshal(a.body, v) == nil
}

func (c *client) do(ctx context.Context, cl call) answer {
	var rd io.Reader
	ctype := cl.ctype
	switch b := cl.body.(type) {
	case nil:
	case []byte:
		rd = bytes.NewReader(b)
	default:
		data, err := json.Marshal(b)
		if err != nil {
			panic(fmt.Sprintf("soak: %s: %v", cl.op, err))
		}
		rd = bytes.NewReader(data)
		ctype = "application/json"
	}
	req, err := http.NewRequestWithContext(ctx, cl.method, c.base+cl.path, rd)
	if err != nil {
		panic(fmt.Sprintf("soak: %s: %v", cl.op, err))
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	switch {
	case strings.HasPrefix(cl.key, "Bearer "):
		req.Header.Set("Authorization", cl.key)
	case cl.key != "":
		req.Header.Set("X-Api-Key", cl.key)
	}
	for k, v := range cl.header {
		req.Header.Set(k, v)
	}
	if cl.tenant != "" {
		req.AddCookie(&http.Cookie{Name: "app_selected_tenant", Value: cl.tenant})
	}
	start := time.Now()
	resp, err := c.hc.Do(req)
	var a answer
	if err != nil {
		a.err = err
	} else {
		a.status, a.header = resp.StatusCode, resp.Header
		a.body, a.err = io.ReadAll(io.LimitReader(resp.Body, 16<<20))
		resp.Body.Close()
	}
	if ctx.Err() != nil && a.err != nil {
		return a // cancelled by the soak itself (interrupted): not the server's doing
	}
	c.st.record(cl, a, time.Since(start))
	return a
}

// stats counts the requests: in all, by status class, by operation and
// status, and the failures, printing the first few of each kind.
type stats struct {
	logf       func(string, ...any)
	total      atomic.Int64
	class      [6]atomic.Int64 // by status / 100
	transport  atomic.Int64    // no answer (reset, timeout)
	unexpected atomic.Int64    // an answer the soak did not expect (5xx included)

	mu                          sync.Mutex
	ops                         map[string]*opStat
	logged5xx, loggedX, loggedT int
}

type opStat struct {
	n         int64
	codes     map[int]int64
	sum, peak time.Duration
}

func newStats(logf func(string, ...any)) *stats {
	return &stats{logf: logf, ops: map[string]*opStat{}}
}

const (
	maxLogged5xx        = 10
	maxLoggedUnexpected = 25
	maxLoggedTransport  = 10
)

func (s *stats) record(cl call, a answer, d time.Duration) {
	s.total.Add(1)
	now := time.Now().Format("15:04:05")
	s.mu.Lock()
	defer s.mu.Unlock()
	o := s.ops[cl.op]
	if o == nil {
		o = &opStat{codes: map[int]int64{}}
		s.ops[cl.op] = o
	}
	o.n++
	o.sum += d
	o.peak = max(o.peak, d)
	if a.err != nil {
		s.transport.Add(1)
		o.codes[0]++
		if s.loggedT < maxLoggedTransport {
			s.loggedT++
			s.logf("%s TRANSPORT ERROR %s: %s %s after %s: %v", now, cl.op, cl.method, cl.path, d.Round(time.Millisecond), a.err)
		}
		return
	}
	o.codes[a.status]++
	if c := a.status / 100; c >= 1 && c <= 5 {
		s.class[c].Add(1)
	}
	expected := slices.Contains(cl.want, a.status)
	if !expected {
		s.unexpected.Add(1)
	}
	switch {
	case a.status >= 500:
		if s.logged5xx < maxLogged5xx {
			s.logged5xx++
			s.logf("%s 5xx %s: %s %s → %d %s", now, cl.op, cl.method, cl.path, a.status, oneLine(a.body))
		}
	case !expected:
		if s.loggedX < maxLoggedUnexpected {
			s.loggedX++
			s.logf("%s unexpected %s: %s %s → %d (want %v) %s", now, cl.op, cl.method, cl.path, a.status, cl.want, oneLine(a.body))
		}
	}
}

// opCum is an operation's count and total time so far.
type opCum struct {
	n   int64
	sum time.Duration
}

func (s *stats) snapshot() map[string]opCum {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]opCum, len(s.ops))
	for op, o := range s.ops {
		out[op] = opCum{n: o.n, sum: o.sum}
	}
	return out
}

// opLine is one operation's counts, for the report.
type opLine struct {
	op    string
	n     int64
	codes string
	mean  time.Duration
	peak  time.Duration
}

func (s *stats) lines() []opLine {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []opLine
	for op, o := range s.ops {
		var codes []int
		for c := range o.codes {
			codes = append(codes, c)
		}
		sort.Ints(codes)
		var parts []string
		for _, c := range codes {
			name := fmt.Sprint(c)
			if c == 0 {
				name = "no answer"
			}
			parts = append(parts, fmt.Sprintf("%s×%d", name, o.codes[c]))
		}
		out = append(out, opLine{op: op, n: o.n, codes: strings.Join(parts, " "), mean: o.sum / time.Duration(o.n), peak: o.peak})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].op < out[j].op })
	return out
}

// pacer keeps an operation under a rate limit: at most limit takes in any
// window (a sliding window, so also in any fixed window the server counts).
type pacer struct {
	mu     sync.Mutex
	limit  int
	window time.Duration
	times  []time.Time
}

func newPacer(limit int, window time.Duration) *pacer {
	return &pacer{limit: limit, window: window}
}

// take reserves n requests now, or reports false.
func (p *pacer) take(n int) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	cut := 0
	for cut < len(p.times) && now.Sub(p.times[cut]) >= p.window {
		cut++
	}
	p.times = p.times[cut:]
	if len(p.times)+n > p.limit {
		return false
	}
	for range n {
		p.times = append(p.times, now)
	}
	return true
}
