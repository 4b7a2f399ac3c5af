package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"math"
	"testing"
	"time"

	"github.com/tenantkit/tenantkit/internal/testing/cputime"
)

// textLinesPair logs through textLines and through slog.TextHandler and
// returns both outputs.
func textLinesPair(t testing.TB, log func(*slog.Logger)) (fast, slow string) {
	t.Helper()
	var a, b bytes.Buffer
	log(slog.New(newTextLines(&a, slog.LevelDebug)))
	log(slog.New(slog.NewTextHandler(&b, &slog.HandlerOptions{Level: slog.LevelDebug})))
	return a.String(), b.String()
}

// The access line and records of every other shape come out byte for
// byte as slog.TextHandler writes them. Every record carries a fixed
// time: a record the Logger makes takes the clock's, which may read
// another millisecond for the second handler.
func TestTextLinesMatchSlog(t *testing.T) {
	at := time.Date(2026, 11, 29, 16, 4, 5, 120_000_000, time.FixedZone("x", 3600))
	cases := map[string]func(*slog.Logger){
		"access line": func(l *slog.Logger) {
			r := slog.NewRecord(at, slog.LevelInfo, "http request", 0)
			r.AddAttrs(slog.String("requestId", "01J0ABC"), slog.String("method", "GET"),
				slog.String("route", "GET /api/feature_toggles/check/boolean"), slog.Int("status", 200),
				slog.Float64("durationMs", 0.123), slog.String("tenantId", ""), slog.String("credential", "api_key"))
			_ = l.Handler().Handle(context.Background(), r)
		},
		"zero time, every plain kind": func(l *slog.Logger) {
			r := slog.NewRecord(time.Time{}, slog.LevelWarn+2, "", 0)
			r.AddAttrs(slog.Uint64("u", math.MaxUint64), slog.Bool("ok", true), slog.Duration("d", 1500*time.Millisecond),
				slog.Float64("inf", math.Inf(-1)), slog.Float64("big", 1e21), slog.Int64("neg", math.MinInt64),
				slog.String("a=b", "x\"y"), slog.String("tab", "a\tb"), slog.String("del", "\x7f"),
				slog.String("nbsp", "a\u00a0b"), slog.String("bad", "\xff"), slog.String("uni", "héllo"),
				slog.String("route", "GET /api/x"), slog.String("bs", `a\b c`), slog.String("eq sp", "a=b c"),
				slog.String("del sp", "\x7f "), slog.String("uni sp", "é b"), slog.String("empty", ""))
			_ = l.Handler().Handle(context.Background(), r)
		},
		"not plain: handed to slog": func(l *slog.Logger) {
			r := slog.NewRecord(at, slog.LevelInfo, "mixed", 0)
			r.Add("n", 1, "t", at, "g", slog.GroupValue(slog.Int("x", 1)), "any", []int{1})
			_ = l.Handler().Handle(context.Background(), r)
		},
		"with attrs": func(l *slog.Logger) {
			r := slog.NewRecord(at, slog.LevelError, "failed", 0)
			r.Add("err", "boom")
			_ = l.With("area", "jobs").Handler().Handle(context.Background(), r)
		},
		"lines across seconds and zones": func(l *slog.Logger) {
			// The second's text is kept from one line to the next:
			// a new second, or the same second in another zone, is
			// formatted anew.
			for _, t := range []time.Time{at, at.Add(time.Millisecond), at.UTC(), at.Add(879 * time.Millisecond),
				at.Add(880 * time.Millisecond), at.UTC().Add(880 * time.Millisecond), at.Add(-time.Second),
				time.Date(10000, 1, 1, 0, 0, 0, 5_000_000, time.UTC), time.Date(1, 1, 1, 0, 0, 0, 999_999_999, time.FixedZone("y", -60))} {
				r := slog.NewRecord(t, slog.LevelInfo, "tick", 0)
				_ = l.Handler().Handle(context.Background(), r)
			}
		},
		"filtered out": func(l *slog.Logger) {
			if l.Enabled(context.Background(), slog.LevelDebug) {
				_ = l.Handler().Handle(context.Background(), slog.NewRecord(at, slog.LevelDebug, "kept at debug", 0))
			}
		},
	}
	for name, log := range cases {
		fast, slow := textLinesPair(t, log)
		if fast != slow {
			t.Errorf("%s:\n textLines %q\n slog      %q", name, fast, slow)
		}
	}
	var buf bytes.Buffer
	slog.New(newTextLines(&buf, slog.LevelWarn)).Info("below the level")
	if buf.Len() != 0 {
		t.Errorf("a record below the level was written: %q", buf.String())
	}
}

func FuzzTextLines(f *testing.F) {
	f.Add("http request", "route", "GET /api/x", int64(200), 0.25, int64(1700000000123456789))
	f.Add("", "", "", int64(-1), math.NaN(), int64(0))
	f.Add("a\x00b", "k=v", "\u2028\xfe", int64(math.MaxInt64), -0.0, int64(-62135596800000000))
	f.Fuzz(func(t *testing.T, msg, key, val string, n int64, x float64, nanos int64) {
		at := time.Unix(0, nanos).In(time.FixedZone("z", int(n%50000)))
		fast, slow := textLinesPair(t, func(l *slog.Logger) {
			r := slog.NewRecord(at, slog.Level(n%20), msg, 0)
			r.AddAttrs(slog.String(key, val), slog.Int64("n", n), slog.Float64("x", x), slog.String("v", val))
			_ = l.Handler().Handle(context.Background(), r)
		})
		if fast != slow {
			t.Errorf("textLines %q\nslog      %q", fast, slow)
		}
	})
}

// BenchmarkAccessLine formats the access line to a discarding writer
// through slog.TextHandler (slog) and through textLines (textlines),
// with the CPU per line (cpu-µs/op).
func BenchmarkAccessLine(b *testing.B) {
	handlers := map[string]slog.Handler{
		"slog":      slog.NewTextHandler(io.Discard, nil),
		"textlines": newTextLines(io.Discard, slog.LevelInfo),
	}
	for _, name := range []string{"slog", "textlines"} {
		h := handlers[name]
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			start := cputime.Process()
			defer func() { cputime.PerOp(b, start, b.N) }()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					r := slog.NewRecord(time.Now(), slog.LevelInfo, "http request", 0)
					r.AddAttrs(slog.String("requestId", "01JDZ8Q6W2K3N4P5R6S7T8V9WX"), slog.String("method", "GET"),
						slog.String("route", "GET /api/feature_toggles/check/boolean"), slog.Int("status", 200),
						slog.Float64("durationMs", 0.123), slog.String("tenantId", "5f0c6c2e-8d1b-4b3a-9c55-2f1e0d9a7b61"),
						slog.String("credential", "api_key"))
					_ = h.Handle(context.Background(), r)
				}
			})
		})
	}
}
