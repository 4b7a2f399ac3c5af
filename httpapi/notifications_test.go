package httpapi

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tenantkit/tenantkit/notifications"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// The inbox routes, black box over HTTP on both engines, with
// notifications made through the Go API (Kit.Notifications): two users
// and an API key of one tenant and a user of another, each seeing and
// changing only its own inbox.

const notifBase = "/api/notifications"

var (
	notifPageKeys = []string{"items", "total", "page", "pageSize", "totalPages", "unreadCount"}
	notifItemKeys = []string{"id", "type", "title", "body", "severity", "link", "createdAt", "readAt"}
)

// notifCreate adds a notification to recipient's inbox in the tenant.
func notifCreate(t *testing.T, e *testEnv, tenantID, recipient, title string, severity notifications.Severity, link string) string {
	t.Helper()
	ctx := store.WithScope(t.Context(), store.Scope{TenantID: tenantID})
	n, err := e.kit.Notifications.Create(ctx, notifications.CreateInput{Recipient: recipient, Type: "test.note", Title: title,
		Body: title + " body", Severity: severity, Link: link})
	if err != nil {
		t.Fatal(err)
	}
	return n.ID
}

// notifList reads the caller's inbox (200), checking the keys.
func notifList(t *testing.T, e *testEnv, as dashAs, query string) (map[string]any, []map[string]any) {
	t.Helper()
	body := e.send("GET", notifBase+query, nil, as).expect(200).JSON()
	expectKeys(t, "page", body, notifPageKeys...)
	var items []map[string]any
	for _, it := range body["items"].([]any) {
		m := it.(map[string]any)
		expectKeys(t, "item", m, notifItemKeys...)
		items = append(items, m)
	}
	return body, items
}

func notifIDs(items []map[string]any) []string {
	out := []string{}
	for _, it := range items {
		out = append(out, it["id"].(string))
	}
	return out
}

func notifSame(t *testing.T, what string, got, want any) {
	t.Helper()
	g, _ := json.Marshal(got)
	w, _ := json.Marshal(want)
	if string(g) != string(w) {
		t.Errorf("%s: got %s, want %s", what, g, w)
	}
}

func TestNotificationRoutes(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newTestEnv(t, db)
		ta, tb := e.newTenant("Notif A "+randomHex(3)), e.newTenant("Notif B "+randomHex(3))
		roleA, roleB := dashNewRole(e, ta), dashNewRole(e, tb) // no feature at all
		u1, u2, ub := dashNewUser(e, ta, roleA), dashNewUser(e, ta, roleA), dashNewUser(e, tb, roleB)
		key := dashKeyOf(e, ta, roleA)

		n1 := notifCreate(t, e, ta.ID, u1.id, "First", notifications.SeverityInfo, "/webhooks/1")
		n2 := notifCreate(t, e, ta.ID, u1.id, "Second", notifications.SeverityError, "")
		n3 := notifCreate(t, e, ta.ID, u1.id, "Third", notifications.SeverityWarning, "https://example.com/x")
		m1 := notifCreate(t, e, ta.ID, u2.id, "For u2", "", "")
		// A notification for u1's id in the other tenant: not u1's inbox.
		b1 := notifCreate(t, e, tb.ID, u1.id, "Elsewhere", "", "")
		bu := notifCreate(t, e, tb.ID, ub.id, "For ub", "", "")
		k1 := notifCreate(t, e, ta.ID, "api_key:"+key.id, "For the key", "", "")

		// u1's inbox: newest first, the exact item.
		page, items := notifList(t, e, u1.as, "")
		notifSame(t, "u1's inbox", notifIDs(items), []string{n3, n2, n1})
		notifSame(t, "u1's counts", []any{page["total"], page["page"], page["pageSize"], page["totalPages"], page["unreadCount"]},
			[]any{3, 1, 20, 1, 3})
		first := items[2]
		notifSame(t, "n1", []any{first["type"], first["title"], first["body"], first["severity"], first["link"], first["readAt"]},
			[]any{"test.note", "First", "First body", "info", "/webhooks/1", nil})
		if _, err := time.Parse(time.RFC3339Nano, first["createdAt"].(string)); err != nil {
			t.Errorf("createdAt %v: %v", first["createdAt"], err)
		}
		notifSame(t, "n2's link and severity", []any{items[1]["link"], items[1]["severity"]}, []any{nil, "error"})

		// Each inbox is its owner's only.
		_, items = notifList(t, e, u2.as, "")
		notifSame(t, "u2's inbox", notifIDs(items), []string{m1})
		_, items = notifList(t, e, ub.as, "")
		notifSame(t, "ub's inbox", notifIDs(items), []string{bu})
		_, items = notifList(t, e, key.as, "")
		notifSame(t, "the API key's inbox", notifIDs(items), []string{k1})

		// Another user's or tenant's id is 404 on every write, and
		// changes nothing.
		for _, c := range []struct {
			who string
			as  dashAs
			id  string
		}{{"u2 on u1's", u2.as, n1}, {"ub (other tenant) on u1's", ub.as, n1}, {"u1 on u2's", u1.as, m1},
			{"u1 on its id's notification in another tenant", u1.as, b1}, {"the key on u1's", key.as, n1},
			{"u1 on an unknown id", u1.as, store.NewID()}, {"u1 on a malformed id", u1.as, "not-an-id"}} {
			for _, w := range []struct{ method, suffix string }{{"POST", "/read"}, {"POST", "/unread"}, {"DELETE", ""}} {
				r := e.send(w.method, notifBase+"/"+c.id+w.suffix, nil, c.as)
				if r.Status != 404 {
					t.Errorf("%s %s%s by %s: status %d, want 404; body: %s", w.method, "{id}", w.suffix, c.who, r.Status, r.Body)
				}
			}
		}
		page, items = notifList(t, e, u1.as, "")
		notifSame(t, "u1's inbox after the others' writes", []any{notifIDs(items), page["unreadCount"]}, []any{[]string{n3, n2, n1}, 3})
		page, _ = notifList(t, e, u2.as, "")
		notifSame(t, "u2's unread after u1's writes", page["unreadCount"], 1)

		// Read, read again (keeps the first time), unread.
		notifSame(t, "read", e.send("POST", notifBase+"/"+n1+"/read", nil, u1.as).expect(200).JSON(), map[string]any{"ok": true})
		page, items = notifList(t, e, u1.as, "?unread=true")
		notifSame(t, "unread only", []any{notifIDs(items), page["total"], page["unreadCount"]}, []any{[]string{n3, n2}, 2, 2})
		_, items = notifList(t, e, u1.as, "")
		readAt := items[2]["readAt"]
		if _, ok := readAt.(string); !ok {
			t.Fatalf("readAt after read: %v", readAt)
		}
		e.send("POST", notifBase+"/"+strings.ToUpper(n1)+"/read", nil, u1.as).expect(200)
		_, items = notifList(t, e, u1.as, "")
		notifSame(t, "readAt after a second read", items[2]["readAt"], readAt)
		notifSame(t, "unread", e.send("POST", notifBase+"/"+n1+"/unread", nil, u1.as).expect(200).JSON(), map[string]any{"ok": true})
		page, items = notifList(t, e, u1.as, "")
		notifSame(t, "after unread", []any{items[2]["readAt"], page["unreadCount"]}, []any{nil, 3})

		// Pages.
		page, items = notifList(t, e, u1.as, "?pageSize=2&page=2")
		notifSame(t, "second page of 2", []any{notifIDs(items), page["total"], page["page"], page["pageSize"], page["totalPages"]},
			[]any{[]string{n1}, 3, 2, 2, 2})
		page, _ = notifList(t, e, u1.as, "?pageSize=1000")
		notifSame(t, "a large pageSize is reduced", page["pageSize"], 100)

		// Read all: u1's only.
		notifSame(t, "read-all", e.send("POST", notifBase+"/read-all", nil, u1.as).expect(200).JSON(), map[string]any{"ok": true})
		page, items = notifList(t, e, u1.as, "?unread=1")
		notifSame(t, "u1 after read-all", []any{len(items), page["unreadCount"]}, []any{0, 0})
		page, _ = notifList(t, e, u2.as, "")
		notifSame(t, "u2 after u1's read-all", page["unreadCount"], 1)
		page, _ = notifList(t, e, key.as, "")
		notifSame(t, "the key after u1's read-all", page["unreadCount"], 1)

		// Delete.
		notifSame(t, "delete", e.send("DELETE", notifBase+"/"+n2, nil, u1.as).expect(200).JSON(), map[string]any{"ok": true})
		_, items = notifList(t, e, u1.as, "")
		notifSame(t, "u1 after delete", notifIDs(items), []string{n3, n1})
		e.send("DELETE", notifBase+"/"+n2, nil, u1.as).expect(404)

		// Bad input names the parameter; no credential is 401.
		for q, field := range map[string]string{"?unread=maybe": "unread", "?page=0": "page", "?pageSize=x": "pageSize"} {
			r := e.send("GET", notifBase+q, nil, u1.as).expect(400)
			if !strings.Contains(string(r.Body), field) {
				t.Errorf("GET %s: the error does not name %s: %s", q, field, r.Body)
			}
		}
		e.do("GET", notifBase, "", nil).expect(401)

		// Every new notification was an event of its tenant.
		created := 0
		for _, ev := range e.events(ta.ID, notifications.EventNotificationCreated) {
			var data notifications.NotificationEvent
			if err := json.Unmarshal(ev.Data, &data); err != nil {
				t.Fatal(err)
			}
			if data.ID == n1 {
				notifSame(t, "n1's event", data, notifications.NotificationEvent{ID: n1, Recipient: u1.id, Type: "test.note",
					Severity: notifications.SeverityInfo})
				if strings.Contains(string(ev.Data), "First") {
					t.Errorf("the event carries the notification's text: %s", ev.Data)
				}
			}
			created++
		}
		notifSame(t, "events in tenant A", created, 5)
	})
}

// Create refuses bad input with the field named, and writes nothing.
func TestNotificationCreateValidation(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newTestEnv(t, db)
		tf := e.newTenant("Notif validation " + randomHex(3))
		ctx := store.WithScope(t.Context(), store.Scope{TenantID: tf.ID})
		ok := notifications.CreateInput{Recipient: "u-1", Type: "test.note", Title: "Hello"}
		for field, edit := range map[string]func(*notifications.CreateInput){
			"recipient": func(in *notifications.CreateInput) { in.Recipient = "" },
			"type":      func(in *notifications.CreateInput) { in.Type = "Not A Type" },
			"title":     func(in *notifications.CreateInput) { in.Title = " " },
			"body":      func(in *notifications.CreateInput) { in.Body = "a\x00b" },
			"severity":  func(in *notifications.CreateInput) { in.Severity = "fatal" },
			"link":      func(in *notifications.CreateInput) { in.Link = "javascript:alert(1)" },
		} {
			in := ok
			edit(&in)
			_, err := e.kit.Notifications.Create(ctx, in)
			var v *store.ValidationError
			if !errors.As(err, &v) || v.Fields[field] == "" {
				t.Errorf("%s: error %v, want a validation error naming it", field, err)
			}
		}
		for _, link := range []string{"//evil.example", "data:text/html,x", "ftp://x/y"} {
			in := ok
			in.Link = link
			if _, err := e.kit.Notifications.Create(ctx, in); err == nil {
				t.Errorf("link %q accepted", link)
			}
		}
		if n := len(e.events(tf.ID, notifications.EventNotificationCreated)); n != 0 {
			t.Errorf("%d events after refused creates", n)
		}
		// A repeated dedup key adds nothing.
		in := ok
		in.DedupKey = "event:1"
		first, err := e.kit.Notifications.Create(ctx, in)
		if err != nil || first == nil {
			t.Fatalf("first create: %v, %v", first, err)
		}
		again, err := e.kit.Notifications.Create(ctx, in)
		if err != nil || again != nil {
			t.Errorf("second create with the key: %v, %v; want nil, nil", again, err)
		}
		if n := len(e.events(tf.ID, notifications.EventNotificationCreated)); n != 1 {
			t.Errorf("%d events, want 1", n)
		}
	})
}
