package webhooks_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
	"github.com/tenantkit/tenantkit/webhooks"
)

// signed returns Standard Webhooks headers for body under secret.
func signed(t *testing.T, msgID string, body []byte, secret string) http.Header {
	t.Helper()
	h, err := webhooks.SignatureHeaders(msgID, time.Now(), body, []string{secret})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// An inbound message is verified, accepted once (a repeated id is a
// duplicate), processed by a durable job, and emitted as
// webhooks.inbound.received in the endpoint's tenant.
func TestInboundReceive(t *testing.T) {
	t.Parallel()
	storetest.EachIsolated(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		svc := deliveryEnv(t, db)
		_, sc := storetest.NewScope(t)
		secret := webhooks.NewSecret()
		svc.AddEndpoint("shop", webhooks.Endpoint{Adapter: webhooks.StandardAdapter{Secret: secret}, TenantID: sc.TenantID})
		ctx := t.Context()
		body := []byte(`{"type":"shop.order.paid","id":"o-1"}`)
		h := signed(t, "msg_1", body, secret)

		dup, err := svc.Receive(ctx, "shop", h, body)
		is.NoErr(err)
		is.True(!dup)
		dup, err = svc.Receive(ctx, "shop", h, body)
		is.NoErr(err)
		is.True(dup) // the same message id again

		_, err = svc.Receive(ctx, "nowhere", h, body)
		is.True(errors.Is(err, webhooks.ErrUnknownEndpoint))
		_, err = svc.Receive(ctx, "shop", signed(t, "msg_2", body, webhooks.NewSecret()), body)
		is.True(errors.Is(err, webhooks.ErrVerification)) // another secret
		_, err = svc.Receive(ctx, "shop", h, []byte(`{"type":"shop.order.paid","id":"o-2"}`))
		is.True(errors.Is(err, webhooks.ErrVerification)) // another body
		old, err := webhooks.SignatureHeaders("msg_3", time.Now().Add(-10*time.Minute), body, []string{secret})
		is.NoErr(err)
		_, err = svc.Receive(ctx, "shop", old, body)
		is.True(errors.Is(err, webhooks.ErrVerification)) // outside the 5-minute tolerance

		// The job emits one event for the accepted message.
		deadline := time.Now().Add(10 * time.Second)
		for countEvents(t, db, sc.TenantID, webhooks.EventInboundReceived) == 0 {
			if time.Now().After(deadline) {
				t.Fatal("no webhooks.inbound.received within 10 s")
			}
			time.Sleep(20 * time.Millisecond)
		}
		var data string
		is.NoErr(db.QueryRow(ctx, `SELECT data FROM store_events WHERE tenant_id = $1 AND type = $2`, sc.TenantID,
			webhooks.EventInboundReceived).Scan(&data))
		var ev struct {
			EndpointID, MessageID, Type string
			Payload                     map[string]any
		}
		is.NoErr(json.Unmarshal([]byte(data), &ev))
		is.Equal(ev.EndpointID, "shop")
		is.Equal(ev.MessageID, "msg_1")
		is.Equal(ev.Type, "shop.order.paid")
		is.Equal(ev.Payload["id"], "o-1")
		time.Sleep(100 * time.Millisecond)
		is.Equal(countEvents(t, db, sc.TenantID, webhooks.EventInboundReceived), 1) // processed once
	}, webhooks.Migrations)
}

func TestParseInboundEndpoints(t *testing.T) {
	is := is.New(t)
	secret := webhooks.NewSecret()
	eps, err := webhooks.ParseInboundEndpoints(`{"shop":{"adapter":"standard","secret":"` + secret + `","tenantId":"t1"}}`)
	is.NoErr(err)
	is.Equal(len(eps), 1)
	is.Equal(eps["shop"].TenantID, "t1")
	is.Equal(eps["shop"].Adapter, webhooks.StandardAdapter{Secret: secret})
	eps, err = webhooks.ParseInboundEndpoints("")
	is.NoErr(err)
	is.Equal(len(eps), 0)
	for _, bad := range []string{`[]`, `{"x":{"adapter":"svix","secret":"` + secret + `"}}`, `{"x":{"adapter":"standard","secret":"nope!"}}`,
		`{"x":{"adapter":"standard","secret":"whsec_"}}`, `{"":{"adapter":"standard","secret":"` + secret + `"}}`, `{`} {
		if _, err := webhooks.ParseInboundEndpoints(bad); err == nil {
			t.Errorf("%s was accepted", bad)
		}
	}
}
