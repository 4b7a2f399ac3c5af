package main

import (
	"bufio"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// sample is one reading of the server's /metrics and the soak's counts.
type sample struct {
	At             time.Duration // since the traffic started
	Requests       int64         // sent by the soak and answered (or failed)
	C4xx, C5xx     int64
	Transport      int64
	Goroutines     float64
	HeapInuse      float64 // bytes
	HeapAlloc      float64
	NextGC         float64
	RSS            float64
	FDs            float64
	ServerRequests float64 // tenantkit_http_requests_total
	Server5xx      float64
	JobsQueued     float64 // tenantkit_jobs_queued, every kind and state
	DBOpen         float64 // tenantkit_db_connections{state="open"}
	Received       int64   // requests the receiver got (webhooks, CALL_WEBHOOK)

	// Of a printed row, over the -fit-every samples since the previous
	// row (this one included): the median goroutine count and the lowest
	// heap in use (the floor of the GC's sawtooth).
	GMed, HeapFloor float64
	ops             map[string]opCum // each operation's count and time so far
}

type sampler struct {
	metricsURL string
	stats      *stats
	recv       *receiver
	hc         *http.Client
	logf       func(string, ...any)
	fit        []sample // every sample taken
	rows       []sample // the printed ones
	dumpDir    string   // with -pprof: where stall dumps go
	dumps      int
}

// watchStall reports an interval in which the requests answered fell
// under a fifth of the median interval's, and with -pprof saves the
// server's goroutines then (a few times at most).
func (sm *sampler) watchStall() {
	n := len(sm.fit)
	if n < 4 {
		return
	}
	var deltas []float64
	for i := 1; i < n; i++ {
		deltas = append(deltas, float64(sm.fit[i].Requests-sm.fit[i-1].Requests)/(sm.fit[i].At-sm.fit[i-1].At).Seconds())
	}
	last, med := deltas[len(deltas)-1], median(deltas[:len(deltas)-1])
	if last >= med/5 {
		return
	}
	at := sm.fit[n-1].At
	msg := fmt.Sprintf("%s STALL: %.1f requests/s over the last %s (median %.1f)", fmtDur(at), last, (sm.fit[n-1].At - sm.fit[n-2].At).Round(time.Second), med)
	if sm.dumpDir != "" && sm.dumps < 5 {
		sm.dumps++
		path := fmt.Sprintf("%s/stall-%d.txt", sm.dumpDir, int(at.Seconds()))
		if err := sm.save(strings.Replace(sm.metricsURL, "/metrics", "/debug/pprof/goroutine?debug=2", 1), path); err == nil {
			msg += "; goroutines saved to " + path
		} else {
			msg += "; goroutine dump: " + err.Error()
		}
	}
	sm.logf("%s", msg)
}

func (sm *sampler) save(u, path string) error {
	resp, err := sm.hc.Get(u)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	_, err = io.Copy(f, resp.Body)
	return errors.Join(err, f.Close())
}

func (sm *sampler) take(at time.Duration) (sample, error) {
	s := sample{At: at, Requests: sm.stats.total.Load(), C4xx: sm.stats.class[4].Load(), C5xx: sm.stats.class[5].Load(),
		Transport: sm.stats.transport.Load(), Received: sm.recv.hits.Load()}
	resp, err := sm.hc.Get(sm.metricsURL)
	if err != nil {
		return s, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 400))
		return s, fmt.Errorf("GET /metrics: %d %s", resp.StatusCode, oneLine(body))
	}
	found := map[string]bool{}
	err = parseMetrics(resp.Body, func(name, labels string, v float64) {
		found[name] = true
		switch name {
		case "go_goroutines":
			s.Goroutines = v
		case "go_memstats_heap_inuse_bytes":
			s.HeapInuse = v
		case "go_memstats_heap_alloc_bytes":
			s.HeapAlloc = v
		case "go_memstats_next_gc_bytes":
			s.NextGC = v
		case "process_resident_memory_bytes":
			s.RSS = v
		case "process_open_fds":
			s.FDs = v
		case "tenantkit_http_requests_total":
			s.ServerRequests += v
			if strings.Contains(labels, `code="5xx"`) {
				s.Server5xx += v
			}
		case "tenantkit_jobs_queued":
			s.JobsQueued += v
		case "tenantkit_db_connections":
			if strings.Contains(labels, `state="open"`) {
				s.DBOpen = v
			}
		}
	})
	if err != nil {
		return s, err
	}
	sm.fit = append(sm.fit, s)
	for _, name := range []string{"go_goroutines", "go_memstats_heap_inuse_bytes", "process_resident_memory_bytes", "process_open_fds"} {
		if !found[name] {
			return s, fmt.Errorf("/metrics has no %s", name)
		}
	}
	return s, nil
}

// parseMetrics reads Prometheus' text format: each sample line as its
// name, its labels ({…} or "") and its value.
func parseMetrics(r io.Reader, fn func(name, labels string, v float64)) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		var name, labels, rest string
		if i := strings.IndexByte(line, '{'); i >= 0 && i < strings.IndexByte(line, ' ') {
			j := strings.LastIndexByte(line, '}')
			if j < i {
				continue
			}
			name, labels, rest = line[:i], line[i:j+1], line[j+1:]
		} else {
			name, rest, _ = strings.Cut(line, " ")
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			continue
		}
		v, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			continue
		}
		fn(name, labels, v)
	}
	return sc.Err()
}

const mib = 1 << 20

func (sm *sampler) header() {
	sm.logf("%6s %10s %8s %6s %4s %6s %6s %9s %9s %9s %8s %5s %6s %6s %9s",
		"time", "requests", "req/s", "4xx", "5xx", "gorout", "g(med)", "heapInuse", "heapFloor", "nextGC", "RSS", "fds", "jobsQ", "dbOpen", "received")
}

// row completes s with the figures of its interval, prints it and keeps
// it.
func (sm *sampler) row(s sample) sample {
	var prev *sample
	if n := len(sm.rows); n > 0 {
		prev = &sm.rows[n-1]
	}
	var g []float64
	s.HeapFloor = s.HeapInuse
	for _, f := range sm.fit {
		if (prev == nil || f.At > prev.At) && f.At <= s.At {
			g = append(g, f.Goroutines)
			s.HeapFloor = min(s.HeapFloor, f.HeapInuse)
		}
	}
	s.GMed = s.Goroutines
	if len(g) > 0 {
		s.GMed = median(g)
	}
	if sm.stats != nil {
		s.ops = sm.stats.snapshot()
	}
	rate := "-"
	if prev != nil && s.At > prev.At {
		rate = fmt.Sprintf("%.1f", float64(s.Requests-prev.Requests)/(s.At-prev.At).Seconds())
	}
	sm.logf("%6s %10d %8s %6d %4d %6.0f %6.0f %8.1fM %8.1fM %8.1fM %7.1fM %5.0f %6.0f %6.0f %9d",
		fmtDur(s.At), s.Requests, rate, s.C4xx, s.C5xx, s.Goroutines, s.GMed, s.HeapInuse/mib, s.HeapFloor/mib, s.NextGC/mib, s.RSS/mib, s.FDs,
		s.JobsQueued, s.DBOpen, s.Received)
	sm.rows = append(sm.rows, s)
	return s
}

func fmtDur(d time.Duration) string {
	d = d.Round(time.Second)
	return fmt.Sprintf("%02d:%02d", int(d.Minutes()), int(d.Seconds())%60)
}

// verdict is the judgement of a run's samples (the rule is in the
// package comment).
type verdict struct {
	Judged         bool // false for runs shorter than minJudged
	Flat           bool
	GoroutinesFlat bool
	HeapFlat       bool
	Warmup         time.Duration
	Reasons        []string // why not flat

	// Goroutines: the rows' interval medians after the warm-up.
	GMedian, GMin, GMax float64
	GSlope10            float64 // per 10 minutes, second half, interval medians (Theil–Sen)
	GSlopeLS10          float64 // the same by least squares
	// Heap in use: the rows' interval floors over the second half (judged,
	// Theil–Sen; and by least squares), and every sample (reported).
	HeapFloorMedian, HeapFloorSlope10 float64
	HeapFloorSlopeLS10                float64
	HeapMean, HeapSlope10             float64
	RSSMean, RSSSlope10               float64
	NextGCMean, NextGCSlope10         float64
	FDMin, FDMax                      float64
	JobsMax                           float64
	SecondHalfRows                    int
}

// minJudged is the shortest run the verdict judges.
const minJudged = 10 * time.Minute

// The thresholds of "flat".
const (
	goroutineBand       = 0.10 // each interval median within ±10% of their median
	goroutineSlopeLimit = 0.05 // of the median, per 10 minutes
	heapSlopeLimit      = 0.10 // of the mean, per 10 minutes
)

func judge(fit, rows []sample, cfg config, elapsed time.Duration) verdict {
	v := verdict{Warmup: cfg.Warmup, Judged: elapsed >= minJudged}
	var g []float64
	for i, s := range rows {
		if i > 0 && s.At >= cfg.Warmup {
			g = append(g, s.GMed)
			v.FDMin = minNonZero(v.FDMin, s.FDs)
			v.FDMax = max(v.FDMax, s.FDs)
		}
	}
	for _, s := range fit {
		v.JobsMax = max(v.JobsMax, s.JobsQueued)
	}
	if len(g) == 0 {
		v.Judged = false
		return v
	}
	v.GMedian, v.GMin, v.GMax = median(g), slices.Min(g), slices.Max(g)

	var xs, gs, fs []float64
	for i, s := range rows {
		if i > 0 && s.At >= elapsed/2 {
			xs = append(xs, s.At.Minutes())
			gs = append(gs, s.GMed)
			fs = append(fs, s.HeapFloor)
		}
	}
	v.SecondHalfRows = len(xs)
	if len(xs) >= 2 {
		v.GSlope10, v.GSlopeLS10 = 10*theilSen(xs, gs), 10*slope(xs, gs)
		v.HeapFloorMedian = median(fs)
		v.HeapFloorSlope10, v.HeapFloorSlopeLS10 = 10*theilSen(xs, fs), 10*slope(xs, fs)
	}
	var fx, hs, rs, ns []float64
	for _, s := range fit {
		if s.At >= elapsed/2 {
			fx = append(fx, s.At.Minutes())
			hs = append(hs, s.HeapInuse)
			rs = append(rs, s.RSS)
			ns = append(ns, s.NextGC)
		}
	}
	if len(fx) >= 2 {
		v.HeapMean, v.HeapSlope10 = mean(hs), 10*slope(fx, hs)
		v.RSSMean, v.RSSSlope10 = mean(rs), 10*slope(fx, rs)
		v.NextGCMean, v.NextGCSlope10 = mean(ns), 10*slope(fx, ns)
	}
	if len(xs) < 10 {
		v.Judged = false
	}

	v.GoroutinesFlat = true
	lo, hi := v.GMedian*(1-goroutineBand), v.GMedian*(1+goroutineBand)
	if v.GMin < lo || v.GMax > hi {
		v.GoroutinesFlat = false
		v.Reasons = append(v.Reasons, fmt.Sprintf("goroutines (interval medians) left the ±10%% band around their median %.0f: %.0f–%.0f", v.GMedian, v.GMin, v.GMax))
	}
	if v.GSlope10 > goroutineSlopeLimit*v.GMedian {
		v.GoroutinesFlat = false
		v.Reasons = append(v.Reasons, fmt.Sprintf("goroutines grow %+.1f per 10 min over the second half (limit +%.1f)", v.GSlope10, goroutineSlopeLimit*v.GMedian))
	}
	v.HeapFlat = v.HeapFloorSlope10 <= heapSlopeLimit*v.HeapFloorMedian
	if !v.HeapFlat {
		v.Reasons = append(v.Reasons, fmt.Sprintf("heap in use (interval floors) grows %+.1f%% per 10 min over the second half (limit +10%%)",
			100*v.HeapFloorSlope10/v.HeapFloorMedian))
	}
	v.Flat = v.GoroutinesFlat && v.HeapFlat
	return v
}

func minNonZero(a, b float64) float64 {
	if a == 0 {
		return b
	}
	return min(a, b)
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	sort.Float64s(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

func mean(v []float64) float64 {
	var s float64
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}

// theilSen is the Theil–Sen slope of y over x: the median of the slopes
// between every two points, which a few outliers (a sign-in's Argon2id
// memory caught in every sample of an interval) do not move.
func theilSen(x, y []float64) float64 {
	var s []float64
	for i := range x {
		for j := i + 1; j < len(x); j++ {
			if x[j] != x[i] {
				s = append(s, (y[j]-y[i])/(x[j]-x[i]))
			}
		}
	}
	if len(s) == 0 {
		return 0
	}
	return median(s)
}

// slope is the least-squares slope of y over x.
func slope(x, y []float64) float64 {
	mx, my := mean(x), mean(y)
	var num, den float64
	for i := range x {
		num += (x[i] - mx) * (y[i] - my)
		den += (x[i] - mx) * (x[i] - mx)
	}
	if den == 0 {
		return 0
	}
	return num / den
}

// report prints the totals, the operations, the condensed tables and the
// verdict.
func report(logf func(string, ...any), res *result, st *stats, recv *receiver, cfg config) {
	logf("")
	logf("== totals (%s, %d workers, %s)", res.Engine, cfg.Workers, res.Elapsed.Round(time.Second))
	secs := res.Elapsed.Seconds()
	logf("requests %d (%.1f/s): 1xx %d, 2xx %d, 3xx %d, 4xx %d, 5xx %d; no answer %d; unexpected status %d",
		res.Requests, float64(res.Requests)/secs, st.class[1].Load(), st.class[2].Load(), st.class[3].Load(), st.class[4].Load(),
		st.class[5].Load(), st.transport.Load(), st.unexpected.Load())
	if n := len(res.Samples); n > 0 {
		last := res.Samples[n-1]
		logf("server: %.0f requests counted by its metrics (%.0f 5xx), %.0f jobs queued at the end", last.ServerRequests, last.Server5xx, last.JobsQueued)
	}
	logf("receiver: %d requests (%d answered 503 on purpose) by path: %v", res.ReceiverHits, res.ReceiverFails, recv.counts())
	if a := res.IdleAfter; a != nil {
		b := res.IdleBefore
		logf("idle before the traffic → %s after it: goroutines %.0f → %.0f, heap in use %.1f → %.1f MiB, RSS %.1f → %.1f MiB, fds %.0f → %.0f, jobs queued %.0f → %.0f",
			cfg.IdleSettle, b.Goroutines, a.Goroutines, b.HeapInuse/mib, a.HeapInuse/mib, b.RSS/mib, a.RSS/mib, b.FDs, a.FDs, b.JobsQueued, a.JobsQueued)
	}

	logf("")
	logf("== operations (count, statuses, mean and max latency)")
	for _, l := range st.lines() {
		logf("%-24s %8d  mean %7s  max %8s  %s", l.op, l.n, l.mean.Round(10*time.Microsecond), l.peak.Round(time.Millisecond), l.codes)
	}

	rows := condensedTable(logf, res.Samples, cfg.SummaryEvery)
	latencyTable(logf, rows)

	printVerdict(logf, res.Verdict, res.Elapsed)
	if res.N5xx > 0 {
		logf("FAILED: %d responses were 5xx", res.N5xx)
	}
	if res.Transport > 0 {
		logf("FAILED: %d requests got no answer", res.Transport)
	}
}

// condensedTable prints the rows nearest each multiple of every as a
// Markdown table and returns them.
func condensedTable(logf func(string, ...any), samples []sample, every time.Duration) []sample {
	rows := condensed(samples, every)
	logf("")
	logf("== condensed table (every %s; goroutines: the median of the interval's samples; heap floor: their lowest heap in use)", every)
	logf("| time | requests | req/s | 5xx | goroutines | heap in use (MiB) | heap floor (MiB) | RSS (MiB) | open fds | jobs queued |")
	logf("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for i, s := range rows {
		rate := "–"
		if i > 0 && s.At > rows[i-1].At {
			rate = fmt.Sprintf("%.0f", float64(s.Requests-rows[i-1].Requests)/(s.At-rows[i-1].At).Seconds())
		}
		logf("| %s | %d | %s | %d | %.0f | %.1f | %.1f | %.1f | %.0f | %.0f |", fmtDur(s.At), s.Requests, rate, s.C5xx, s.GMed,
			s.HeapInuse/mib, s.HeapFloor/mib, s.RSS/mib, s.FDs, s.JobsQueued)
	}
	return rows
}

// printVerdict prints the verdict's figures and conclusion.
func printVerdict(logf func(string, ...any), v verdict, elapsed time.Duration) {
	logf("")
	logf("== verdict (warm-up %s, second half from %s, %d rows)", v.Warmup, fmtDur(elapsed/2), v.SecondHalfRows)
	logf("goroutines (interval medians after the warm-up): median %.0f, range %.0f–%.0f (%+.1f%% / %+.1f%%); slope over the second half %+.2f per 10 min (least squares %+.2f)",
		v.GMedian, v.GMin, v.GMax, pct(v.GMin, v.GMedian), pct(v.GMax, v.GMedian), v.GSlope10, v.GSlopeLS10)
	logf("heap in use, interval floors over the second half: median %.1f MiB, slope %+.2f MiB per 10 min (%+.1f%%; least squares %+.2f MiB, %+.1f%%)",
		v.HeapFloorMedian/mib, v.HeapFloorSlope10/mib, 100*safeDiv(v.HeapFloorSlope10, v.HeapFloorMedian),
		v.HeapFloorSlopeLS10/mib, 100*safeDiv(v.HeapFloorSlopeLS10, v.HeapFloorMedian))
	logf("heap in use, every sample: mean %.1f MiB, slope %+.2f MiB per 10 min (%+.1f%%); next GC target: mean %.1f MiB, slope %+.2f MiB per 10 min (%+.1f%%)",
		v.HeapMean/mib, v.HeapSlope10/mib, 100*safeDiv(v.HeapSlope10, v.HeapMean), v.NextGCMean/mib, v.NextGCSlope10/mib, 100*safeDiv(v.NextGCSlope10, v.NextGCMean))
	logf("RSS: mean %.1f MiB, slope %+.2f MiB per 10 min (%+.1f%%); open fds after the warm-up %.0f–%.0f; jobs queued at most %.0f",
		v.RSSMean/mib, v.RSSSlope10/mib, 100*safeDiv(v.RSSSlope10, v.RSSMean), v.FDMin, v.FDMax, v.JobsMax)
	switch {
	case !v.Judged:
		logf("VERDICT: not judged (a run under %s, or too few samples, is too short)", minJudged)
	case v.Flat:
		logf("VERDICT: FLAT (goroutines and heap in use)")
	default:
		logf("VERDICT: NOT FLAT: %s", strings.Join(v.Reasons, "; "))
	}
}

// latencyTable prints each operation's mean latency in each interval of
// rows, to tell a server slowing down as its data grows from a machine
// getting busier (identity.me and toggles.check read no growing table).
func latencyTable(logf func(string, ...any), rows []sample) {
	if len(rows) < 2 {
		return
	}
	var names []string
	for op := range rows[len(rows)-1].ops {
		if !strings.HasPrefix(op, "setup") {
			names = append(names, op)
		}
	}
	sort.Strings(names)
	logf("")
	logf("== mean latency per interval (ms), and the last interval over the first")
	head := fmt.Sprintf("%-24s", "operation")
	for _, r := range rows[1:] {
		head += fmt.Sprintf(" %7s", fmtDur(r.At))
	}
	logf("%s %7s", head, "last/1st")
	for _, op := range names {
		line := fmt.Sprintf("%-24s", op)
		var first, last float64
		for i := 1; i < len(rows); i++ {
			a, b := rows[i-1].ops[op], rows[i].ops[op]
			if b.n <= a.n {
				line += fmt.Sprintf(" %7s", "–")
				continue
			}
			ms := float64(b.sum-a.sum) / float64(b.n-a.n) / 1e6
			if first == 0 {
				first = ms
			}
			last = ms
			line += fmt.Sprintf(" %7.1f", ms)
		}
		logf("%s %7.2f", line, safeDiv(last, first))
	}
}

func pct(x, of float64) float64 { return 100 * safeDiv(x-of, of) }

func safeDiv(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// condensed picks the samples nearest each multiple of every, and the
// last.
func condensed(rows []sample, every time.Duration) []sample {
	if len(rows) == 0 || every <= 0 {
		return rows
	}
	var out []sample
	last := rows[len(rows)-1]
	for t := time.Duration(0); t < last.At-every/4; t += every {
		best := rows[0]
		for _, s := range rows {
			if math.Abs(float64(s.At-t)) < math.Abs(float64(best.At-t)) {
				best = s
			}
		}
		if len(out) == 0 || out[len(out)-1].At != best.At {
			out = append(out, best)
		}
	}
	return append(out, last)
}

// writeCSV writes the samples, one row each.
func writeCSV(path string, samples []sample) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := csv.NewWriter(f)
	_ = w.Write([]string{"seconds", "requests", "4xx", "5xx", "no_answer", "goroutines", "heap_inuse", "heap_alloc", "next_gc", "rss",
		"open_fds", "server_requests", "server_5xx", "jobs_queued", "db_open", "received"})
	for _, s := range samples {
		_ = w.Write([]string{fmt.Sprintf("%.1f", s.At.Seconds()), fmt.Sprint(s.Requests), fmt.Sprint(s.C4xx), fmt.Sprint(s.C5xx),
			fmt.Sprint(s.Transport), fmt.Sprint(s.Goroutines), fmt.Sprint(s.HeapInuse), fmt.Sprint(s.HeapAlloc), fmt.Sprint(s.NextGC),
			fmt.Sprint(s.RSS), fmt.Sprint(s.FDs), fmt.Sprint(s.ServerRequests), fmt.Sprint(s.Server5xx), fmt.Sprint(s.JobsQueued),
			fmt.Sprint(s.DBOpen), fmt.Sprint(s.Received)})
	}
	w.Flush()
	return errors.Join(w.Error(), f.Close())
}
