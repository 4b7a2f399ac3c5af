package webhooks_test

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/tenantkit/tenantkit/internal/testing/logbuf"

	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
	"github.com/tenantkit/tenantkit/webhooks"
)

// disguisedPrivateURLs reach loopback or link-local addresses through IPv6
// forms carrying an IPv4 address, inet_aton shorthands, trailing dots or
// full-width characters.
var disguisedPrivateURLs = []string{
	"http://[64:ff9b::7f00:1]:8080/h", "http://[::127.0.0.1]:8080/h", "http://[2002:7f00:1::1]:8080/h",
	"http://[2001:0:808:808::80ff:fffe]/h", "http://[64:ff9b:1::808:808]/h", "http://[::ffff:0:7f00:1]/h",
	"http://127.1/h", "http://0x7f.1/h", "http://0177.0.0.1/h", "http://127.000.000.001/h", "http://2130706433/h",
	"http://169.254.43518/latest", "http://localhost../h", "http://localhost./h", "http://１２７.０.０.１/h",
	"http://ｌｏｃａｌｈｏｓｔ/h", "http://router.home.arpa/h",
}

// Create and Update refuse them; with AllowPrivateURLs both accept them.
func TestDisguisedPrivateURLs(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		strict := newSvc(t, db, webhooks.Options{})
		permissive := newSvc(t, db, webhooks.Options{AllowPrivateURLs: true})
		ctx, _ := storetest.NewScope(t)
		seed, _ := mustCreate(t, strict, ctx, hookInput("seed"))
		want := map[string]string{"url": msgURLPrivate}
		for _, u := range disguisedPrivateURLs {
			in := hookInput("h")
			in.URL = u
			_, _, err := strict.Create(ctx, in)
			wantValidation(t, err, want)
			_, err = strict.Update(ctx, seed.ID, webhooks.Patch{URL: &u})
			wantValidation(t, err, want)

			if _, _, err := permissive.Create(ctx, in); err != nil {
				t.Errorf("Create(%q) with private URLs allowed: %v", u, err)
			}
			if _, err := permissive.Update(ctx, seed.ID, webhooks.Patch{URL: &u}); err != nil {
				t.Errorf("Update(%q) with private URLs allowed: %v", u, err)
			}
		}
		// Numeric hosts that are no address are malformed either way.
		for _, u := range []string{"http://0x7f.1.2.3.4/h", "http://256.0.0.1/h", "http://example.123/h"} {
			for _, svc := range []*webhooks.Service{strict, permissive} {
				in := hookInput("h")
				in.URL = u
				_, _, err := svc.Create(ctx, in)
				wantValidation(t, err, map[string]string{"url": msgURLShape})
			}
		}
	}, webhooks.Migrations)
}

// A test send refused when it connects records "blocked address" for the
// tenant; the server's log has the detail, with the delivery and webhook.
func TestTestSendErrorIsGeneric(t *testing.T) {
	t.Parallel()
	var logs logbuf.Buffer
	db, err := store.Open(t.Context(), storetest.SQLiteURL(t), &store.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := db.Migrate(t.Context(), webhooks.Migrations); err != nil {
		t.Fatal(err)
	}
	var hit atomic.Bool
	rcv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hit.Store(true) }))
	t.Cleanup(rcv.Close)

	// Written while private targets were allowed; sent after they no
	// longer are.
	ctx, _ := storetest.NewScope(t)
	in := hookInput("old")
	in.URL = rcv.URL + "/h"
	key := make([]byte, 32)
	w, _ := mustCreate(t, newSvc(t, db, webhooks.Options{SecretKey: key, AllowPrivateURLs: true}), ctx, in)
	d, err := newSvc(t, db, webhooks.Options{SecretKey: key}).Test(ctx, w.ID)
	if err != nil {
		t.Fatal(err)
	}
	if d.Status != webhooks.StatusFailed || d.ErrorMessage != "blocked address" {
		t.Fatalf("test send: status %s, errorMessage %q, want failed, \"blocked address\"", d.Status, d.ErrorMessage)
	}
	if hit.Load() {
		t.Fatal("the loopback receiver was called")
	}
	line := logs.String()
	for _, want := range []string{"delivery attempt failed", "delivery=" + d.ID, "webhook=" + w.ID, "127.0.0.1", "reason=\"blocked address\""} {
		if !strings.Contains(line, want) {
			t.Errorf("log lacks %q:\n%s", want, line)
		}
	}
}
