package tenantkit_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/matryer/is"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/tenantkit/tenantkit/full"
	"github.com/tenantkit/tenantkit/rules"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/webhooks"
)

// A business rule's CALL_WEBHOOK to a URL the tenant registered as a
// webhook is signed with that webhook's secret (both secrets during a
// rotation), with a message id that stays the same on a retry; a call to
// another URL, or from another tenant, goes unsigned.
func TestKitSignsRuleCalls(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	type call struct {
		path   string
		header http.Header
		body   []byte
	}
	got := make(chan call, 16)
	failFirst := make(chan struct{}, 1)
	failFirst <- struct{}{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- call{r.URL.Path, r.Header.Clone(), b}
		if r.URL.Path == "/retried" {
			select {
			case <-failFirst:
				w.WriteHeader(http.StatusServiceUnavailable) // retried by the job engine
				return
			default:
			}
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)

	kit, err := full.OpenPlain(t.Context(), full.Config{DatabaseURL: "sqlite::memory:",
		Rules: rules.Options{AllowPrivateURLs: true}, Webhooks: webhooks.Options{AllowPrivateURLs: true}})
	is.NoErr(err)
	is.NoErr(kit.Start(t.Context()))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = kit.Close(ctx)
	})

	tenant := store.WithScope(t.Context(), store.Scope{TenantID: store.NewID()})
	other := store.WithScope(t.Context(), store.Scope{TenantID: store.NewID()})
	hook, firstSecret, err := kit.Webhooks.Create(tenant, webhooks.Input{Name: "rules", URL: srv.URL + "/signed",
		SubscribedEvents: []string{"nothing.*"}})
	is.NoErr(err)
	rot, err := kit.Webhooks.RotateSecret(tenant, hook.ID)
	is.NoErr(err)
	_, retriedSecret, err := kit.Webhooks.Create(tenant, webhooks.Input{Name: "retried", URL: srv.URL + "/retried",
		SubscribedEvents: []string{"nothing.*"}})
	is.NoErr(err)

	run := func(ctx context.Context, path string) {
		t.Helper()
		id := "CALL_" + path[1:]
		on, zero, one := true, 0, 1
		r, err := kit.Rules.CreateRule(ctx, rules.RuleInput{RuleID: id, RuleName: id, RuleType: rules.Action, EntityType: "order",
			Enabled: &on, Priority: &zero, Version: &one,
			ConditionExpression: json.RawMessage(`{"field":"status","operator":"=","value":"OPEN"}`),
			SuccessActions:      json.RawMessage(`[{"type":"CALL_WEBHOOK","config":{"url":"` + srv.URL + path + `","body":{"order":"{{entityId}}"}}}]`)})
		is.NoErr(err)
		_, err = kit.Rules.ExecuteRule(ctx, r.ID, rules.Input{EntityType: "order", EntityID: "o-1",
			Data: map[string]any{"status": "OPEN"}})
		is.NoErr(err)
	}
	next := func() call {
		t.Helper()
		select {
		case c := <-got:
			return c
		case <-time.After(30 * time.Second):
			t.Fatal("no call within 30 s")
			return call{}
		}
	}
	verify := func(secret string, c call) error {
		wh, err := standardwebhooks.NewWebhook(secret)
		is.NoErr(err)
		return wh.Verify(c.body, c.header)
	}

	run(tenant, "/signed")
	c := next()
	is.Equal(c.path, "/signed")
	is.NoErr(verify(rot.Secret, c))  // the new secret verifies
	is.NoErr(verify(firstSecret, c)) // and, during the rotation, the old one
	is.True(len(c.header.Get("webhook-id")) == len("msg_")+32)

	run(tenant, "/retried")
	first, second := next(), next()
	is.Equal(first.path, "/retried")
	is.Equal(second.path, "/retried")
	is.NoErr(verify(retriedSecret, second))
	is.Equal(first.header.Get("webhook-id"), second.header.Get("webhook-id")) // one message, retried

	run(tenant, "/unregistered")
	c = next()
	is.Equal(c.path, "/unregistered")
	is.Equal(c.header.Get("webhook-signature"), "") // no webhook for this URL: unsigned

	run(other, "/signed") // the same URL, another tenant: not its webhook
	c = next()
	is.Equal(c.path, "/signed")
	is.Equal(c.header.Get("webhook-signature"), "")
}
