package httpapi

import (
	"net/http"
	"os"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// GET /webhooks/queues shows super admins which process holds each
// webhook's delivery queue and how far behind it is, across tenants;
// ?tenantId picks one tenant's. Two tenants' webhooks, each with its
// first send held by the receiver: both queues are held by this process
// (host:pid:instance) with a live lease, with 3 and 2 deliveries due; a
// tenant's own key, however many webhook features it holds, gets 403;
// once the receiver answers, the queues drain and leave the list.
func TestWebhookQueues(t *testing.T) {
	t.Parallel()
	storetest.EachIsolated(t, func(t *testing.T, db *store.DB) {
		rcv := newHookReceiver(t)
		release := make(chan struct{})
		var once sync.Once
		letGo := func() { once.Do(func() { close(release) }) }
		t.Cleanup(letGo) // before the receiver closes (cleanups run last first)
		rcv.respond(func(hookRequest) hookReply {
			<-release
			return hookReply{status: http.StatusOK, body: `{"ok":true}`}
		})
		e := newDeliveryEnv(t, db)
		a := e.deliveryFixture(rcv, "queues-a", "/a")
		b := e.deliveryFixture(rcv, "queues-b", "/b")
		start := time.Now()
		e.createRules(a.key, "QUEUE_A1", "QUEUE_A2", "QUEUE_A3")
		e.createRules(b.key, "QUEUE_B1", "QUEUE_B2")
		rcv.waitRequests(t, "/a", 1)
		rcv.waitRequests(t, "/b", 1)

		holder := regexp.MustCompile(`^[^:/]+:` + strconv.Itoa(os.Getpid()) + `:[0-9a-f]{8}$`)
		queues := func(query string) map[string]map[string]any {
			t.Helper()
			body := e.do("GET", webhooksBase+"/queues"+query, e.superKey, nil).expect(200).JSON()
			items, _ := body["data"].([]any)
			if body["total"] != float64(len(items)) {
				t.Fatalf("total %v, %d items", body["total"], len(items))
			}
			out := map[string]map[string]any{}
			for _, it := range items {
				m := it.(map[string]any)
				out[m["webhookId"].(string)] = m
			}
			return out
		}
		check := func(q map[string]any, f deliveryFixture, due int) {
			t.Helper()
			if q == nil {
				t.Fatalf("the queue of %s is not listed", f.webhookID)
			}
			if q["tenantId"] != f.tenant.ID || q["live"] != true || q["due"] != float64(due) {
				t.Errorf("queue %v, want tenant %s, live, %d due", q, f.tenant.ID, due)
			}
			if h, _ := q["holder"].(string); !holder.MatchString(h) {
				t.Errorf("holder %q is not this process's host:%d:instance", h, os.Getpid())
			}
			until, err := time.Parse(time.RFC3339Nano, q["leaseUntil"].(string))
			if err != nil || !until.After(time.Now().Add(-time.Second)) || until.After(time.Now().Add(4*time.Second)) {
				t.Errorf("leaseUntil %v (%v), want within the 3 s lease", q["leaseUntil"], err)
			}
			age, ok := q["oldestDueAgeMs"].(float64)
			if !ok || age < 0 || age > float64(time.Since(start).Milliseconds()+1000) {
				t.Errorf("oldestDueAgeMs %v, want the age of the first rule's delivery (at most %v)", q["oldestDueAgeMs"], time.Since(start))
			}
		}
		// Wait for the later rules' deliveries to commit behind the held
		// sends (the rules are created one after another, so they have).
		all := queues("")
		check(all[a.webhookID], a, 3)
		check(all[b.webhookID], b, 2)

		only := queues("?tenantId=" + a.tenant.ID)
		if len(only) != 1 || only[a.webhookID] == nil {
			t.Errorf("?tenantId=%s listed %v, want only its webhook's queue", a.tenant.ID, only)
		}
		check(only[a.webhookID], a, 3)
		if other := queues("?tenantId=" + store.NewID()); len(other) != 0 {
			t.Errorf("an unknown tenant's queues: %v", other)
		}

		// Not a tenant's: its key with every webhook feature is refused.
		e.do("GET", webhooksBase+"/queues", a.key, nil).expect(http.StatusForbidden)
		e.do("GET", webhooksBase+"/queues", "", nil).expect(http.StatusUnauthorized)

		letGo()
		e.waitDeliveries(a.key, a.webhookID, "delivered", 3)
		e.waitDeliveries(b.key, b.webhookID, "delivered", 2)
		eventually(t, "the drained queues leave the list", func() bool {
			all := queues("")
			return all[a.webhookID] == nil && all[b.webhookID] == nil
		})
	})
}
