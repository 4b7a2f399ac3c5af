package multiproc_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tenantkit/tenantkit/internal/testing/multiproc"
)

// streamEvent is one event message of GET /api/events/stream: its id,
// the record id in its data, and when it was read.
type streamEvent struct {
	ID, RecordID string
	At           time.Time
}

// openEvents opens the stream on s and passes its record events on.
func openEvents(t *testing.T, s *multiproc.Server, key, lastID string) (<-chan streamEvent, context.CancelFunc) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	req, _ := http.NewRequestWithContext(ctx, "GET", s.URL+"/api/events/stream?types=entities.record.*", nil)
	req.Header.Set("X-Api-Key", key)
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		cancel()
		t.Fatalf("open the stream on %s: %v %v", s.Name, err, resp)
	}
	out := make(chan streamEvent, 10000)
	go func() {
		defer resp.Body.Close()
		defer close(out)
		sc := bufio.NewScanner(resp.Body)
		var id string
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "id: "):
				id = line[4:]
			case strings.HasPrefix(line, "data: "):
				var p struct {
					Data struct {
						ID string `json:"id"`
					} `json:"data"`
				}
				if json.Unmarshal([]byte(line[6:]), &p) == nil {
					out <- streamEvent{ID: id, RecordID: p.Data.ID, At: time.Now()}
				}
			}
		}
	}()
	t.Cleanup(cancel)
	return out, cancel
}

func nextEvent(t *testing.T, c <-chan streamEvent) streamEvent {
	t.Helper()
	select {
	case ev, ok := <-c:
		if !ok {
			t.Fatal("the stream ended")
		}
		return ev
	case <-time.After(10 * time.Second):
		t.Fatal("no event within 10 s")
	}
	return streamEvent{}
}

// A record created through one server reaches a stream on the other
// (LISTEN/NOTIFY between the processes); a client whose server goes away
// resumes on the other with Last-Event-ID and misses nothing.
func TestEventStreamAcrossServers(t *testing.T) {
	c := multiproc.Start(t, multiproc.Options{})
	a, b := c.Servers[0], c.Servers[1]
	tn := c.NewTenant(t, "Stream "+multiproc.RandomHex(3))
	writer := c.NewKey(t, tn, "entities.*")
	viewer := c.NewKey(t, tn, "entities.records.view")
	eid := "rec.s_" + multiproc.RandomHex(6)
	a.Do(t, "POST", "/api/entities/definitions.batch", writer, map[string]any{"entityId": eid,
		"definitions": []map[string]any{{"key": "n", "kind": "integer"}}}).Expect(t, 200)
	create := func(s *multiproc.Server, n int) string {
		return s.Do(t, "POST", "/api/entities/records", writer, map[string]any{"entityId": eid, "values": map[string]any{"n": n}}).
			Expect(t, 200).JSON(t)["item"].(map[string]any)["recordId"].(string)
	}

	onB, dropB := openEvents(t, b, viewer, "")
	const n = 100
	var latencies []time.Duration
	var last string
	for i := range n {
		id := create(a, i)
		committed := time.Now()
		ev := nextEvent(t, onB)
		if ev.RecordID != id || ev.ID <= last {
			t.Fatalf("event %d on B: %+v, want record %s after %s", i, ev, id, last)
		}
		last = ev.ID
		latencies = append(latencies, max(0, ev.At.Sub(committed)))
	}
	slices.Sort(latencies)
	st := b.Kit.Events.Stats()
	t.Logf("created through A, read on B, %d records: p50 %v, p95 %v, max %v; B's hub read the log %d times, %d of them "+
		"finding events held back by an older transaction still running", n,
		latencies[n/2], latencies[n*95/100], latencies[n-1], st.Reads, st.HeldReads)

	// B goes away after half of the next 100 (created through both);
	// the client resumes on A.
	want := map[string]int{}
	for i := range n {
		want[create([]*multiproc.Server{a, b}[i%2], i)] = 0
		if i == n/2 {
			for range n / 2 {
				ev := nextEvent(t, onB)
				want[ev.RecordID]++
				last = ev.ID
			}
			dropB()
		}
	}
	onA, _ := openEvents(t, a, viewer, last)
	for range n - n/2 {
		ev := nextEvent(t, onA)
		if ev.ID <= last {
			t.Fatalf("id %s after %s", ev.ID, last)
		}
		last = ev.ID
		want[ev.RecordID]++
	}
	for id, got := range want {
		if got != 1 {
			t.Fatalf("record %s received %d times", id, got)
		}
	}
}
