package main

import (
	"log/slog"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tenantkit/tenantkit/internal/testing/logbuf"
)

// Lines are gathered and written out together: not at once, within the
// interval, at once past the size bound, and at once with everything
// before them for a line at WARN or above. Nothing is lost or reordered.
func TestLineBuffer(t *testing.T) {
	t.Parallel()
	out := &logbuf.Buffer{}
	buf := newLineBuffer(out, 50*time.Millisecond, 1<<10)
	log := slog.New(flushAtWarn{slog.NewTextHandler(buf, nil), buf})

	log.Info("first")
	if out.String() != "" {
		t.Fatalf("an INFO line was written at once: %q", out.String())
	}
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(out.String(), "msg=first") {
		if time.Now().After(deadline) {
			t.Fatal("the gathered line was not written out within 5s (interval 50ms)")
		}
		time.Sleep(5 * time.Millisecond)
	}

	log.Info("second")
	log.Warn("third")
	if s := out.String(); !strings.Contains(s, "msg=second") || !strings.Contains(s, "msg=third") ||
		strings.Index(s, "msg=second") > strings.Index(s, "msg=third") {
		t.Fatalf("a WARN line did not write itself and the lines before it, in order: %q", s)
	}

	long := strings.Repeat("x", 2<<10)
	log.Info(long)
	if !strings.Contains(out.String(), long) {
		t.Fatal("a write past the size bound was not written at once")
	}

	log.Info("last")
	buf.Flush()
	var msgs []string
	for _, m := range regexp.MustCompile(`msg=(\w+)`).FindAllStringSubmatch(out.String(), -1) {
		msgs = append(msgs, m[1][:min(len(m[1]), 6)])
	}
	if want := "first second third xxxxxx last"; strings.Join(msgs, " ") != want {
		t.Fatalf("lines written: %v, want %s", msgs, want)
	}
}
