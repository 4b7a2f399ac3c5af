package httpapi

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tenantkit/tenantkit/webhooks"
)

// fuzzInboundSecret is the signing secret of the fuzzed inbound endpoint.
const fuzzInboundSecret = "whsec_MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="

// FuzzInboundRoute posts arbitrary requests to POST
// /api/webhooks/inbound/{endpointId}, with rate limiting off. In the
// endpoint, $EP stands for the configured endpoint; in the timestamp,
// $NOW for the current Unix time; in the signature, $SIG for a valid
// signature of the request's id, timestamp and body. No answer is a
// 5xx, a 401 or a 403 (the signature is the credential): 200 ({ok}, or
// {ok, duplicate}) only for the configured endpoint and a request whose
// signature verifies, 404 for another endpoint, otherwise 400 (or 413)
// with an {error} body.
func FuzzInboundRoute(f *testing.F) {
	for _, s := range []struct {
		endpoint, id, ts, sig, body string
	}{
		{"$EP", "msg_1", "$NOW", "$SIG", `{"type":"shop.order.paid"}`},
		{"$EP", "msg_2", "$NOW", "v1,AAAA $SIG", `{}`},
		{"$EP", "msg_3", "$NOW", "v1,AAAA", `{}`},
		{"$EP", "msg_4", "1", "$SIG", `{}`},
		{"$EP", "msg_5", "x", "$SIG", `{}`},
		{"$EP", "", "$NOW", "$SIG", `{}`},
		{"$EP", "msg_6", "$NOW", "$SIG", `not json`},
		{"$EP", "msg_7", "$NOW", "$SIG", `{"type":"a\u0000"}`},
		{"$EP", "msg_8", "$NOW", "$SIG", "{\"type\":\"\xff\"}"},
		{"$EP", "msg_9", "$NOW", "$SIG", `{"type":"\ud800"}`},
		{"$EP", "msg\x00", "$NOW", "$SIG", `{}`},
		{"$EP", strings.Repeat("i", 300), "$NOW", "$SIG", `{}`},
		{"$EP", "msg_10", "$NOW", "$SIG", `{"type":"` + strings.Repeat("t", 300) + `"}`},
		{"nowhere", "msg_11", "$NOW", "$SIG", `{}`},
		{"", "msg_12", "$NOW", "$SIG", `{}`},
		{"$EP/..", "msg_13", "$NOW", "$SIG", `{}`},
		{"%00", "msg_14", "$NOW", "$SIG", `{}`},
		{"test", "msg_15", "$NOW", "$SIG", `{}`},
		{"rotate-secret", "msg_16", "$NOW", "$SIG", `{}`},
	} {
		f.Add(s.endpoint, s.id, s.ts, s.sig, []byte(s.body))
	}
	envs := fuzzEnvs(f)
	const endpoint = "fuzz-ep"
	for _, e := range envs {
		e.kit.Webhooks.AddEndpoint(endpoint, webhooks.Endpoint{Adapter: webhooks.StandardAdapter{Secret: fuzzInboundSecret}})
	}
	run, calls := strconv.FormatInt(time.Now().UnixNano(), 36), 0
	f.Fuzz(func(t *testing.T, ep, id, ts string, sig string, body []byte) {
		for _, fe := range envs {
			calls++
			ep := strings.ReplaceAll(ep, "$EP", endpoint)
			msgID := id
			if id != "" { // new on every call (PostgreSQL's schema is shared between runs)
				msgID = id + "." + run + "." + strconv.Itoa(calls)
			}
			ts := strings.ReplaceAll(ts, "$NOW", strconv.FormatInt(time.Now().Unix(), 10))
			at := time.Now()
			n, tsErr := strconv.ParseInt(ts, 10, 64)
			if tsErr == nil {
				at = time.Unix(n, 0)
			}
			valid, err := webhooks.SignatureHeaders(msgID, at, body, []string{fuzzInboundSecret})
			if err != nil {
				t.Fatal(err)
			}
			want := valid.Get(webhooks.HeaderSignature)
			sig := strings.ReplaceAll(sig, "$SIG", want)
			// Whether the request verifies (Standard Webhooks: some
			// space-separated "v1,<signature>[,…]" is right), and whether
			// that is sure: not within seconds of the 5-minute tolerance.
			age := time.Since(at).Abs()
			sure := tsErr != nil || age < 5*time.Minute-3*time.Second || age > 5*time.Minute+3*time.Second
			verifies := false
			for _, field := range strings.Split(sig, " ") {
				if parts := strings.Split(field, ","); len(parts) >= 2 && parts[0]+","+parts[1] == want {
					verifies = msgID != "" && tsErr == nil && age < 5*time.Minute
				}
			}

			req := httptest.NewRequestWithContext(t.Context(), "POST", "/api/webhooks/inbound/x", bytes.NewReader(body))
			req.URL.Path = "/api/webhooks/inbound/" + ep
			req.URL.RawPath = "/api/webhooks/inbound/" + url.PathEscape(ep)
			req.Header.Set(webhooks.HeaderID, msgID)
			req.Header.Set(webhooks.HeaderTimestamp, ts)
			req.Header.Set(webhooks.HeaderSignature, sig)
			rec := httptest.NewRecorder()
			fe.handler.ServeHTTP(rec, req)
			r := &response{t: t, Status: rec.Code, Header: rec.Header(), Body: rec.Body.Bytes()}
			where := fe.engine + ": POST inbound/" + fzQuote(ep) + " id " + fzQuote(msgID) + " timestamp " + fzQuote(ts) + " signature " + fzQuote(sig) + " body " + fzQuote(string(body))
			switch r.Status {
			case http.StatusOK:
				if ep != endpoint || !verifies && sure {
					t.Fatalf("%s: accepted: %s", where, r.Body)
				}
			case http.StatusNotFound:
				if ep == endpoint {
					t.Fatalf("%s: 404 for the configured endpoint: %s", where, r.Body)
				}
			case http.StatusBadRequest, http.StatusRequestEntityTooLarge:
				if ep == endpoint && verifies && sure && string(r.Body) == `{"error":"Verification failed"}` {
					t.Fatalf("%s: a correctly signed request refused: %s", where, r.Body)
				}
			case http.StatusMovedPermanently, http.StatusTemporaryRedirect, http.StatusPermanentRedirect, http.StatusMethodNotAllowed:
				if ep == endpoint {
					t.Fatalf("%s: status %d", where, r.Status)
				}
				continue
			default:
				t.Fatalf("%s: status %d: %s", where, r.Status, r.Body)
			}
			if r.Status != http.StatusOK && r.JSON()["error"] == nil {
				t.Fatalf("%s: %d without an error: %s", where, r.Status, r.Body)
			}
		}
	})
}
