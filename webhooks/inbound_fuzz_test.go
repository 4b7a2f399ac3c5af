package webhooks_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/tenantkit/tenantkit/jobs"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
	"github.com/tenantkit/tenantkit/webhooks"
)

// Fuzz targets of the inbound webhook receiver: the Standard Webhooks
// adapter's verification and parsing, the receiver's checks of a
// verified message, and the endpoint configuration
// (APP_INBOUND_WEBHOOKS). The seeds run as ordinary tests.

// fzSecret and fzOtherSecret are fixed signing secrets (32 bytes).
const (
	fzSecret      = "whsec_MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="
	fzOtherSecret = "whsec_ZnV6ei1vdGhlci1zZWNyZXQtZm9yLXRoZS10ZXN0cyE="
)

// fzHeaders builds the Standard Webhooks headers of a fuzzed request. In
// timestamp, $NOW stands for the current Unix time; in signature, $SIG
// for a valid "v1,<base64>" signature of sigBody as message id under
// fzSecret at the timestamp. It returns the headers and the timestamp
// as sent.
func fzHeaders(t *testing.T, id, timestamp, signature string, sigBody []byte) (http.Header, string) {
	t.Helper()
	timestamp = strings.ReplaceAll(timestamp, "$NOW", strconv.FormatInt(time.Now().Unix(), 10))
	if strings.Contains(signature, "$SIG") {
		at := time.Now()
		if n, err := strconv.ParseInt(timestamp, 10, 64); err == nil {
			at = time.Unix(n, 0)
		}
		h, err := webhooks.SignatureHeaders(id, at, sigBody, []string{fzSecret})
		if err != nil {
			t.Fatal(err)
		}
		signature = strings.ReplaceAll(signature, "$SIG", h.Get(webhooks.HeaderSignature))
	}
	h := http.Header{}
	h.Set(webhooks.HeaderID, id)
	h.Set(webhooks.HeaderTimestamp, timestamp)
	h.Set(webhooks.HeaderSignature, signature)
	return h, timestamp
}

// fzVerdict is what verification must answer: accept is whether the
// request is signed under secret for exactly its id, timestamp and body
// within the 5-minute tolerance; sure is false for a timestamp within a
// few seconds of the tolerance's edge, where the clock may move between
// the check and the verification.
func fzVerdict(t *testing.T, secret string, h http.Header, body []byte) (accept, sure bool) {
	t.Helper()
	id, ts, sig := h.Get(webhooks.HeaderID), h.Get(webhooks.HeaderTimestamp), h.Get(webhooks.HeaderSignature)
	n, err := strconv.ParseInt(ts, 10, 64)
	if id == "" || sig == "" || err != nil {
		return false, true
	}
	age := time.Now().Unix() - n
	if age > 300+3 || age < -300-3 {
		return false, true
	}
	sure = age <= 300-3 && age >= -300+3
	want, err := webhooks.SignatureHeaders(id, time.Unix(n, 0), body, []string{secret})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range strings.Split(sig, " ") {
		if parts := strings.Split(s, ","); len(parts) >= 2 && parts[0]+","+parts[1] == want.Get(webhooks.HeaderSignature) {
			return true, sure
		}
	}
	return false, sure
}

// fzSeeds are requests for the verification targets: valid ones, and
// valid signatures in hostile framing, of other bodies or times, and
// broken headers.
var fzSeeds = []struct {
	body, sigBody string // sigBody, when set, is what $SIG signs instead of body
	id, ts, sig   string
	endpoint      string // for the receiver over HTTP: $EP is the configured endpoint
}{
	{body: `{"type":"shop.order.paid","id":"o-1"}`, id: "msg_1", ts: "$NOW", sig: "$SIG", endpoint: "$EP"},
	{body: `{"type":"shop.order.paid"}`, sigBody: `{"type":"shop.order.refunded"}`, id: "msg_2", ts: "$NOW", sig: "$SIG", endpoint: "$EP"},
	{body: `{}`, id: "msg_3", ts: "$NOW", sig: "v1,AAAA $SIG v2,x", endpoint: "$EP"},
	{body: `{}`, id: "msg_4", ts: "$NOW", sig: "$SIG,extra", endpoint: "$EP"},
	{body: `{}`, id: "msg_5", ts: "$NOW", sig: "v1a,x $SIG", endpoint: "$EP"},
	{body: `{}`, id: "msg_6", ts: "1", sig: "$SIG", endpoint: "$EP"},
	{body: `{}`, id: "msg_7", ts: "99999999999", sig: "$SIG", endpoint: "$EP"},
	{body: `{}`, id: "msg_8", ts: "+$NOW", sig: "$SIG", endpoint: "$EP"},
	{body: `{}`, id: "msg_9", ts: "0$NOW", sig: "$SIG", endpoint: "$EP"},
	{body: `{}`, id: "msg_10", ts: "-9223372036854775808", sig: "$SIG", endpoint: "$EP"},
	{body: `{}`, id: "msg_11", ts: "x", sig: "$SIG", endpoint: "$EP"},
	{body: `{}`, id: "", ts: "$NOW", sig: "$SIG", endpoint: "$EP"},
	{body: `{}`, id: "msg_12", ts: "$NOW", sig: "", endpoint: "$EP"},
	{body: `{}`, id: "msg.13.", ts: "$NOW", sig: "$SIG", endpoint: "$EP"},
	{body: `{"type":5}`, id: "msg_14", ts: "$NOW", sig: "$SIG", endpoint: "$EP"},
	{body: `[1,2]`, id: "msg_15", ts: "$NOW", sig: "$SIG", endpoint: "$EP"},
	{body: `null`, id: "msg_16", ts: "$NOW", sig: "$SIG", endpoint: "$EP"},
	{body: `not json`, id: "msg_17", ts: "$NOW", sig: "$SIG", endpoint: "$EP"},
	{body: `{"type":"a\u0000b"}`, id: "msg_18", ts: "$NOW", sig: "$SIG", endpoint: "$EP"},
	{body: `{"type":"x","data":"\u0000"}`, id: "msg_19", ts: "$NOW", sig: "$SIG", endpoint: "$EP"},
	{body: "{\"type\":\"\xff\"}", id: "msg_20", ts: "$NOW", sig: "$SIG", endpoint: "$EP"},
	{body: `{"type":"` + strings.Repeat("t", 201) + `"}`, id: "msg_21", ts: "$NOW", sig: "$SIG", endpoint: "$EP"},
	{body: `{}`, id: strings.Repeat("i", 256), ts: "$NOW", sig: "$SIG", endpoint: "$EP"},
	{body: `{}`, id: "msg\x00", ts: "$NOW", sig: "$SIG", endpoint: "$EP"},
	{body: `{}`, id: "msg\xff", ts: "$NOW", sig: "$SIG", endpoint: "$EP"},
	{body: `{"type":"\ud800"}`, id: "msg_22", ts: "$NOW", sig: "$SIG", endpoint: "$EP"},
	{body: `{"type":"ok"}`, id: "msg_23", ts: "$NOW", sig: "$SIG", endpoint: "nowhere"},
	{body: `{"type":"ok"}`, id: "msg_24", ts: "$NOW", sig: "$SIG", endpoint: "$EP/../x"},
	{body: `{"type":"ok"}`, id: "msg_25", ts: "$NOW", sig: "$SIG", endpoint: ""},
	{body: ``, id: "msg_26", ts: "$NOW", sig: "$SIG", endpoint: "$EP"},
}

// FuzzStandardAdapter verifies and parses arbitrary requests with the
// Standard Webhooks adapter. It never panics; it accepts a request
// exactly when the request carries a v1 signature under its secret of
// its own message id, timestamp and body, within 5 minutes of now (so a
// signature of another body, time or id, or under another secret, is
// refused); a verified message parses to the webhook-id header, the body
// as payload, and the body's "type" (or the default type).
func FuzzStandardAdapter(f *testing.F) {
	for _, s := range fzSeeds {
		sigBody := s.sigBody
		if sigBody == "" {
			sigBody = s.body
		}
		f.Add([]byte(s.body), []byte(sigBody), s.id, s.ts, s.sig)
	}
	adapters := map[string]webhooks.StandardAdapter{fzSecret: {Secret: fzSecret}, fzOtherSecret: {Secret: fzOtherSecret}}
	f.Fuzz(func(t *testing.T, body, sigBody []byte, id, timestamp, signature string) {
		h, _ := fzHeaders(t, id, timestamp, signature, sigBody)
		for secret, a := range adapters {
			err := a.Verify(h, body)
			accept, sure := fzVerdict(t, secret, h, body)
			if sure && accept != (err == nil) {
				t.Fatalf("secret %s: Verify(id %q, timestamp %q, signature %q, body %q) = %v, want accepted: %v",
					secret[:10], h.Get(webhooks.HeaderID), h.Get(webhooks.HeaderTimestamp), h.Get(webhooks.HeaderSignature), body, err, accept)
			}
			if err != nil {
				continue
			}
			in, err := a.Parse(h, body)
			if err != nil {
				continue // the receiver refuses it as unreadable
			}
			if in.ID != h.Get(webhooks.HeaderID) || !bytes.Equal(in.Payload, body) || in.Type == "" {
				t.Fatalf("Parse(%q) = %+v", body, in)
			}
			var msg struct{ Type string }
			if json.Unmarshal(body, &msg) == nil && msg.Type != "" && in.Type != msg.Type {
				t.Fatalf("Parse(%q): type %q, want %q", body, in.Type, msg.Type)
			}
		}
	})
}

// FuzzParseInboundEndpoints reads arbitrary APP_INBOUND_WEBHOOKS texts.
// It never panics; an accepted configuration names each endpoint with 1
// to 100 characters of storable text and gives it a Standard Webhooks
// adapter whose secret is a usable key: a request signed with an empty
// key (which anyone can compute) is refused.
func FuzzParseInboundEndpoints(f *testing.F) {
	for _, s := range []string{
		``, `{}`, `[]`, `null`, `{`,
		`{"shop":{"adapter":"standard","secret":"` + fzSecret + `","tenantId":"t1","organizationId":"o1"}}`,
		`{"shop":{"adapter":"standard","secret":"` + fzSecret + `"},"b":{"adapter":"standard","secret":"` + fzOtherSecret + `"}}`,
		`{"x":{"adapter":"svix","secret":"` + fzSecret + `"}}`,
		`{"x":{"adapter":"standard","secret":"nope!"}}`,
		`{"x":{"adapter":"standard","secret":"whsec_"}}`,
		`{"x":{"adapter":"standard","secret":"whsec_===="}}`,
		`{"":{"adapter":"standard","secret":"` + fzSecret + `"}}`,
		`{"\u0000":{"adapter":"standard","secret":"` + fzSecret + `"}}`,
		`{"x":{"adapter":"standard","secret":"` + fzSecret + `","tenantId":5}}`,
		`{"x":null}`,
		`{"` + strings.Repeat("e", 101) + `":{"adapter":"standard","secret":"` + fzSecret + `"}}`,
	} {
		f.Add(s)
	}
	empty, err := standardwebhooks.NewWebhookRaw(nil)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, text string) {
		eps, err := webhooks.ParseInboundEndpoints(text)
		if err != nil {
			if eps != nil {
				t.Fatalf("%q: error %v with endpoints %v", text, err, eps)
			}
			return
		}
		for id, ep := range eps {
			if id == "" || len(id) > 100 || !store.Storable(id) {
				t.Fatalf("%q: endpoint id %q accepted", text, id)
			}
			a, ok := ep.Adapter.(webhooks.StandardAdapter)
			if !ok {
				t.Fatalf("%q: endpoint %q has adapter %T", text, id, ep.Adapter)
			}
			if _, err := standardwebhooks.NewWebhook(a.Secret); err != nil {
				t.Fatalf("%q: endpoint %q has an unusable secret %q: %v", text, id, a.Secret, err)
			}
			now := time.Now()
			body := []byte(`{"type":"forged"}`)
			sig, err := empty.Sign("msg_forged", now, body)
			if err != nil {
				t.Fatal(err)
			}
			h := http.Header{}
			h.Set(webhooks.HeaderID, "msg_forged")
			h.Set(webhooks.HeaderTimestamp, strconv.FormatInt(now.Unix(), 10))
			h.Set(webhooks.HeaderSignature, sig)
			if a.Verify(h, body) == nil {
				t.Fatalf("%q: endpoint %q (secret %q) accepts a message signed with an empty key", text, id, a.Secret)
			}
		}
	})
}

// FuzzReceive hands arbitrary requests to Service.Receive for an
// endpoint with the Standard Webhooks adapter. The answer is one of:
// accepted (then the same request again is a duplicate), ErrVerification
// (exactly when the signature does not verify), or a store.ErrInvalid
// error for a verified message the receiver cannot keep (no usable id
// or type, a body that is not JSON or holds NUL): never another error,
// never a panic. A message is accepted only if its body is JSON without
// NUL and its id and type are storable.
func FuzzReceive(f *testing.F) {
	for _, s := range fzSeeds {
		if s.sigBody != "" || s.endpoint != "$EP" {
			continue
		}
		f.Add([]byte(s.body), s.id, s.ts, s.sig)
	}
	type engine struct {
		name string
		svc  *webhooks.Service
	}
	dbs := map[string]*store.DB{"sqlite": storetest.SQLite(f, webhooks.Migrations)}
	if os.Getenv(storetest.PostgresEnv) != "" {
		dbs["postgres"] = storetest.Postgres(f, webhooks.Migrations)
	}
	var engines []engine
	for name, db := range dbs {
		svc, err := webhooks.New(db, webhooks.Options{SecretKey: make([]byte, 32)})
		if err != nil {
			f.Fatal(err)
		}
		// Jobs are registered, not started: accepting a message only
		// enqueues its processing.
		je, err := jobs.New(f.Context(), db, jobs.Config{})
		if err != nil {
			f.Fatal(err)
		}
		if err := svc.RegisterJobs(je); err != nil {
			f.Fatal(err)
		}
		svc.AddEndpoint("fuzz", webhooks.Endpoint{Adapter: webhooks.StandardAdapter{Secret: fzSecret}, TenantID: store.NewID()})
		engines = append(engines, engine{name, svc})
	}
	// Message ids are new on every call (and run: PostgreSQL's schema is
	// shared), so that only the repeat below is a duplicate.
	run, calls := strconv.FormatInt(time.Now().UnixNano(), 36), 0
	f.Fuzz(func(t *testing.T, body []byte, id, timestamp, signature string) {
		for _, e := range engines {
			calls++
			msgID := id
			if id != "" { // an empty id stays empty (refused)
				msgID = id + "." + run + "." + strconv.Itoa(calls)
			}
			h, _ := fzHeaders(t, msgID, timestamp, signature, body)
			accept, sure := fzVerdict(t, fzSecret, h, body)
			dup, err := e.svc.Receive(t.Context(), "fuzz", h, body)
			where := e.name + ": Receive(id " + strconv.Quote(msgID) + ", timestamp " + strconv.Quote(h.Get(webhooks.HeaderTimestamp)) +
				", signature " + strconv.Quote(h.Get(webhooks.HeaderSignature)) + ", body " + strconv.Quote(string(body)) + ")"
			switch {
			case errors.Is(err, webhooks.ErrVerification):
				if accept && sure {
					t.Fatalf("%s: a correctly signed request refused: %v", where, err)
				}
				continue
			case !accept && sure:
				t.Fatalf("%s: a request that does not verify: (%v, %v)", where, dup, err)
			case err != nil:
				if !errors.Is(err, store.ErrInvalid) {
					t.Fatalf("%s: %v, want ErrVerification or ErrInvalid", where, err)
				}
				continue
			}
			if dup {
				t.Fatalf("%s: a new message reported as a duplicate", where)
			}
			if !json.Valid(body) || store.JSONHasNUL(body) || !store.Storable(msgID) {
				t.Fatalf("%s: accepted", where)
			}
			if dup, err := e.svc.Receive(t.Context(), "fuzz", h, body); err != nil && sure || err == nil && !dup {
				t.Fatalf("%s again: (%v, %v), want a duplicate", where, dup, err)
			}
		}
	})
}
