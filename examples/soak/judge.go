package main

import (
	"encoding/csv"
	"fmt"
	"os"
	"strconv"
	"time"
)

// judgeFile reads the samples a run wrote with -csv and prints its
// condensed table and verdict by the current rule, with the -sample-every,
// -fit-every, -summary-every and -warmup given (they must be the run's).
func judgeFile(path string, cfg config, logf func(string, ...any)) (verdict, error) {
	f, err := os.Open(path)
	if err != nil {
		return verdict{}, err
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		return verdict{}, err
	}
	if len(recs) < 3 {
		return verdict{}, fmt.Errorf("%s: too few samples", path)
	}
	col := map[string]int{}
	for i, name := range recs[0] {
		col[name] = i
	}
	var fit []sample
	for n, rec := range recs[1:] {
		num := func(name string) float64 {
			i, ok := col[name]
			if !ok {
				err = fmt.Errorf("%s: no column %s", path, name)
				return 0
			}
			v, perr := strconv.ParseFloat(rec[i], 64)
			if perr != nil {
				err = fmt.Errorf("%s: line %d: %s: %v", path, n+2, name, perr)
			}
			return v
		}
		s := sample{At: time.Duration(num("seconds") * float64(time.Second)), Requests: int64(num("requests")), C4xx: int64(num("4xx")),
			C5xx: int64(num("5xx")), Transport: int64(num("no_answer")), Goroutines: num("goroutines"), HeapInuse: num("heap_inuse"),
			HeapAlloc: num("heap_alloc"), NextGC: num("next_gc"), RSS: num("rss"), FDs: num("open_fds"), ServerRequests: num("server_requests"),
			Server5xx: num("server_5xx"), JobsQueued: num("jobs_queued"), DBOpen: num("db_open"), Received: int64(num("received"))}
		if err != nil {
			return verdict{}, err
		}
		fit = append(fit, s)
	}

	// The rows as the run printed them: the first sample, one per
	// -sample-every, and the last (taken at the deadline).
	sm := &sampler{logf: func(string, ...any) {}}
	nextRow := cfg.SampleEvery
	for i, s := range fit {
		sm.fit = append(sm.fit, s)
		switch {
		case i == 0 || i == len(fit)-1:
			sm.row(s)
		case s.At >= nextRow-cfg.FitEvery/2:
			sm.row(s)
			for nextRow <= s.At+cfg.FitEvery/2 {
				nextRow += cfg.SampleEvery
			}
		}
	}
	last := fit[len(fit)-1]
	elapsed := last.At
	if cfg.Warmup*3 > elapsed {
		cfg.Warmup = elapsed / 6
	}
	logf("%s: %d samples over %s; requests %d (%.1f/s), 4xx %d, 5xx %d, no answer %d", path, len(fit), elapsed.Round(time.Second),
		last.Requests, float64(last.Requests)/elapsed.Seconds(), last.C4xx, last.C5xx, last.Transport)
	condensedTable(logf, sm.rows, cfg.SummaryEvery)
	v := judge(sm.fit, sm.rows, cfg, elapsed)
	printVerdict(logf, v, elapsed)
	return v, nil
}
