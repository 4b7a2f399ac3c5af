package httpapi

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tenantkit/tenantkit/httpapi/attachmentsapi"
	"github.com/tenantkit/tenantkit/httpapi/entitiesapi"
	"github.com/tenantkit/tenantkit/httpapi/progressapi"
	"github.com/tenantkit/tenantkit/httpapi/webhooksapi"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
	"github.com/tenantkit/tenantkit/stream"
)

// sseMessage is one message of a text/event-stream.
type sseMessage struct {
	ID, Event, Data string
	At              time.Time // when the client read it
}

// sseConn is an open GET /api/events/stream.
type sseConn struct {
	msgs   chan sseMessage // closed at the end of the stream
	cancel context.CancelFunc
}

// openStream opens the stream at url (path and query) with key and the
// header's fields; it fails the test unless the answer is 200.
func openStream(t testing.TB, base, path, key string, header map[string]string) *sseConn {
	t.Helper()
	c, status, body := tryStream(t, base, path, key, header)
	if status != http.StatusOK {
		t.Fatalf("GET %s: %d %s", path, status, body)
	}
	return c
}

func tryStream(t testing.TB, base, path, key string, header map[string]string) (*sseConn, int, string) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	req, err := http.NewRequestWithContext(ctx, "GET", base+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("X-Api-Key", key)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		cancel()
		return nil, resp.StatusCode, string(b)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	c := &sseConn{msgs: make(chan sseMessage, 100000), cancel: cancel}
	go func() {
		defer close(c.msgs)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		var m sseMessage
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if m.Event != "" {
					m.At = time.Now()
					c.msgs <- m
				}
				m = sseMessage{}
			case strings.HasPrefix(line, "id: "):
				m.ID = line[4:]
			case strings.HasPrefix(line, "event: "):
				m.Event = line[7:]
			case strings.HasPrefix(line, "data: "):
				m.Data = line[6:]
			}
		}
	}()
	t.Cleanup(cancel)
	return c, http.StatusOK, ""
}

// next returns the next message, failing the test after 10 s.
func (c *sseConn) next(t testing.TB) sseMessage {
	t.Helper()
	select {
	case m, ok := <-c.msgs:
		if !ok {
			t.Fatal("the stream ended")
		}
		return m
	case <-time.After(10 * time.Second):
		t.Fatal("no message within 10 s")
	}
	return sseMessage{}
}

// quiet fails the test if a message comes within d.
func (c *sseConn) quiet(t testing.TB, d time.Duration) {
	t.Helper()
	select {
	case m, ok := <-c.msgs:
		if ok {
			t.Fatalf("unexpected message %+v", m)
		}
	case <-time.After(d):
	}
}

// streamPayload is the data of an event message.
type streamPayload struct {
	Type           string          `json:"type"`
	Timestamp      time.Time       `json:"timestamp"`
	Data           json.RawMessage `json:"data"`
	IdempotencyKey string          `json:"idempotencyKey"`
}

func (m sseMessage) payload(t testing.TB) streamPayload {
	t.Helper()
	var p streamPayload
	if err := json.Unmarshal([]byte(m.Data), &p); err != nil {
		t.Fatalf("data %q: %v", m.Data, err)
	}
	if p.Type != m.Event || p.IdempotencyKey == "" || p.Timestamp.IsZero() {
		t.Fatalf("payload %+v of message %+v", p, m)
	}
	return p
}

// recordID is the record's id (data.id) of an entities.record.* message.
func (m sseMessage) recordID(t testing.TB) string {
	t.Helper()
	var d struct {
		RecordID string `json:"id"`
	}
	if err := json.Unmarshal(m.payload(t).Data, &d); err != nil || d.RecordID == "" {
		t.Fatalf("no id in %s (%v)", m.Data, err)
	}
	return d.RecordID
}

// percentile returns the p-th percentile (0–100) of ds.
func percentile(ds []time.Duration, p int) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, len(s)*p/100)]
}

// A stream receives the records another caller of its tenant creates, and
// nothing of another tenant, of an organization it may not see, or of an
// area whose view feature it lacks; no credential is 401, a bad pattern
// 400 naming types.
func TestEventStreamDelivers(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newTestEnv(t, db)
		srv := httptest.NewServer(e.handler)
		t.Cleanup(srv.Close) // after the streams' cleanups
		tf := e.newTenant("Stream " + randomHex(3))
		other := e.newTenant("Other " + randomHex(3))
		org2 := e.do("POST", "/api/directory/organizations", e.superKey, map[string]string{"name": "Org2 " + randomHex(3), "tenantId": tf.ID}).expect(201).JSON()["id"].(string)
		f := &recFixture{e: e, tf: tf, key: e.newKey(tf, recAllFeatures...), eid: recEntity()}
		f.define(recField{Key: "n", Kind: "integer"})

		viewer := openStream(t, srv.URL, "/api/events/stream", e.newKey(tf, entitiesapi.FeatureEntitiesRecordsView), nil)
		typed := openStream(t, srv.URL, "/api/events/stream?types="+"progress.*,%20entities.record.created", e.newKey(tf, entitiesapi.FeatureEntitiesRecordsView, progressapi.FeatureProgressView), nil)
		blindTypes := openStream(t, srv.URL, "/api/events/stream?types=progress.*", e.newKey(tf, entitiesapi.FeatureEntitiesRecordsView, progressapi.FeatureProgressView), nil)
		noFeature := openStream(t, srv.URL, "/api/events/stream", e.newKey(tf, attachmentsapi.FeatureAttachmentsView, entitiesapi.FeatureEntitiesDefinitionsView), nil)
		otherOrg := openStream(t, srv.URL, "/api/events/stream", permOrgKey(e, tf.ID, org2, entitiesapi.FeatureEntitiesRecordsView), nil)
		sameOrg := openStream(t, srv.URL, "/api/events/stream", permOrgKey(e, tf.ID, tf.OrgID, entitiesapi.FeatureEntitiesRecordsView), nil)
		otherTenant := openStream(t, srv.URL, "/api/events/stream", e.newKey(other, entitiesapi.FeatureEntitiesRecordsView), nil)

		const n = 50
		var latencies []time.Duration
		last := ""
		for i := range n {
			id := f.create(map[string]any{"n": i})
			committed := time.Now()
			m := viewer.next(t)
			if m.Event != "entities.record.created" || m.recordID(t) != id || m.ID <= last {
				t.Fatalf("message %d: %+v (last id %s)", i, m, last)
			}
			last = m.ID
			latencies = append(latencies, max(0, m.At.Sub(committed)))
			if got := typed.next(t); got.ID != m.ID {
				t.Fatalf("typed stream: %+v, want %s", got, m.ID)
			}
			if got := sameOrg.next(t); got.ID != m.ID {
				t.Fatalf("stream of the records' organization: %+v, want %s", got, m.ID)
			}
		}
		t.Logf("%s: record created → stream message, %d records: p50 %v, p95 %v, max %v", db.Dialect().Name(), n,
			percentile(latencies, 50), percentile(latencies, 95), percentile(latencies, 100))
		for name, c := range map[string]*sseConn{"other types": blindTypes, "no feature": noFeature, "other organization": otherOrg, "other tenant": otherTenant} {
			t.Run(name, func(t *testing.T) { c.quiet(t, 300*time.Millisecond) })
		}

		e.do("GET", "/api/events/stream", "", nil).expect(http.StatusUnauthorized)
		bad := e.do("GET", "/api/events/stream?types=Entities.Record", e.newKey(tf, entitiesapi.FeatureEntitiesRecordsView), nil).expect(http.StatusBadRequest)
		if !strings.Contains(string(bad.Body), "types") {
			t.Fatalf("400 without the field: %s", bad.Body)
		}
		// The catalogue says which types are broadcast.
		cat := e.do("GET", "/api/webhooks/events", e.newKey(tf, webhooksapi.FeatureWebhooksView), nil).expect(200).JSON()
		broadcast := map[string]bool{}
		for _, x := range cat["data"].([]any) {
			ev := x.(map[string]any)
			broadcast[ev["id"].(string)] = ev["clientBroadcast"].(bool)
		}
		if !broadcast["entities.record.created"] || !broadcast["attachments.attachment.extraction_finished"] || broadcast["entities.entity.created"] {
			t.Fatalf("catalogue's clientBroadcast: %v", broadcast)
		}
	})
}

// A client that drops its connection half-way through 1,000 events and
// reconnects with Last-Event-ID (then once more with ?lastEventId=)
// receives every event once, in order; an id older than the window, or
// not an id, answers reset first.
func TestEventStreamResume(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newTestEnv(t, db)
		srv := httptest.NewServer(e.handler)
		t.Cleanup(srv.Close) // after the streams' cleanups
		tf := e.newTenant("Resume " + randomHex(3))
		f := &recFixture{e: e, tf: tf, key: e.newKey(tf, recAllFeatures...), eid: recEntity()}
		f.define(recField{Key: "n", Kind: "integer"})
		viewKey := e.newKey(tf, entitiesapi.FeatureEntitiesRecordsView)

		const total, writers = 1000, 4
		created := make(chan string, total)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for w := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				fw := *f
				fw.e = e.with(t)
				for i := w; i < total; i += writers {
					created <- fw.create(map[string]any{"n": i})
				}
			}()
		}
		c := openStream(t, srv.URL, "/api/events/stream?types=entities.record.*", viewKey, nil)
		close(start)
		seen := map[string]int{}
		var ids []string
		read := func(c *sseConn, upto int) {
			for len(ids) < upto {
				m := c.next(t)
				if m.Event != "entities.record.created" {
					t.Fatalf("got %+v", m)
				}
				if len(ids) > 0 && m.ID <= ids[len(ids)-1] {
					t.Fatalf("id %s after %s", m.ID, ids[len(ids)-1])
				}
				ids = append(ids, m.ID)
				seen[m.recordID(t)]++
			}
		}
		read(c, 400)
		c.cancel() // dropped mid-way; the writers go on
		time.Sleep(200 * time.Millisecond)
		c = openStream(t, srv.URL, "/api/events/stream?types=entities.record.*", viewKey, map[string]string{"Last-Event-ID": ids[len(ids)-1]})
		read(c, 700)
		c.cancel()
		c = openStream(t, srv.URL, "/api/events/stream?types=entities.record.*&lastEventId="+ids[len(ids)-1], viewKey, nil)
		read(c, total)
		wg.Wait()
		close(created)
		for id := range created {
			if seen[id] != 1 {
				t.Fatalf("record %s received %d times", id, seen[id])
			}
		}
		c.quiet(t, 300*time.Millisecond)

		// Too old, and not an id: reset first, then live events.
		old := stream.FormatID(store.EventPosition{Tx: 1, Seq: 1}, time.Now().Add(-stream.Window-time.Minute))
		for _, last := range []string{old, "not-an-id"} {
			c := openStream(t, srv.URL, "/api/events/stream", viewKey, map[string]string{"Last-Event-ID": last})
			if m := c.next(t); m.Event != "reset" || m.ID != "" {
				t.Fatalf("Last-Event-ID %q: %+v, want reset", last, m)
			}
			id := f.create(map[string]any{"n": -1})
			if m := c.next(t); m.recordID(t) != id {
				t.Fatalf("after reset: %+v", m)
			}
			c.cancel()
		}
	})
}

// A client that reads nothing while more than its buffer of events is
// emitted receives, when it reads again, what its connection held, then
// event: overflow, and the stream ends; reconnecting with the last id
// received gets the rest from the log.
func TestEventStreamOverflow(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newTestEnv(t, db)
		e.kit.Events.Close()
		e.kit.Events = stream.New(db, e.kit.EventTypes(), stream.Options{Buffer: 5})
		defer e.kit.Events.Close()
		srv := httptest.NewServer(e.handler)
		t.Cleanup(srv.Close) // after the streams' cleanups
		tf := e.newTenant("Slow " + randomHex(3))
		key := e.newKey(tf, entitiesapi.FeatureEntitiesRecordsView)

		emitBig := func(from, n int) {
			big := strings.Repeat("x", 64<<10)
			err := db.Tx(t.Context(), func(tx *store.Tx) error {
				for j := range n {
					data := fmt.Sprintf(`{"recordId":"r%d","pad":%q}`, from+j, big)
					if _, err := tx.Emit(t.Context(), store.Event{Type: "entities.record.created", TenantID: tf.ID, Data: []byte(data)}); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/api/events/stream", nil)
		req.Header.Set("X-Api-Key", key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		// One event read, then nothing read while 200 events of 64 KiB
		// (more than the connection holds) are emitted.
		emitBig(0, 1)
		var last, final string
		for last == "" && sc.Scan() {
			if line := sc.Text(); strings.HasPrefix(line, "id: ") {
				last = line[4:]
			}
		}
		const total = 201
		for i := 1; i < total; i += 20 {
			emitBig(i, 20)
		}
		time.Sleep(500 * time.Millisecond) // the hub fans out meanwhile
		events := 1
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "id: "):
				last = line[4:]
			case strings.HasPrefix(line, "event: "):
				final = line[7:]
				if final == "entities.record.created" {
					events++
				}
			}
		}
		if final != "overflow" || events >= total {
			t.Fatalf("stream ended with %q after %d events, want overflow before %d", final, events, total)
		}
		t.Logf("%s: overflow after %d of %d events", db.Dialect().Name(), events, total)
		c := openStream(t, srv.URL, "/api/events/stream", key, map[string]string{"Last-Event-ID": last})
		for i := events; i < total; i++ {
			if m := c.next(t); m.Event != "entities.record.created" {
				if m.Event == "overflow" { // the buffer is 5: read on
					c = openStream(t, srv.URL, "/api/events/stream", key, map[string]string{"Last-Event-ID": last})
					i--
					continue
				}
				t.Fatalf("got %+v", m)
			} else {
				last = m.ID
			}
		}
	})
}

// A server's read and write timeouts do not end a stream: it sets its own
// deadlines.
func TestEventStreamOutlivesServerTimeouts(t *testing.T) {
	e := newTestEnv(t, storetest.SQLite(t))
	srv := httptest.NewUnstartedServer(e.handler)
	srv.Config.ReadTimeout, srv.Config.WriteTimeout = 500*time.Millisecond, 500*time.Millisecond
	srv.Start()
	t.Cleanup(srv.Close)
	tf := e.newTenant("Timeouts " + randomHex(3))
	f := &recFixture{e: e, tf: tf, key: e.newKey(tf, recAllFeatures...), eid: recEntity()}
	f.define(recField{Key: "n", Kind: "integer"})
	c := openStream(t, srv.URL, "/api/events/stream", e.newKey(tf, entitiesapi.FeatureEntitiesRecordsView), nil)
	time.Sleep(1500 * time.Millisecond)
	id := f.create(map[string]any{"n": 1})
	if m := c.next(t); m.recordID(t) != id {
		t.Fatalf("got %+v", m)
	}
}
