package httpapi

import (
	"context"
	"log/slog"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/tenantkit/tenantkit/internal/testing/logbuf"

	"github.com/tenantkit/tenantkit/full"
	"github.com/tenantkit/tenantkit/store"
)

// TestSQLiteDiskFull: when SQLite cannot grow its file (the disk is full:
// simulated with max_page_count, which fails writes with SQLITE_FULL as a
// full disk does), writes answer 500 with their cause logged and nothing
// written, reads go on, the database stays intact, and once there is
// room again the same process writes.
func TestSQLiteDiskFull(t *testing.T) {
	t.Parallel()
	db, err := store.Open(t.Context(), "sqlite:"+filepath.Join(t.TempDir(), "full.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	var logs logbuf.Buffer
	e := newTestEnvConfig(t, db, full.Config{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	acme := e.newTenant("Acme")
	key := e.newKey(acme, "payment_gateways.manage", "payment_gateways.view")
	session := map[string]any{"providerKey": "mock", "amount": 10, "currencyCode": "USD",
		"description": strings.Repeat("x", 400), "metadata": map[string]any{"pad": strings.Repeat("y", 8000)}}
	e.do("POST", "/api/payment_gateways/sessions", key, session).expect(201)

	ctx := context.Background()
	var pages int64
	if err := db.QueryRow(ctx, `PRAGMA page_count`).Scan(&pages); err != nil {
		t.Fatal(err)
	}
	// Writes go through the one writer connection: the limit applies to
	// every write from now on.
	if _, err := db.Exec(ctx, `PRAGMA max_page_count = `+itoa(pages)); err != nil {
		t.Fatal(err)
	}
	failed := 0
	for range 20 {
		r := e.do("POST", "/api/payment_gateways/sessions", key, session)
		switch {
		case r.Status == 201:
		case r.Status == 500 && strings.Contains(string(r.Body), "Internal server error"):
			failed++
		default:
			t.Fatalf("a write on a full disk: %d %s", r.Status, r.Body)
		}
	}
	if failed == 0 {
		t.Fatal("no write failed: the simulated full disk did not take")
	}
	if out := logs.String(); !strings.Contains(out, "database or disk is full") || !strings.Contains(out, "requestId=") {
		t.Errorf("the 500s' cause is not logged with the request id:\n%s", out)
	}
	list := e.do("GET", "/api/payment_gateways/transactions?pageSize=100", key, nil).expect(200).JSON()
	written := int(list["total"].(float64))

	if _, err := db.Exec(ctx, `PRAGMA max_page_count = 1073741823`); err != nil {
		t.Fatal(err)
	}
	e.do("POST", "/api/payment_gateways/sessions", key, session).expect(201)
	var check string
	if err := db.QueryRow(ctx, `PRAGMA integrity_check`).Scan(&check); err != nil || check != "ok" {
		t.Fatalf("integrity_check: %q, %v", check, err)
	}
	list = e.do("GET", "/api/payment_gateways/transactions?pageSize=100", key, nil).expect(200).JSON()
	if got := int(list["total"].(float64)); got != written+1 {
		t.Errorf("%d transactions after room came back, want %d", got, written+1)
	}
	var events int
	if err := db.QueryRow(ctx, `SELECT count(*) FROM store_events WHERE tenant_id = $1 AND type = 'payment_gateways.session.created'`,
		acme.ID).Scan(&events); err != nil || events != written+1 {
		t.Errorf("%d session.created events (%v), want one per transaction (%d)", events, err, written+1)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
