package httpapi

import (
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/tenantkit/tenantkit/httpapi/webhooksapi"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// Server-side request forgery through webhook targets. newTestEnv's Kit
// keeps the default: private targets refused.

// ssrfURLs are loopback targets written in forms a naive check misses:
// IPv6 addresses carrying 127.0.0.1, inet_aton shorthands, trailing dots
// and full-width digits.
var ssrfURLs = []string{
	"http://[64:ff9b::7f00:1]:8080/h",            // NAT64
	"http://[::127.0.0.1]:8080/h",                // IPv4-compatible
	"http://[2002:7f00:1::1]:8080/h",             // 6to4
	"http://[::ffff:127.0.0.1]:8080/h",           // IPv4-mapped
	"http://[2001:0:808:808::80ff:fffe]/h",       // Teredo, client 127.0.0.1
	"http://[64:ff9b:1::808:808]/h",              // local-use NAT64
	"http://[64:ff9b::a9fe:a9fe]/latest/",        // NAT64 of the metadata address
	"http://127.1:8080/h",                        // inet_aton a.b
	"http://0x7f.1:8080/h",                       // hex
	"http://0177.0.0.1:8080/h",                   // octal
	"http://127.000.000.001:8080/h",              // leading zeros
	"http://2130706433:8080/h",                   // one 32-bit number
	"http://0xa9fea9fe/latest/meta-data/",        // 169.254.169.254
	"http://localhost..:8080/h",                  // trailing dots
	"http://localhost.:8080/h",                   //
	"http://１２７.０.０.１:8080/h",                    // full-width digits
	"http://ｌｏｃａｌｈｏｓｔ:8080/h",                    // full-width letters
	"http://%EF%BC%91%EF%BC%92%EF%BC%97.0.0.1/h", // full-width digits, percent-encoded
}

const msgPrivateTarget = "must not target a private, loopback or link-local address"

// Create and update refuse every form with 400 naming url; the webhook
// keeps its target.
func TestWebhookSSRFURLsRefused(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newTestEnv(t, db)
		acme := e.newTenant("Acme")
		key := e.newKey(acme, allWebhookFeatures...)
		seed := e.createWebhook(key, whBody("seed"))
		seedID := seed["id"].(string)
		for _, u := range ssrfURLs {
			t.Run(u, func(t *testing.T) {
				e := e.with(t)
				want := map[string]string{"url": msgPrivateTarget}
				expectWebhookInvalid(t, e.do("POST", webhooksBase, key, whBody("ssrf", func(b map[string]any) { b["url"] = u })), want)
				expectWebhookInvalid(t, e.do("PUT", whPath(seedID), key, map[string]any{"url": u}), want)
			})
		}
		got := e.do("GET", whPath(seedID), key, nil).expect(200).JSON()
		if got["url"] != seed["url"] {
			t.Fatalf("url %v after refused updates, want %v", got["url"], seed["url"])
		}
		list := e.do("GET", webhooksBase, key, nil).expect(200).JSON()
		if list["total"] != 1.0 {
			t.Fatalf("%v webhooks after refused creates, want 1", list["total"])
		}
	})
}

// genericDeliveryErrors are the texts a delivery's errorMessage may hold
// for an attempt that got no response.
var genericDeliveryErrors = []string{"connection refused", "timeout", "blocked address", "DNS failure", "TLS failure", "connection failed"}

var ipInText = regexp.MustCompile(`\d+\.\d+\.\d+\.\d+|\[?[0-9a-fA-F]*:[0-9a-fA-F]*:[0-9a-fA-F:]*\]?`)

// A test send to a target refused when it connects stores a generic
// error message: no resolver, no address.
// The targets are written into the row directly, as a webhook created
// before this check (or while private targets were allowed) has them.
func TestWebhookTestSendGenericError(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		var hits atomic.Int32
		rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { hits.Add(1) }))
		t.Cleanup(rcv.Close)
		port := rcv.URL[strings.LastIndexByte(rcv.URL, ':')+1:]

		e := newTestEnv(t, db)
		acme := e.newTenant("Acme")
		key := e.newKey(acme, append([]string{webhooksapi.FeatureWebhooksTest}, allWebhookFeatures...)...)
		id := e.createWebhook(key, whBody("probe", func(b map[string]any) { b["timeoutMs"] = 2000 }))["id"].(string)

		for target, want := range map[string][]string{
			rcv.URL + "/h":                      {"blocked address"},
			"http://[::ffff:127.0.0.1]:" + port: {"blocked address"},
			"http://localhost:" + port + "/h":   {"blocked address"},
			// Names that need the network's resolver (0x7f.1, *.invalid) are
			// left out: tests send nothing beyond loopback. Reason's own
			// tests classify DNS failures.
		} {
			t.Run(target, func(t *testing.T) {
				e := e.with(t)
				if _, err := db.Exec(t.Context(), "UPDATE webhooks SET url = $1 WHERE id = $2", target, id); err != nil {
					t.Fatal(err)
				}
				d := e.do("POST", whPath(id, "/test"), key, nil).expect(200).JSON()
				msg, _ := d["errorMessage"].(string)
				if d["status"] != "failed" || !slices.Contains(want, msg) || !slices.Contains(genericDeliveryErrors, msg) {
					t.Fatalf("test send to %s: status %v, errorMessage %q, want failed with one of %q", target, d["status"], msg, want)
				}
				for _, leak := range []string{"lookup", ":53", "netguard", "dial", "127.0.0.1"} {
					if strings.Contains(msg, leak) {
						t.Fatalf("errorMessage %q names %q", msg, leak)
					}
				}
				if ipInText.MatchString(msg) {
					t.Fatalf("errorMessage %q holds an address", msg)
				}
				stored := e.getDelivery(key, d["id"].(string))
				if stored["errorMessage"] != msg {
					t.Fatalf("stored errorMessage %v, want %q", stored["errorMessage"], msg)
				}
			})
		}
		if n := hits.Load(); n != 0 {
			t.Fatalf("the loopback receiver got %d requests", n)
		}
	})
}
