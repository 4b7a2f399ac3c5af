package httpapi

import (
	"bufio"
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/tenantkit/tenantkit/httpapi/internal/apikit"
	"github.com/tenantkit/tenantkit/identity"
	"github.com/tenantkit/tenantkit/stream"
)

// streamWriteTimeout is how long one write to a stream may take: a
// client whose connection takes nothing for that long is disconnected
// (its buffer may fill meanwhile; it resumes with Last-Event-ID).
const streamWriteTimeout = 30 * time.Second

// eventRoutes is the events stream (package stream).
func (a *api) eventRoutes() []apikit.Route {
	return []apikit.Route{
		{Method: "GET", Path: "/events/stream", Handler: a.eventStream,
			Doc: apikit.Doc{Summary: "Live domain events (Server-Sent Events)",
				Description: "A text/event-stream of the domain events flagged clientBroadcast in GET /webhooks/events, for the caller's " +
					"tenant and the organizations it may see, of the areas whose view feature it holds (records need entities.records.view, " +
					"attachments attachments.view, progress jobs progress.view, sync runs data_sync.view, payments payment_gateways.view), " +
					"and of notifications only the caller's own. Each message has `id:` (opaque, increasing), `event:` (the event type) and " +
					"`data:` {type, timestamp, data, idempotencyKey}, the body webhooks receive. Reconnect with the Last-Event-ID header " +
					"(or ?lastEventId=) to receive, in order and once each, the events missed within the last 24 hours; an older or " +
					"unknown id answers `event: reset` first (reload your state). A comment (`: heartbeat`) comes every 15 s when " +
					"nothing else does. A client more than 1,000 messages behind receives `event: overflow` and is disconnected: " +
					"reconnect with the last id received.", Query: []apikit.Param{
					{Name: "types", Description: "Comma-separated event patterns as webhooks take them (\"entities.record.*\", \"progress.job.completed\", \"*\"); all broadcast types when absent"},
					{Name: "lastEventId", Description: "The id of the last event received, for clients that cannot set the Last-Event-ID header; the header wins"},
				},
				Headers:         []apikit.Param{{Name: "Last-Event-ID", Description: "The id of the last event received: the stream resumes after it"}},
				ResponseContent: []string{"text/event-stream"}},
		},
	}
}

// eventStream serves GET /events/stream.
func (a *api) eventStream(w http.ResponseWriter, r *http.Request) error {
	id := identity.IdentityFrom(r.Context())
	var types []string
	if raw := r.URL.Query().Get("types"); raw != "" {
		for _, p := range strings.Split(raw, ",") {
			if p = strings.TrimSpace(p); p != "" {
				types = append(types, p)
			}
		}
	}
	last := r.Header.Get("Last-Event-ID")
	if last == "" {
		last = r.URL.Query().Get("lastEventId")
	}
	sub, err := a.kit.Events.Subscribe(r.Context(), id, stream.Filter{Types: types, LastEventID: strings.TrimSpace(last)})
	if err != nil {
		return err
	}
	defer sub.Close()

	rc := http.NewResponseController(w)
	// The request is read: no read deadline is left from the server's
	// ReadTimeout (a precaution; the test found none needed), and each
	// write has its own deadline (streamWriteTimeout), which the
	// server's WriteTimeout would otherwise cut short.
	_ = rc.SetReadDeadline(time.Time{})
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no") // nginx: do not buffer the stream
	w.WriteHeader(http.StatusOK)
	bw := bufio.NewWriterSize(w, 8<<10)
	flush := func() bool {
		_ = rc.SetWriteDeadline(time.Now().Add(streamWriteTimeout)) // not every writer supports it
		return bw.Flush() == nil && rc.Flush() == nil
	}
	_, _ = bw.WriteString("retry: 2000\n\n")
	if !flush() {
		return nil
	}
	ctx := r.Context()
	for {
		wait, cancel := context.WithTimeout(ctx, stream.Heartbeat)
		m, err := sub.Next(wait)
		cancel()
		switch {
		case ctx.Err() != nil:
			return nil
		case errors.Is(err, context.DeadlineExceeded):
			// Quiet: a heartbeat, and a check that the credential still
			// holds (a revoked key or ended session ends the stream).
			if _, err := a.authenticate(r); err != nil {
				return nil
			}
			_, _ = bw.WriteString(": heartbeat\n\n")
			if !flush() {
				return nil
			}
			continue
		case err != nil:
			if !errors.Is(err, stream.ErrClosed) {
				a.logger.WarnContext(ctx, "httpapi: events stream ended", "requestId", requestID(r), "err", err)
			}
			return nil
		}
		// Write this message and every other one ready, then flush once.
		for {
			if !writeStreamMessage(bw, m) || m.Kind == stream.KindOverflow {
				flush()
				return nil
			}
			next, ok, err := sub.TryNext(ctx)
			if err != nil || !ok {
				break
			}
			m = next
		}
		if !flush() {
			return nil
		}
	}
}

// writeStreamMessage writes m in the text/event-stream format; false when
// it could not be encoded.
func writeStreamMessage(bw *bufio.Writer, m stream.Message) bool {
	data, err := m.Payload()
	if err != nil {
		return false
	}
	if m.ID != "" {
		_, _ = bw.WriteString("id: " + m.ID + "\n")
	}
	name := string(m.Kind)
	if m.Kind == stream.KindEvent {
		name = m.Event.Type
	}
	_, _ = bw.WriteString("event: " + name + "\ndata: ")
	_, _ = bw.Write(data) // compact JSON: one line
	_, _ = bw.WriteString("\n\n")
	return true
}
