package httpapi

import (
	"testing"
	"time"

	"github.com/tenantkit/tenantkit"
	"github.com/tenantkit/tenantkit/notifications"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// The Kit's notification feeds, end to end on both engines: an event of
// another area, delivered by the running job engine, lands in the inboxes
// of the users it addresses, in its tenant only.

// notifWait polls the caller's inbox until it holds want notifications
// (failing after 10 s) and returns them.
func notifWait(t *testing.T, e *testEnv, as dashAs, want int) []map[string]any {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, items := notifList(t, e, as, "")
		if len(items) >= want || time.Now().After(deadline) {
			if len(items) != want {
				t.Fatalf("the inbox holds %d notifications, want %d: %v", len(items), want, items)
			}
			return items
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A rule's NOTIFY action reaches the users its recipients name: by role
// name, by email (any case), by user id; unknown ones are skipped, and a
// user of another tenant with the same email hears nothing.
func TestNotificationFeedRules(t *testing.T) {
	t.Parallel()
	storetest.EachIsolated(t, func(t *testing.T, db *store.DB) {
		e := newTestEnv(t, db)
		e.start()
		ta, tb := e.newTenant("Notif rules "+randomHex(3)), e.newTenant("Notif rules B "+randomHex(3))
		opsName := "ops-" + randomHex(3)
		ops := e.do("POST", "/api/auth/roles", e.superKey, map[string]string{"name": opsName, "tenantId": ta.ID}).expect(201).JSON()["id"].(string)
		e.do("PUT", "/api/auth/roles/acl", e.superKey, map[string]any{"roleId": ops, "features": []string{}}).expect(200)
		plain, plainB := dashNewRole(e, ta), dashNewRole(e, tb)
		ann := dashNewUser(e, ta, ops)
		newUser := func(tf tenantFixture, role, email string) dashUser {
			id := e.do("POST", "/api/auth/users", e.superKey, map[string]any{"email": email, "password": "notif-password",
				"organizationId": tf.OrgID, "roles": []string{role}}).expect(201).JSON()["id"].(string)
			token := e.postForm("/api/login", map[string]string{"email": email, "password": "notif-password", "tenantId": tf.ID}).expect(200).JSON()["token"].(string)
			return dashUser{id: id, token: token, as: dashAsSession(token)}
		}
		bobEmail := "bob." + randomHex(4) + "@notif.test"
		bob := newUser(ta, plain, bobEmail)
		bobB := newUser(tb, plainB, bobEmail)
		cid := dashNewUser(e, ta, plain)
		dan := dashNewUser(e, ta, plain)

		key := e.newKey(ta, execFeatures...)
		rule := e.createRule(key, execRule("NOTIFY-1", "ACTION", "shipment", "packed", leaf("weight", ">", 10), []any{
			act("NOTIFY", map[string]any{"recipients": opsName + ", " + "BOB." + bobEmail[4:] + ", {{owner}}, nobody@notif.test, no-such-role",
				"subject": "Shipment {{entityId}}", "message": "Heavy: {{weight}} kg"}),
		}, []any{}))
		req := map[string]any{"entityType": "shipment", "entityId": "S-1", "eventType": "packed",
			"data": map[string]any{"weight": 12, "owner": dan.id}, "dryRun": false}
		e.do("POST", ruleExecPath(rule["id"].(string)), key, req).expect(200)

		for name, u := range map[string]dashUser{"ann (by role)": ann, "bob (by email)": bob, "dan (by id)": dan} {
			items := notifWait(t, e, u.as, 1)
			notifSame(t, name, []any{items[0]["type"], items[0]["title"], items[0]["body"], items[0]["severity"], items[0]["link"], items[0]["readAt"]},
				[]any{tenantkit.NotificationRule, "Shipment S-1", "Heavy: 12 kg", "info", nil, nil})
		}
		// Every addressed user got it: the feed has run; the others have
		// nothing.
		for name, u := range map[string]dashUser{"cid (not addressed)": cid, "bob of the other tenant": bobB} {
			if _, items := notifList(t, e, u.as, ""); len(items) != 0 {
				t.Errorf("%s got %v", name, items)
			}
		}
		if n := len(e.events(ta.ID, notifications.EventNotificationCreated)); n != 3 {
			t.Errorf("%d notifications.notification.created events, want 3", n)
		}
		if n := len(e.events(tb.ID, notifications.EventNotificationCreated)); n != 0 {
			t.Errorf("%d events in the other tenant", n)
		}
	})
}
