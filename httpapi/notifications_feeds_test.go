package httpapi

import (
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tenantkit/tenantkit/httpapi/integrationsapi"
	"github.com/tenantkit/tenantkit/httpapi/notificationsapi"
	"github.com/tenantkit/tenantkit/httpapi/webhooksapi"
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
				[]any{notificationsapi.NotificationRule, "Shipment S-1", "Heavy: 12 kg", "info", nil, nil})
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

// A webhook's failures reach the tenant's users holding webhooks.manage,
// and only once the custom webhooks integration has notifyAdminsOnFailure
// on: a delivery that failed for good (once per webhook and hour), and
// the webhook disabled by its failures.
func TestNotificationFeedWebhooks(t *testing.T) {
	t.Parallel()
	storetest.EachIsolated(t, func(t *testing.T, db *store.DB) {
		rcv := newHookReceiver(t)
		rcv.respond(func(hookRequest) hookReply { return hookReply{status: 500, body: "down"} })
		e := newDeliveryEnv(t, db)
		ta, tb := e.newTenant("Notif hooks "+randomHex(3)), e.newTenant("Notif hooks B "+randomHex(3))
		adminRole := dashNewRole(e, ta, webhooksapi.FeatureWebhooksManage)
		admin, admin2 := dashNewUser(e, ta, adminRole), dashNewUser(e, ta, adminRole)
		viewer := dashNewUser(e, ta, dashNewRole(e, ta, "webhooks.view"))
		adminB := dashNewUser(e, tb, dashNewRole(e, tb, webhooksapi.FeatureWebhooksManage))
		// An admin limited to another organization of the tenant: the
		// webhook (made by the key, in ta's first organization) is not
		// theirs to hear of.
		org2 := e.do("POST", "/api/directory/organizations", e.superKey, map[string]string{"name": "Org2 " + randomHex(3), "tenantId": ta.ID}).expect(201).JSON()["id"].(string)
		org2Role := dashNewRole(e, ta)
		e.do("PUT", "/api/auth/roles/acl", e.superKey, map[string]any{"roleId": org2Role, "features": []string{webhooksapi.FeatureWebhooksManage},
			"organizations": []string{org2}}).expect(200)
		adminOrg2 := dashNewUser(e, tenantFixture{ID: ta.ID, OrgID: org2}, org2Role)
		key := e.newKey(ta, append(slices.Clone(deliveryFeatures), integrationsapi.FeatureIntegrationsManage)...)

		// Off by default: in tenant C, which leaves it off, a failed
		// delivery and a disabled webhook tell nobody.
		tc := e.newTenant("Notif hooks C " + randomHex(3))
		adminC := dashNewUser(e, tc, dashNewRole(e, tc, webhooksapi.FeatureWebhooksManage))
		keyC := e.newKey(tc, deliveryFeatures...)
		quiet := e.createWebhook(keyC, whBody("Quiet", withField("url", rcv.URL+"/quiet"), withField("subscribedEvents", ruleEventPatterns),
			withField("maxRetries", 1), withField("autoDisableThreshold", 1)))["id"].(string)
		e.createRules(keyC, "QUIET-1")
		e.waitDeliveries(keyC, quiet, "failed", 1)

		e.do("PUT", "/api/integrations/"+integrationsapi.IntegrationWebhooks+"/state", key, map[string]any{"notifyAdminsOnFailure": true}).expect(200)
		hook := e.createWebhook(key, whBody("Flaky", withField("url", rcv.URL+"/flaky"), withField("subscribedEvents", ruleEventPatterns),
			withField("maxRetries", 1), withField("autoDisableThreshold", 2)))["id"].(string)
		e.createRules(key, "FLAKY-1", "FLAKY-2")
		e.waitDeliveries(key, hook, "failed", 2)

		// Two failed deliveries (one told: same webhook, same hour) and
		// the webhook disabled at the second.
		items := notifWait(t, e, admin.as, 2)
		byType := map[string]map[string]any{}
		for _, it := range items {
			byType[it["type"].(string)] = it
		}
		failed, disabled := byType[notificationsapi.NotificationWebhookFailed], byType[notificationsapi.NotificationWebhookDisabled]
		if failed == nil || disabled == nil {
			t.Fatalf("the admin's inbox: %v; want one %s and one %s", items, notificationsapi.NotificationWebhookFailed, notificationsapi.NotificationWebhookDisabled)
		}
		notifSame(t, "the failure", []any{failed["title"], failed["severity"]}, []any{"Webhook Flaky: a delivery failed", "error"})
		notifSame(t, "the disabling", []any{disabled["title"], disabled["severity"]}, []any{"Webhook Flaky was disabled", "error"})
		if body, _ := failed["body"].(string); !strings.Contains(body, "HTTP 500") || !strings.Contains(body, "business_rules.rule.created") {
			t.Errorf("the failure's body: %q", body)
		}
		// Every admin-capable user got exactly one of each: the second
		// admin too, and each notification is an event.
		items2 := notifWait(t, e, admin2.as, 2)
		if slices.IndexFunc(items2, func(it map[string]any) bool { return it["type"] == notificationsapi.NotificationWebhookDisabled }) < 0 ||
			items2[0]["type"] == items2[1]["type"] {
			t.Errorf("the second admin's inbox: %v", items2)
		}
		if n := len(e.events(ta.ID, notifications.EventNotificationCreated)); n != 4 {
			t.Errorf("%d notifications.notification.created events, want 4 (2 admins × failed, disabled)", n)
		}
		// The others heard nothing (C's events came first: by now they
		// have most likely been handled).
		for name, u := range map[string]dashUser{"a user without webhooks.manage": viewer, "the other tenant's admin": adminB,
			"the admin of a tenant with notifyAdminsOnFailure off": adminC, "an admin of another organization only": adminOrg2} {
			if _, items := notifList(t, e, u.as, ""); len(items) != 0 {
				t.Errorf("%s got %v", name, items)
			}
		}
	})
}

// A data sync run that fails tells the caller who started it: a user, or
// an API key (its own inbox); nobody else.
func TestNotificationFeedDataSync(t *testing.T) {
	t.Parallel()
	storetest.EachIsolated(t, func(t *testing.T, db *store.DB) {
		f := dsSetup(t, db, true)
		src := dsNewSource(t, 50)
		f.credentials(src.URL, "")
		src.set(func(s *dsSource) {
			s.fail = func(string, int) int { return http.StatusForbidden }
		})
		role := dashNewRole(f.e, f.tf, dsFeatures...)
		starter, other := dashNewUser(f.e, f.tf, role), dashNewUser(f.e, f.tf, role)

		r := f.e.send("POST", "/api/data_sync/run", f.body("import", "batchSize", 10), starter.as).expect(201).JSON()
		run := f.wait(r["id"].(string))
		if run["status"] != "failed" {
			t.Fatalf("the run is %v, want failed", run["status"])
		}
		items := notifWait(t, f.e, starter.as, 1)
		notifSame(t, "the starter's notification", []any{items[0]["type"], items[0]["title"], items[0]["severity"]},
			[]any{notificationsapi.NotificationSyncFailed, "Data sync failed: import of " + f.eid + " (" + dsIntegration + ")", "error"})
		if body, _ := items[0]["body"].(string); !strings.Contains(body, "403") {
			t.Errorf("the notification's body %q, want the run's error (403)", body)
		}

		// A run the key starts fails into the key's inbox.
		id := f.start(f.body("import", "batchSize", 10))
		f.wait(id)
		notifWait(t, f.e, dashAsKey(f.key), 1)
		if _, items := notifList(t, f.e, other.as, ""); len(items) != 0 {
			t.Errorf("a user who started nothing got %v", items)
		}
		if _, items := notifList(t, f.e, starter.as, ""); len(items) != 1 {
			t.Errorf("the starter got %d notifications, want 1 (the key's run is not theirs)", len(items))
		}
	})
}
