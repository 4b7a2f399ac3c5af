package webhooks_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/tenantkit/tenantkit/internal/secretbox"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
	"github.com/tenantkit/tenantkit/webhooks"
)

// Webhooks are tenant-scoped, so every test works in fresh tenants
// (storetest.NewScope) and shares the package's PostgreSQL schema
// (storetest.Each). Tests that call DropExpiredSecrets, which sweeps every
// tenant, get a schema of their own (storetest.EachIsolated).

func ptrTo[T any](v T) *T { return &v }

// newKey returns a random secret key.
func randomKey() []byte {
	k := make([]byte, 32)
	_, _ = rand.Read(k)
	return k
}

// newService returns a service over db with opts (and a random key unless
// opts has one).
func newSvc(t testing.TB, db *store.DB, opts webhooks.Options) *webhooks.Service {
	t.Helper()
	if opts.SecretKey == nil {
		opts.SecretKey = randomKey()
	}
	svc, err := webhooks.New(db, opts)
	if err != nil {
		t.Fatalf("webhooks.New: %v", err)
	}
	return svc
}

// input is a valid webhook with the required fields only.
func hookInput(name string) webhooks.Input {
	return webhooks.Input{Name: name, URL: "https://hooks.example.com/" + name, SubscribedEvents: []string{"business_rules.*"}}
}

// create stores a webhook or fails the test.
func mustCreate(t testing.TB, svc *webhooks.Service, ctx context.Context, in webhooks.Input) (*webhooks.Webhook, string) {
	t.Helper()
	w, secret, err := svc.Create(ctx, in)
	if err != nil {
		t.Fatalf("Create(%s): %v", in.Name, err)
	}
	return w, secret
}

// wantFields checks that err is a *store.ValidationError (an ErrInvalid)
// with exactly the fields and messages of want.
func wantValidation(t testing.TB, err error, want map[string]string) {
	t.Helper()
	var ve *store.ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("error = %v (%T), want a *store.ValidationError %v", err, err, want)
	}
	if !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("errors.Is(%v, store.ErrInvalid) = false", err)
	}
	if !maps.Equal(ve.Fields, want) {
		t.Fatalf("validation error\n got %q\nwant %q", ve.Fields, want)
	}
}

// wantNotFound checks the area's not-found error.
func wantWebhookNotFound(t testing.TB, err error) {
	t.Helper()
	if !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("error = %v, want store.ErrNotFound", err)
	}
	if msg := store.PublicMessage(err); msg != "Webhook not found" {
		t.Fatalf("public message %q (%v), want %q", msg, err, "Webhook not found")
	}
}

// names lists the names of ws in order.
func hookNames(ws []*webhooks.Webhook) []string {
	out := make([]string, len(ws))
	for i, w := range ws {
		out[i] = w.Name
	}
	return out
}

// list returns the names of a List call and its total.
func listHooks(t testing.TB, svc *webhooks.Service, ctx context.Context, f webhooks.Filter) ([]string, int) {
	t.Helper()
	if f.Limit == 0 {
		f.Limit = 100
	}
	ws, total, err := svc.List(ctx, f)
	if err != nil {
		t.Fatalf("List(%+v): %v", f, err)
	}
	return hookNames(ws), total
}

// rowCount counts the tenant's webhook rows, deleted ones included.
func hookRowCount(t testing.TB, db *store.DB, tenantID string) int {
	t.Helper()
	var n int
	if err := db.QueryRow(t.Context(), `SELECT count(*) FROM webhooks WHERE tenant_id = $1`, tenantID).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// sealedSecrets reads a webhook's stored secret columns.
func storedSecrets(t testing.TB, db *store.DB, id string) (current string, previous *string) {
	t.Helper()
	if err := db.QueryRow(t.Context(), `SELECT secret, previous_secret FROM webhooks WHERE id = $1`, id).Scan(&current, &previous); err != nil {
		t.Fatal(err)
	}
	return current, previous
}

// event is an event of the tenant, its data decoded.
type hookEvent struct {
	Type, TenantID, OrganizationID string
	Raw                            string
	Data                           map[string]any
}

// events returns the tenant's events, oldest first.
func hookEvents(t testing.TB, db *store.DB, tenantID string) []hookEvent {
	t.Helper()
	evs, err := store.ListEvents(t.Context(), db, store.EventFilter{TenantID: tenantID, Limit: 1000})
	if err != nil {
		t.Fatalf("ListEvents: %v", err)
	}
	out := make([]hookEvent, len(evs))
	for i, ev := range evs {
		out[i] = hookEvent{Type: ev.Type, TenantID: ev.TenantID, OrganizationID: ev.OrganizationID, Raw: string(ev.Data)}
		if err := json.Unmarshal(ev.Data, &out[i].Data); err != nil {
			t.Fatalf("event %s data %s: %v", ev.Type, ev.Data, err)
		}
	}
	return out
}

func hookEventTypes(evs []hookEvent) []string {
	types := make([]string, len(evs))
	for i, ev := range evs {
		types[i] = ev.Type
	}
	return types
}

// wantSecret checks the shape of a plaintext signing secret.
func wantSecretShape(t testing.TB, secret string) {
	t.Helper()
	b64, ok := strings.CutPrefix(secret, "whsec_")
	if !ok {
		t.Fatalf("secret %q does not start with whsec_", secret)
	}
	raw, err := base64.StdEncoding.DecodeString(b64)
	if err != nil || len(raw) != 32 {
		t.Fatalf("secret %q is not whsec_ and the standard base64 of 32 bytes (%d bytes, %v)", secret, len(raw), err)
	}
	if len(b64) != 44 || !strings.HasSuffix(b64, "=") {
		t.Fatalf("secret %q: want padded standard base64 (44 characters)", secret)
	}
}

func TestWebhookMatches(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		pattern, event string
		want           bool
	}{
		{"*", "business_rules.rule.created", true},
		{"*", "a", true},
		{"*", "", true},
		{"a.*", "a.b", true},
		{"a.*", "a.b.c", true},
		{"a.*", "a", false},
		{"a.*", "ab.c", false},
		{"a.*", "ab", false},
		{"a.*", "b.a.c", false},
		{"a.b.*", "a.b.c", true},
		{"a.b.*", "a.bc.d", false},
		{"a.b.*", "a.b", false},
		{"a.b", "a.b", true},
		{"a.b", "a.b.c", false},
		{"a.b", "a", false},
		{"a.b", "A.B", false},
		{"business_rules.rule.created", "business_rules.rule.created", true},
		{"business_rules.rule.created", "business_rules.rule.updated", false},
	} {
		if got := webhooks.Matches(c.pattern, c.event); got != c.want {
			t.Errorf("Matches(%q, %q) = %v, want %v", c.pattern, c.event, got, c.want)
		}
	}
}

func TestWebhookNewSecret(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for range 100 {
		s := webhooks.NewSecret()
		wantSecretShape(t, s)
		if seen[s] {
			t.Fatalf("NewSecret repeated %q", s)
		}
		seen[s] = true
	}
	if webhooks.MaskedSecret != "whsec_••••••••" {
		t.Fatalf("MaskedSecret = %q", webhooks.MaskedSecret)
	}
}

func TestWebhookEventTypes(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	ids := make([]string, len(webhooks.EventTypes))
	for i, et := range webhooks.EventTypes {
		ids[i] = et.ID
		is.True(et.Label != "" && et.Description != "")
	}
	// The CRUD and rotation events come first; the area may declare more
	// (deliveries, inbound), all under webhooks. (which the catalogue
	// leaves out).
	is.True(len(ids) >= 4)
	is.Equal(ids[:4], []string{"webhooks.webhook.created", "webhooks.webhook.updated", "webhooks.webhook.deleted", "webhooks.webhook.secret_rotated"})
	for _, id := range ids {
		is.True(strings.HasPrefix(id, "webhooks."))
	}
	is.Equal(len(slices.Compact(slices.Sorted(slices.Values(ids)))), len(ids)) // no duplicates
	is.Equal(webhooks.EventWebhookCreated, "webhooks.webhook.created")
	is.Equal(webhooks.EventWebhookUpdated, "webhooks.webhook.updated")
	is.Equal(webhooks.EventWebhookDeleted, "webhooks.webhook.deleted")
	is.Equal(webhooks.EventWebhookSecretRotated, "webhooks.webhook.secret_rotated")
	is.Equal(webhooks.DropExpiredSecretsJob{}.Kind(), "webhooks.drop_expired_secrets")
}

// Scope.Readable is the predicate every webhook read starts with.
func TestWebhookScopeReadable(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		orgs   []string
		sql    string
		values []any
	}{
		{"every organization", nil, "t = $1 AND x = $2", []any{"T", "X"}},
		{"no organization", []string{}, "t = $1 AND o IS NULL AND x = $2", []any{"T", "X"}},
		{"one", []string{"A"}, "t = $1 AND (o IS NULL OR o IN ($2)) AND x = $3", []any{"T", "A", "X"}},
		{"two", []string{"A", "B"}, "t = $1 AND (o IS NULL OR o IN ($2, $3)) AND x = $4", []any{"T", "A", "B", "X"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			is := is.New(t)
			sc := store.Scope{TenantID: "T", OrganizationID: "ignored", OrganizationIDs: c.orgs}
			conds := sc.Readable("t", "o")
			conds.And("x = ?", "X")
			is.Equal(conds.SQL(), c.sql)
			is.Equal(conds.Values(), c.values)
		})
	}
	// AllowsOrganization agrees with the predicate.
	is := is.New(t)
	is.True(store.Scope{TenantID: "T"}.AllowsOrganization("A"))
	is.True(store.Scope{TenantID: "T", OrganizationIDs: []string{}}.AllowsOrganization(""))
	is.True(!store.Scope{TenantID: "T", OrganizationIDs: []string{}}.AllowsOrganization("A"))
	is.True(store.Scope{TenantID: "T", OrganizationIDs: []string{"B", "A"}}.AllowsOrganization("A"))
	is.True(!store.Scope{TenantID: "T", OrganizationIDs: []string{"B"}}.AllowsOrganization("A"))
}

func TestWebhookNewRefusesShortKey(t *testing.T) {
	t.Parallel()
	db := storetest.SQLite(t, webhooks.Migrations)
	if _, err := webhooks.New(db, webhooks.Options{SecretKey: make([]byte, 31)}); err == nil {
		t.Fatal("New with a 31-byte key: no error")
	}
	if _, err := webhooks.New(db, webhooks.Options{}); err == nil {
		t.Fatal("New without a key: no error")
	}
}

func TestWebhookCreateGet(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		key := randomKey()
		svc := newSvc(t, db, webhooks.Options{SecretKey: key})
		ctx, sc := storetest.NewScope(t)
		before := time.Now().Add(-time.Second)

		// Required fields only: the defaults.
		w, secret, err := svc.Create(ctx, hookInput("orders"))
		is.NoErr(err)
		wantSecretShape(t, secret)
		checkDefaults := func(got *webhooks.Webhook) {
			t.Helper()
			is := is.New(t)
			is.True(store.IsID(got.ID))
			is.Equal(got.Name, "orders")
			is.Equal(got.Description, "")
			is.Equal(got.URL, "https://hooks.example.com/orders")
			is.Equal(got.SubscribedEvents, []string{"business_rules.*"})
			is.Equal(got.HTTPMethod, "POST")
			is.True(got.CustomHeaders != nil) // {} in JSON, not null
			is.Equal(len(got.CustomHeaders), 0)
			is.Equal(got.MaxRetries, 10)
			is.Equal(got.TimeoutMs, 15000)
			is.Equal(got.RateLimitPerMinute, 0)
			is.Equal(got.AutoDisableThreshold, 100)
			is.Equal(got.IsActive, true)
			is.Equal(got.ConsecutiveFailures, 0)
			is.True(got.LastSuccessAt == nil)
			is.True(got.LastFailureAt == nil)
			is.Equal(got.MaskedSecret, "whsec_••••••••")
			is.True(got.PreviousSecretSetAt == nil)
			is.True(got.PreviousSecretExpiresAt == nil)
			is.Equal(got.TenantID, sc.TenantID)
			is.Equal(got.OrganizationID, sc.OrganizationID)
			is.True(got.CreatedAt.After(before) && got.CreatedAt.Before(time.Now().Add(time.Second)))
			is.True(got.UpdatedAt.Equal(got.CreatedAt))
		}
		checkDefaults(w)
		got, err := svc.Get(ctx, w.ID)
		is.NoErr(err)
		checkDefaults(got)
		is.Equal(got.ID, w.ID)
		is.True(got.CreatedAt.Equal(w.CreatedAt))
		is.Equal(got.CreatedAt.Location(), time.UTC)

		// The JSON form: every field, the masked secret, never the secret.
		b, err := json.Marshal(got)
		is.NoErr(err)
		var doc map[string]any
		is.NoErr(json.Unmarshal(b, &doc))
		keys := slices.Sorted(maps.Keys(doc))
		is.Equal(keys, []string{"autoDisableThreshold", "consecutiveFailures", "createdAt", "customHeaders", "description",
			"httpMethod", "id", "isActive", "lastFailureAt", "lastSuccessAt", "maskedSecret", "maxRetries", "name",
			"organizationId", "previousSecretExpiresAt", "previousSecretSetAt", "rateLimitPerMinute", "subscribedEvents",
			"tenantId", "timeoutMs", "updatedAt", "url"})
		is.Equal(doc["customHeaders"], map[string]any{})
		is.Equal(doc["maskedSecret"], "whsec_••••••••")
		is.True(!strings.Contains(string(b), secret))

		// The secret is stored sealed (v1:), opens to the plaintext with the
		// Kit's key, and signs alone.
		sealed, previous := storedSecrets(t, db, w.ID)
		is.True(strings.HasPrefix(sealed, "v1:"))
		is.True(!strings.Contains(sealed, secret))
		is.True(!strings.Contains(sealed, "whsec_"))
		is.True(previous == nil)
		box, err := secretbox.New(key, "webhooks.secret")
		is.NoErr(err)
		opened, err := box.Open(sealed)
		is.NoErr(err)
		is.Equal(opened, secret)
		secrets, err := svc.Secrets(ctx, w.ID)
		is.NoErr(err)
		is.Equal(secrets, []string{secret})

		// Every field given.
		full, secret2, err := svc.Create(ctx, webhooks.Input{
			Name: "Shipping", Description: "Tells the warehouse", URL: "http://8.8.8.8:8080/hook?x=1",
			SubscribedEvents: []string{"*", "business_rules.rule.created", "feature_toggles.*"}, HTTPMethod: "patch",
			CustomHeaders: map[string]string{"X-Tenant": "acme", "Authorization": "Bearer abc", "X-Webhook-Extra": "ok"},
			MaxRetries:    ptrTo(0), TimeoutMs: ptrTo(60000), RateLimitPerMinute: ptrTo(10000), AutoDisableThreshold: ptrTo(0),
			IsActive: ptrTo(false),
		})
		is.NoErr(err)
		wantSecretShape(t, secret2)
		is.True(secret2 != secret)
		checkFull := func(got *webhooks.Webhook) {
			t.Helper()
			is := is.New(t)
			is.Equal(got.Name, "Shipping")
			is.Equal(got.Description, "Tells the warehouse")
			is.Equal(got.URL, "http://8.8.8.8:8080/hook?x=1")
			is.Equal(got.SubscribedEvents, []string{"*", "business_rules.rule.created", "feature_toggles.*"})
			is.Equal(got.HTTPMethod, "PATCH")
			is.Equal(got.CustomHeaders, map[string]string{"X-Tenant": "acme", "Authorization": "Bearer abc", "X-Webhook-Extra": "ok"})
			is.Equal(got.MaxRetries, 0)
			is.Equal(got.TimeoutMs, 60000)
			is.Equal(got.RateLimitPerMinute, 10000)
			is.Equal(got.AutoDisableThreshold, 0)
			is.Equal(got.IsActive, false)
			is.Equal(got.MaskedSecret, webhooks.MaskedSecret)
		}
		checkFull(full)
		got, err = svc.Get(ctx, full.ID)
		is.NoErr(err)
		checkFull(got)

		// Unknown and malformed ids.
		for _, id := range []string{store.NewID(), "not-a-uuid", "", "events", w.ID + "x", strings.ToUpper(w.ID), "\x00"} {
			_, err := svc.Get(ctx, id)
			wantWebhookNotFound(t, err)
			_, err = svc.Secrets(ctx, id)
			wantWebhookNotFound(t, err)
		}
		is.Equal(hookRowCount(t, db, sc.TenantID), 2)
	}, webhooks.Migrations)
}

// badEventPatterns and goodEventPatterns are the pattern syntax's table.
var (
	badEventPatterns  = []string{"Orders.*", "orders.", ".x", "a..b", "a.*.b", "a*", "**", "a.b-c", "", "*.a", "a.**", " a", "a ", "a\n", "a.B", "é", "a/b", "a.*.*"}
	goodEventPatterns = []string{"*", "a", "a.b_c.d1", "a.*", "business_rules.rule.created", "_", "0.1", "a_b.*"}
)

func patternMessage(i int, p string) string {
	return fmt.Sprintf("[%d] %q is not an event pattern: \"*\", or dot-separated lowercase names (letters, digits, _), optionally ending in \".*\"", i, p)
}

// privateURLs are refused unless AllowPrivateURLs.
var privateURLs = []string{
	"http://127.0.0.1/", "http://127.0.0.1:8080/hook", "http://10.0.0.1/", "http://10.255.1.2/x", "http://192.168.1.1/",
	"http://172.16.0.1/", "http://169.254.169.254/latest/meta-data/", "http://[::1]/", "http://[::1]:9000/", "http://[fc00::1]/",
	"http://[fe80::1]/", "http://[::ffff:127.0.0.1]/", "http://0.0.0.0/", "http://100.64.0.1/", "http://localhost/",
	"https://LOCALHOST:8443/", "http://localhost./", "http://api.localhost/", "http://printer.local/",
	"http://metadata.google.internal/", "http://receiver/", "http://receiver:8080/hook", "https://Receiver./",
}

// publicURLs are accepted either way.
var publicURLs = []string{
	"https://hooks.example.com/x", "http://example.com", "https://example.com:8443/a/b?c=d#e", "http://8.8.8.8/",
	"http://[2606:4700:4700::1111]/hook", "HTTPS://HOOKS.EXAMPLE.COM/UPPER", "https://hooks.example.com/" + strings.Repeat("a", 2048-len("https://hooks.example.com/")),
}

const (
	msgURLShape   = "must be an http or https URL with a host (and no credentials)"
	msgURLPrivate = "must not target a private, loopback or link-local address"
	msgNUL        = "must be valid UTF-8 text without NUL characters"
)

// malformedURLs are refused even with AllowPrivateURLs.
var malformedURLs = map[string]string{
	"":                               "is required",
	"   ":                            "is required",
	"ftp://example.com/":             msgURLShape,
	"example.com/hook":               msgURLShape,
	"//example.com/hook":             msgURLShape,
	"https://":                       msgURLShape,
	"https:///path":                  msgURLShape,
	"https://user:pass@example.com/": msgURLShape,
	"https://user@example.com/":      msgURLShape,
	"https://:pass@example.com/":     msgURLShape,
	"javascript:alert(1)":            msgURLShape,
	"mailto:ops@example.com":         msgURLShape,
	"https://exa mple.com/":          msgURLShape,
	"https://example.com/\x00":       "must be valid UTF-8 text without NUL characters",
	"https://example.com/a\nb":       msgURLShape,
	"https://example.com:port/":      msgURLShape,
	"https://hooks.example.com/" + strings.Repeat("a", 2049-len("https://hooks.example.com/")): "must be at most 2048 characters",
}

func TestWebhookValidation(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		svc := newSvc(t, db, webhooks.Options{})
		permissive := newSvc(t, db, webhooks.Options{AllowPrivateURLs: true})
		bad, badScope := storetest.NewScope(t) // nothing may be written here
		good, _ := storetest.NewScope(t)

		// refused creates the input with edit applied and checks the error.
		refused := func(t *testing.T, svc *webhooks.Service, edit func(*webhooks.Input), want map[string]string) {
			t.Helper()
			in := hookInput("hook")
			edit(&in)
			w, secret, err := svc.Create(bad, in)
			wantValidation(t, err, want)
			if w != nil || secret != "" {
				t.Fatalf("a refused create returned %v, %q", w, secret)
			}
		}
		accepted := func(t *testing.T, svc *webhooks.Service, edit func(*webhooks.Input)) *webhooks.Webhook {
			t.Helper()
			in := hookInput("hook")
			edit(&in)
			w, _, err := svc.Create(good, in)
			if err != nil {
				t.Fatalf("Create(%+v): %v", in, err)
			}
			return w
		}

		t.Run("every bad field at once", func(t *testing.T) {
			refused(t, svc, func(in *webhooks.Input) {
				*in = webhooks.Input{Name: "", Description: strings.Repeat("d", 1001), URL: "ftp://x", SubscribedEvents: nil,
					HTTPMethod: "GET", CustomHeaders: map[string]string{"Webhook-Signature": "x"}, MaxRetries: ptrTo(31),
					TimeoutMs: ptrTo(999), RateLimitPerMinute: ptrTo(-1), AutoDisableThreshold: ptrTo(1001)}
			}, map[string]string{
				"name":                 "is required",
				"description":          "must be at most 1000 characters",
				"url":                  msgURLShape,
				"subscribedEvents":     "must list at least one event pattern",
				"httpMethod":           "must be POST, PUT or PATCH",
				"customHeaders":        `Header "Webhook-Signature" is reserved for webhook signing and cannot be overridden`,
				"maxRetries":           "must be an integer from 0 to 30",
				"timeoutMs":            "must be an integer from 1000 to 60000",
				"rateLimitPerMinute":   "must be an integer from 0 to 10000",
				"autoDisableThreshold": "must be an integer from 0 to 1000",
			})
		})

		t.Run("name and description", func(t *testing.T) {
			for _, c := range []struct {
				name, description string
				want              map[string]string
			}{
				{"", "", map[string]string{"name": "is required"}},
				{" \t\n", "", map[string]string{"name": "is required"}},
				{strings.Repeat("é", 256), "", map[string]string{"name": "must be at most 255 characters"}},
				{strings.Repeat("x", 256), "", map[string]string{"name": "must be at most 255 characters"}},
				{"a\x00b", "", map[string]string{"name": msgNUL}},
				{"a\xffb", "", map[string]string{"name": msgNUL}},
				{"ok", strings.Repeat("é", 1001), map[string]string{"description": "must be at most 1000 characters"}},
				{"ok", "nul\x00", map[string]string{"description": msgNUL}},
				{"ok", "\xc3", map[string]string{"description": msgNUL}},
			} {
				refused(t, svc, func(in *webhooks.Input) { in.Name, in.Description = c.name, c.description }, c.want)
			}
			w := accepted(t, svc, func(in *webhooks.Input) {
				in.Name, in.Description = strings.Repeat("é", 255), strings.Repeat("é", 1000)
			})
			is := is.New(t)
			is.Equal(w.Name, strings.Repeat("é", 255)) // limits count characters, not bytes
			is.Equal(w.Description, strings.Repeat("é", 1000))
			got, err := svc.Get(good, w.ID)
			is.NoErr(err)
			is.Equal(got.Name, strings.Repeat("é", 255))
			is.Equal(got.Description, strings.Repeat("é", 1000))
			accepted(t, svc, func(in *webhooks.Input) { in.Name = strings.Repeat("x", 255) })
		})

		t.Run("url", func(t *testing.T) {
			for raw, msg := range malformedURLs {
				refused(t, svc, func(in *webhooks.Input) { in.URL = raw }, map[string]string{"url": msg})
				refused(t, permissive, func(in *webhooks.Input) { in.URL = raw }, map[string]string{"url": msg})
			}
			for _, raw := range privateURLs {
				refused(t, svc, func(in *webhooks.Input) { in.URL = raw }, map[string]string{"url": msgURLPrivate})
				w := accepted(t, permissive, func(in *webhooks.Input) { in.URL = raw })
				if w.URL != raw {
					t.Errorf("URL stored as %q, want %q", w.URL, raw)
				}
			}
			for _, raw := range publicURLs {
				for _, s := range []*webhooks.Service{svc, permissive} {
					w := accepted(t, s, func(in *webhooks.Input) { in.URL = raw })
					if w.URL != raw {
						t.Errorf("URL stored as %q, want %q", w.URL, raw)
					}
				}
			}
		})

		t.Run("url invalid UTF-8", func(t *testing.T) {
			for _, raw := range []string{"https://example.com/\xff", "https://ex\xffample.com/", "https://example.com/\x00"} {
				refused(t, svc, func(in *webhooks.Input) { in.URL = raw }, map[string]string{"url": "must be valid UTF-8 text without NUL characters"})
			}
		})

		t.Run("subscribedEvents", func(t *testing.T) {
			refused(t, svc, func(in *webhooks.Input) { in.SubscribedEvents = nil },
				map[string]string{"subscribedEvents": "must list at least one event pattern"})
			refused(t, svc, func(in *webhooks.Input) { in.SubscribedEvents = []string{} },
				map[string]string{"subscribedEvents": "must list at least one event pattern"})
			for _, p := range badEventPatterns {
				refused(t, svc, func(in *webhooks.Input) { in.SubscribedEvents = []string{p} },
					map[string]string{"subscribedEvents": patternMessage(0, p)})
				// the bad one is named by its index
				refused(t, svc, func(in *webhooks.Input) { in.SubscribedEvents = []string{"a.b", "*", p} },
					map[string]string{"subscribedEvents": patternMessage(2, p)})
			}
			for _, p := range goodEventPatterns {
				w := accepted(t, svc, func(in *webhooks.Input) { in.SubscribedEvents = []string{p} })
				if !slices.Equal(w.SubscribedEvents, []string{p}) {
					t.Errorf("subscribedEvents stored as %q, want [%q]", w.SubscribedEvents, p)
				}
			}
			many := make([]string, 101)
			for i := range many {
				many[i] = fmt.Sprintf("area.event_%d", i)
			}
			refused(t, svc, func(in *webhooks.Input) { in.SubscribedEvents = many },
				map[string]string{"subscribedEvents": "must list at most 100 event patterns"})
			w := accepted(t, svc, func(in *webhooks.Input) { in.SubscribedEvents = many[:100] })
			is.New(t).Equal(w.SubscribedEvents, many[:100])
			got, err := svc.Get(good, w.ID)
			is.New(t).NoErr(err)
			is.New(t).Equal(got.SubscribedEvents, many[:100]) // order kept
		})

		t.Run("httpMethod", func(t *testing.T) {
			for _, m := range []string{"GET", "DELETE", "HEAD", "OPTIONS", "get", "POSTX", " POST", "POST ", "P0ST"} {
				refused(t, svc, func(in *webhooks.Input) { in.HTTPMethod = m }, map[string]string{"httpMethod": "must be POST, PUT or PATCH"})
			}
			for m, want := range map[string]string{"": "POST", "POST": "POST", "post": "POST", "Put": "PUT", "PUT": "PUT", "patch": "PATCH", "pAtCh": "PATCH"} {
				w := accepted(t, svc, func(in *webhooks.Input) { in.HTTPMethod = m })
				if w.HTTPMethod != want {
					t.Errorf("httpMethod %q stored as %q, want %q", m, w.HTTPMethod, want)
				}
				got, err := svc.Get(good, w.ID)
				if err != nil || got.HTTPMethod != want {
					t.Errorf("httpMethod %q read as %q (%v), want %q", m, got.HTTPMethod, err, want)
				}
			}
		})

		t.Run("customHeaders", func(t *testing.T) {
			for name, msg := range map[string]string{
				"Webhook-Signature": `Header "Webhook-Signature" is reserved for webhook signing and cannot be overridden`,
				"webhook-id":        `Header "webhook-id" is reserved for webhook signing and cannot be overridden`,
				"WEBHOOK-TIMESTAMP": `Header "WEBHOOK-TIMESTAMP" is reserved for webhook signing and cannot be overridden`,
				"webhook-":          `Header "webhook-" is reserved for webhook signing and cannot be overridden`,
				"Content-Type":      `Header "Content-Type" is reserved for webhook signing and cannot be overridden`,
				"content-type":      `Header "content-type" is reserved for webhook signing and cannot be overridden`,
				"CONTENT-TYPE":      `Header "CONTENT-TYPE" is reserved for webhook signing and cannot be overridden`,
				"":                  `"" is not a valid header name`,
				"X Bad":             `"X Bad" is not a valid header name`,
				"X:Bad":             `"X:Bad" is not a valid header name`,
				"X-Bad\n":           `"X-Bad\n" is not a valid header name`,
				"X-\x00":            `"X-\x00" is not a valid header name`,
				"Ünicode":           `"Ünicode" is not a valid header name`,
				"(x)":               `"(x)" is not a valid header name`,
			} {
				refused(t, svc, func(in *webhooks.Input) { in.CustomHeaders = map[string]string{name: "v"} },
					map[string]string{"customHeaders": msg})
			}
			for _, value := range []string{"line1\nline2", "a\rb", "a\r\nb", "nul\x00", "\xff", strings.Repeat("v", 1001)} {
				refused(t, svc, func(in *webhooks.Input) { in.CustomHeaders = map[string]string{"X-Value": value} },
					map[string]string{"customHeaders": `the value of "X-Value" must be one line of at most 1000 characters`})
			}
			tooMany := map[string]string{}
			for i := range 51 {
				tooMany[fmt.Sprintf("X-H-%d", i)] = "v"
			}
			refused(t, svc, func(in *webhooks.Input) { in.CustomHeaders = tooMany },
				map[string]string{"customHeaders": "must have at most 50 headers"})
			delete(tooMany, "X-H-50")
			okHeaders := map[string]string{"X-Long": strings.Repeat("v", 1000), "Authorization": "Bearer t0ken", "x_custom!#$%&'*+.^`|~": "a b\tc",
				"X-Webhook-Signature": "not reserved: the prefix is webhook-", "Content-Length-Hint": "1"}
			for _, hs := range []map[string]string{tooMany, okHeaders} {
				w := accepted(t, svc, func(in *webhooks.Input) { in.CustomHeaders = hs })
				got, err := svc.Get(good, w.ID)
				is.New(t).NoErr(err)
				is.New(t).Equal(got.CustomHeaders, hs)
			}
		})

		t.Run("settings bounds", func(t *testing.T) {
			for _, c := range []struct {
				field  string
				lo, hi int
				set    func(in *webhooks.Input, v int)
				get    func(w *webhooks.Webhook) int
			}{
				{"maxRetries", 0, 30, func(in *webhooks.Input, v int) { in.MaxRetries = &v }, func(w *webhooks.Webhook) int { return w.MaxRetries }},
				{"timeoutMs", 1000, 60000, func(in *webhooks.Input, v int) { in.TimeoutMs = &v }, func(w *webhooks.Webhook) int { return w.TimeoutMs }},
				{"rateLimitPerMinute", 0, 10000, func(in *webhooks.Input, v int) { in.RateLimitPerMinute = &v }, func(w *webhooks.Webhook) int { return w.RateLimitPerMinute }},
				{"autoDisableThreshold", 0, 1000, func(in *webhooks.Input, v int) { in.AutoDisableThreshold = &v }, func(w *webhooks.Webhook) int { return w.AutoDisableThreshold }},
			} {
				msg := fmt.Sprintf("must be an integer from %d to %d", c.lo, c.hi)
				for _, v := range []int{c.lo - 1, c.hi + 1, -1 << 40, 1 << 40} {
					refused(t, svc, func(in *webhooks.Input) { c.set(in, v) }, map[string]string{c.field: msg})
				}
				for _, v := range []int{c.lo, c.hi} {
					w := accepted(t, svc, func(in *webhooks.Input) { c.set(in, v) })
					got, err := svc.Get(good, w.ID)
					if err != nil || c.get(w) != v || c.get(got) != v {
						t.Errorf("%s %d: created %d, read %d (%v)", c.field, v, c.get(w), c.get(got), err)
					}
				}
			}
		})

		// Nothing was written by any refused create.
		is := is.New(t)
		is.Equal(hookRowCount(t, db, badScope.TenantID), 0)
		is.Equal(len(hookEvents(t, db, badScope.TenantID)), 0)
	}, webhooks.Migrations)
}

func TestWebhookUpdate(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		svc := newSvc(t, db, webhooks.Options{})
		ctx, sc := storetest.NewScope(t)
		w, secret, err := svc.Create(ctx, webhooks.Input{Name: "orders", Description: "d", URL: "https://a.example.com/",
			SubscribedEvents: []string{"a.*"}, HTTPMethod: "PUT", CustomHeaders: map[string]string{"X-A": "1"},
			MaxRetries: ptrTo(5), TimeoutMs: ptrTo(2000), RateLimitPerMinute: ptrTo(7), AutoDisableThreshold: ptrTo(9), IsActive: ptrTo(true)})
		is.NoErr(err)
		time.Sleep(2 * time.Millisecond)

		// A patch of one field keeps every other one.
		up, err := svc.Update(ctx, w.ID, webhooks.Patch{Name: ptrTo("orders v2")})
		is.NoErr(err)
		want := *w
		want.Name = "orders v2"
		want.UpdatedAt = up.UpdatedAt
		is.Equal(*up, want)
		is.True(up.UpdatedAt.After(w.UpdatedAt))
		is.True(up.CreatedAt.Equal(w.CreatedAt))
		got, err := svc.Get(ctx, w.ID)
		is.NoErr(err)
		is.Equal(*got, want)

		// Every field at once.
		time.Sleep(2 * time.Millisecond)
		up2, err := svc.Update(ctx, w.ID, webhooks.Patch{Name: ptrTo("shipping"), Description: ptrTo(""), URL: ptrTo("http://8.8.4.4/h"),
			SubscribedEvents: ptrTo([]string{"*"}), HTTPMethod: ptrTo("post"), CustomHeaders: ptrTo(map[string]string{}),
			MaxRetries: ptrTo(0), TimeoutMs: ptrTo(1000), RateLimitPerMinute: ptrTo(0), AutoDisableThreshold: ptrTo(1000), IsActive: ptrTo(false)})
		is.NoErr(err)
		check := func(got *webhooks.Webhook) {
			t.Helper()
			is := is.New(t)
			is.Equal(got.ID, w.ID)
			is.Equal(got.Name, "shipping")
			is.Equal(got.Description, "")
			is.Equal(got.URL, "http://8.8.4.4/h")
			is.Equal(got.SubscribedEvents, []string{"*"})
			is.Equal(got.HTTPMethod, "POST")
			is.Equal(got.CustomHeaders, map[string]string{})
			is.Equal(got.MaxRetries, 0)
			is.Equal(got.TimeoutMs, 1000)
			is.Equal(got.RateLimitPerMinute, 0)
			is.Equal(got.AutoDisableThreshold, 1000)
			is.Equal(got.IsActive, false)
			is.Equal(got.MaskedSecret, webhooks.MaskedSecret)
			is.Equal(got.TenantID, sc.TenantID)
			is.Equal(got.OrganizationID, sc.OrganizationID)
			is.True(got.CreatedAt.Equal(w.CreatedAt))
			is.True(got.UpdatedAt.After(up.UpdatedAt))
		}
		check(up2)
		got, err = svc.Get(ctx, w.ID)
		is.NoErr(err)
		check(got)

		// An empty patch changes nothing but updatedAt.
		up3, err := svc.Update(ctx, w.ID, webhooks.Patch{})
		is.NoErr(err)
		is.Equal(up3.Name, "shipping")
		is.Equal(up3.IsActive, false)

		// The secret is not touched by an update.
		secrets, err := svc.Secrets(ctx, w.ID)
		is.NoErr(err)
		is.Equal(secrets, []string{secret})

		// Refused patches name every bad field and change nothing.
		before, err := svc.Get(ctx, w.ID)
		is.NoErr(err)
		nEvents := len(hookEvents(t, db, sc.TenantID))
		for _, c := range []struct {
			p    webhooks.Patch
			want map[string]string
		}{
			{webhooks.Patch{Name: ptrTo(""), URL: ptrTo("http://localhost/"), SubscribedEvents: ptrTo([]string{}), HTTPMethod: ptrTo("GET"),
				Description: ptrTo(strings.Repeat("x", 1001)), CustomHeaders: ptrTo(map[string]string{"content-type": "text/plain"}),
				MaxRetries: ptrTo(-1), TimeoutMs: ptrTo(60001), RateLimitPerMinute: ptrTo(10001), AutoDisableThreshold: ptrTo(-1), IsActive: ptrTo(true)},
				map[string]string{"name": "is required", "url": msgURLPrivate, "subscribedEvents": "must list at least one event pattern",
					"httpMethod": "must be POST, PUT or PATCH", "description": "must be at most 1000 characters",
					"customHeaders": `Header "content-type" is reserved for webhook signing and cannot be overridden`,
					"maxRetries":    "must be an integer from 0 to 30", "timeoutMs": "must be an integer from 1000 to 60000",
					"rateLimitPerMinute": "must be an integer from 0 to 10000", "autoDisableThreshold": "must be an integer from 0 to 1000"}},
			{webhooks.Patch{Name: ptrTo("fine"), URL: ptrTo("https://user:pw@example.com/")}, map[string]string{"url": msgURLShape}},
			{webhooks.Patch{SubscribedEvents: ptrTo([]string{"a..b"}), IsActive: ptrTo(true)}, map[string]string{"subscribedEvents": patternMessage(0, "a..b")}},
			{webhooks.Patch{SubscribedEvents: ptrTo([]string(nil))}, map[string]string{"subscribedEvents": "must list at least one event pattern"}},
			{webhooks.Patch{URL: ptrTo("")}, map[string]string{"url": "is required"}},
			{webhooks.Patch{HTTPMethod: ptrTo("")}, map[string]string{"httpMethod": "must be POST, PUT or PATCH"}},
		} {
			_, err := svc.Update(ctx, w.ID, c.p)
			wantValidation(t, err, c.want)
			got, err := svc.Get(ctx, w.ID)
			is.NoErr(err)
			is.Equal(*got, *before)
		}
		is.Equal(len(hookEvents(t, db, sc.TenantID)), nEvents) // no event for a refused update

		// Private targets are accepted on update by a permissive service.
		permissive := newSvc(t, db, webhooks.Options{AllowPrivateURLs: true})
		_, err = permissive.Update(ctx, w.ID, webhooks.Patch{URL: ptrTo("http://receiver:8080/")})
		is.NoErr(err)

		// Unknown, malformed and deleted ids.
		for _, id := range []string{store.NewID(), "nope", ""} {
			_, err := svc.Update(ctx, id, webhooks.Patch{Name: ptrTo("x")})
			wantWebhookNotFound(t, err)
		}
		is.NoErr(svc.Delete(ctx, w.ID))
		_, err = svc.Update(ctx, w.ID, webhooks.Patch{Name: ptrTo("x")})
		wantWebhookNotFound(t, err)
		// validation of a deleted webhook's patch still reports not found
		_, err = svc.Update(ctx, w.ID, webhooks.Patch{Name: ptrTo("")})
		wantWebhookNotFound(t, err)
	}, webhooks.Migrations)
}

func TestWebhookDelete(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		svc := newSvc(t, db, webhooks.Options{})
		ctx, sc := storetest.NewScope(t)
		w, _ := mustCreate(t, svc, ctx, hookInput("gone"))
		mustCreate(t, svc, ctx, hookInput("kept"))

		is.NoErr(svc.Delete(ctx, w.ID))
		_, err := svc.Get(ctx, w.ID)
		wantWebhookNotFound(t, err)
		_, err = svc.Secrets(ctx, w.ID)
		wantWebhookNotFound(t, err)
		_, err = svc.RotateSecret(ctx, w.ID)
		wantWebhookNotFound(t, err)
		wantWebhookNotFound(t, svc.Delete(ctx, w.ID))
		wantWebhookNotFound(t, svc.Delete(ctx, store.NewID()))
		wantWebhookNotFound(t, svc.Delete(ctx, "x"))
		got, total := listHooks(t, svc, ctx, webhooks.Filter{})
		is.Equal(got, []string{"kept"})
		is.Equal(total, 1)
		got, total = listHooks(t, svc, ctx, webhooks.Filter{Search: "gone"})
		is.Equal(len(got), 0)
		is.Equal(total, 0)

		// The row stays, marked deleted.
		var n int
		is.NoErr(db.QueryRow(ctx, `SELECT count(*) FROM webhooks WHERE tenant_id = $1 AND id = $2 AND deleted_at IS NOT NULL`,
			sc.TenantID, w.ID).Scan(&n))
		is.Equal(n, 1)
	}, webhooks.Migrations)
}

func TestWebhookList(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		svc := newSvc(t, db, webhooks.Options{})
		ctx, _ := storetest.NewScope(t)
		for _, in := range []webhooks.Input{
			{Name: "Orders", URL: "https://erp.example.com/orders", SubscribedEvents: []string{"*"}},
			{Name: "Shipping", URL: "https://ORDERS.example.org/ship", SubscribedEvents: []string{"*"}, IsActive: ptrTo(false)},
			{Name: "100% sure", URL: "https://a.example.com/", SubscribedEvents: []string{"*"}},
			{Name: "snake_case", URL: "https://b.example.com/", SubscribedEvents: []string{"*"}, IsActive: ptrTo(false)},
			{Name: "Émile", URL: "https://c.example.com/x_y", SubscribedEvents: []string{"*"}},
		} {
			mustCreate(t, svc, ctx, in)
		}
		newest := []string{"Émile", "snake_case", "100% sure", "Shipping", "Orders"}

		got, total := listHooks(t, svc, ctx, webhooks.Filter{})
		is.Equal(got, newest)
		is.Equal(total, 5)
		got, total = listHooks(t, svc, ctx, webhooks.Filter{Limit: 2})
		is.Equal(got, newest[:2])
		is.Equal(total, 5)
		got, total = listHooks(t, svc, ctx, webhooks.Filter{Limit: 2, Offset: 2})
		is.Equal(got, newest[2:4])
		is.Equal(total, 5)
		got, total = listHooks(t, svc, ctx, webhooks.Filter{Limit: 2, Offset: 4})
		is.Equal(got, newest[4:])
		is.Equal(total, 5)
		got, total = listHooks(t, svc, ctx, webhooks.Filter{Limit: 2, Offset: 10})
		is.Equal(len(got), 0)
		is.Equal(total, 5)

		for _, c := range []struct {
			search string
			want   []string
		}{
			{"orders", []string{"Shipping", "Orders"}}, // the name of one, the url of the other
			{"ORDERS", []string{"Shipping", "Orders"}},
			{"ERP.EXAMPLE", []string{"Orders"}},
			{"%", []string{"100% sure"}},           // LIKE wildcards are literal
			{"_", []string{"Émile", "snake_case"}}, // x_y in the url
			{"émile", []string{"Émile"}},
			{"example", newest},
			{"nothing", nil},
			{"a\x00", nil},
			{"\xff", nil},
		} {
			got, total := listHooks(t, svc, ctx, webhooks.Filter{Search: c.search})
			if !slices.Equal(got, c.want) || total != len(c.want) {
				t.Errorf("search %q: %q (total %d), want %q", c.search, got, total, c.want)
			}
		}
		got, total = listHooks(t, svc, ctx, webhooks.Filter{IsActive: ptrTo(true)})
		is.Equal(got, []string{"Émile", "100% sure", "Orders"})
		is.Equal(total, 3)
		got, total = listHooks(t, svc, ctx, webhooks.Filter{IsActive: ptrTo(false)})
		is.Equal(got, []string{"snake_case", "Shipping"})
		is.Equal(total, 2)
		got, total = listHooks(t, svc, ctx, webhooks.Filter{IsActive: ptrTo(false), Search: "ship", Limit: 1})
		is.Equal(got, []string{"Shipping"})
		is.Equal(total, 1)

		// Listed webhooks show the masked secret.
		ws, _, err := svc.List(ctx, webhooks.Filter{Limit: 10})
		is.NoErr(err)
		for _, w := range ws {
			is.Equal(w.MaskedSecret, webhooks.MaskedSecret)
			is.True(w.CustomHeaders != nil)
		}

		// Another tenant lists nothing.
		other, _ := storetest.NewScope(t)
		got, total = listHooks(t, svc, other, webhooks.Filter{})
		is.Equal(len(got), 0)
		is.Equal(total, 0)
	}, webhooks.Migrations)
}

func TestWebhookEvents(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		svc := newSvc(t, db, webhooks.Options{})
		ctx, sc := storetest.NewScope(t)
		w, secret := mustCreate(t, svc, ctx, hookInput("evented"))
		_, err := svc.Update(ctx, w.ID, webhooks.Patch{Name: ptrTo("renamed")})
		is.NoErr(err)
		rot, err := svc.RotateSecret(ctx, w.ID)
		is.NoErr(err)
		is.NoErr(svc.Delete(ctx, w.ID))

		evs := hookEvents(t, db, sc.TenantID)
		is.Equal(hookEventTypes(evs), []string{"webhooks.webhook.created", "webhooks.webhook.updated",
			"webhooks.webhook.secret_rotated", "webhooks.webhook.deleted"})
		for _, ev := range evs {
			is.Equal(ev.TenantID, sc.TenantID)
			is.Equal(ev.OrganizationID, sc.OrganizationID)
			is.Equal(ev.Data["id"], w.ID)
			is.Equal(ev.Data["tenantId"], sc.TenantID)
			_, has := ev.Data["secret"]
			is.True(!has)
			is.True(!strings.Contains(ev.Raw, secret))
			is.True(!strings.Contains(ev.Raw, rot.Secret))
			is.True(!strings.Contains(ev.Raw, "v1:"))
		}
		is.Equal(evs[0].Data["name"], "evented")
		is.Equal(evs[1].Data["name"], "renamed")
		is.Equal(evs[3].Data["name"], "renamed")
		is.True(evs[2].Data["previousSecretSetAt"] != nil)
		is.True(evs[2].Data["previousSecretExpiresAt"] != nil)

		// Refused or not-found changes emit nothing.
		_, _, err = svc.Create(ctx, webhooks.Input{})
		is.True(err != nil)
		wantWebhookNotFound(t, svc.Delete(ctx, w.ID))
		_, err = svc.RotateSecret(ctx, w.ID)
		wantWebhookNotFound(t, err)
		is.Equal(len(hookEvents(t, db, sc.TenantID)), 4)
	}, webhooks.Migrations)
}

func TestWebhookNoScope(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		svc := newSvc(t, db, webhooks.Options{})
		ctx, _ := storetest.NewScope(t)
		w, secret := mustCreate(t, svc, ctx, hookInput("scoped"))
		for name, ctx := range map[string]context.Context{
			"no scope":        t.Context(),
			"scope no tenant": store.WithScope(t.Context(), store.Scope{OrganizationID: store.NewID()}),
		} {
			t.Run(name, func(t *testing.T) {
				for method, call := range map[string]func() error{
					"Create": func() error { _, _, err := svc.Create(ctx, hookInput("x")); return err },
					"Get":    func() error { _, err := svc.Get(ctx, w.ID); return err },
					"Update": func() error { _, err := svc.Update(ctx, w.ID, webhooks.Patch{Name: ptrTo("x")}); return err },
					"Delete": func() error { return svc.Delete(ctx, w.ID) },
					"List":   func() error { _, _, err := svc.List(ctx, webhooks.Filter{Limit: 10}); return err },
					"Rotate": func() error { _, err := svc.RotateSecret(ctx, w.ID); return err },
					"Secrets": func() error {
						_, err := svc.Secrets(ctx, w.ID)
						return err
					},
				} {
					if err := call(); !errors.Is(err, store.ErrNoScope) {
						t.Errorf("%s: error = %v, want store.ErrNoScope", method, err)
					}
				}
			})
		}
		is := is.New(t)
		got, err := svc.Get(ctx, w.ID)
		is.NoErr(err)
		is.Equal(got.Name, "scoped")
		secrets, err := svc.Secrets(ctx, w.ID)
		is.NoErr(err)
		is.Equal(secrets, []string{secret})
	}, webhooks.Migrations)
}

func TestWebhookTenantIsolation(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		svc := newSvc(t, db, webhooks.Options{})
		ctxA, _ := storetest.NewScope(t)
		ctxB, scB := storetest.NewScope(t)
		a, secret := mustCreate(t, svc, ctxA, hookInput("a-hook"))
		b, _ := mustCreate(t, svc, ctxB, hookInput("b-hook"))

		_, err := svc.Get(ctxB, a.ID)
		wantWebhookNotFound(t, err)
		_, err = svc.Update(ctxB, a.ID, webhooks.Patch{Name: ptrTo("stolen")})
		wantWebhookNotFound(t, err)
		_, err = svc.RotateSecret(ctxB, a.ID)
		wantWebhookNotFound(t, err)
		_, err = svc.Secrets(ctxB, a.ID)
		wantWebhookNotFound(t, err)
		wantWebhookNotFound(t, svc.Delete(ctxB, a.ID))
		got, total := listHooks(t, svc, ctxB, webhooks.Filter{})
		is.Equal(got, []string{"b-hook"})
		is.Equal(total, 1)
		got, _ = listHooks(t, svc, ctxB, webhooks.Filter{Search: "a-hook"})
		is.Equal(len(got), 0)

		// A is untouched, and B's own webhook is fine.
		after, err := svc.Get(ctxA, a.ID)
		is.NoErr(err)
		is.Equal(*after, *a)
		secrets, err := svc.Secrets(ctxA, a.ID)
		is.NoErr(err)
		is.Equal(secrets, []string{secret})
		got, _ = listHooks(t, svc, ctxA, webhooks.Filter{})
		is.Equal(got, []string{"a-hook"})
		_, err = svc.Get(ctxB, b.ID)
		is.NoErr(err)
		// B's failed attempts emitted nothing.
		is.Equal(hookEventTypes(hookEvents(t, db, scB.TenantID)), []string{"webhooks.webhook.created"})
	}, webhooks.Migrations)
}

func TestWebhookOrganizationScope(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		svc := newSvc(t, db, webhooks.Options{})
		tenant, o1, o2 := store.NewID(), store.NewID(), store.NewID()
		scoped := func(sc store.Scope) context.Context { return store.WithScope(t.Context(), sc) }
		ctxO1 := scoped(store.Scope{TenantID: tenant, OrganizationID: o1})
		ctxWhole := scoped(store.Scope{TenantID: tenant})

		w1, _ := mustCreate(t, svc, ctxO1, hookInput("o1-hook"))
		is.Equal(w1.OrganizationID, o1)
		w0, _ := mustCreate(t, svc, ctxWhole, hookInput("tenant-hook"))
		is.Equal(w0.OrganizationID, "")
		got, err := svc.Get(ctxWhole, w0.ID)
		is.NoErr(err)
		is.Equal(got.OrganizationID, "")
		got, err = svc.Get(ctxWhole, w1.ID)
		is.NoErr(err)
		is.Equal(got.OrganizationID, o1)

		grid := storetest.NewOrgScopes(tenant, o1, o2)
		grid.RunBlind(t, func(t *testing.T, ctx context.Context) {
			is := is.New(t)
			_, err := svc.Get(ctx, w1.ID)
			wantWebhookNotFound(t, err)
			_, err = svc.Update(ctx, w1.ID, webhooks.Patch{Name: ptrTo("x")})
			wantWebhookNotFound(t, err)
			_, err = svc.RotateSecret(ctx, w1.ID)
			wantWebhookNotFound(t, err)
			_, err = svc.Secrets(ctx, w1.ID)
			wantWebhookNotFound(t, err)
			wantWebhookNotFound(t, svc.Delete(ctx, w1.ID))
			got, total := listHooks(t, svc, ctx, webhooks.Filter{})
			is.Equal(got, []string{"tenant-hook"}) // a webhook without organization is the whole tenant's
			is.Equal(total, 1)
			_, err = svc.Get(ctx, w0.ID)
			is.NoErr(err)
		})
		grid.RunSeeing(t, func(t *testing.T, ctx context.Context) {
			is := is.New(t)
			got, err := svc.Get(ctx, w1.ID)
			is.NoErr(err)
			is.Equal(got.Name, "o1-hook")
			names, total := listHooks(t, svc, ctx, webhooks.Filter{})
			is.Equal(names, []string{"tenant-hook", "o1-hook"})
			is.Equal(total, 2)
			_, err = svc.Secrets(ctx, w1.ID)
			is.NoErr(err)
		})

		// An update from another organization that may read O1 keeps the
		// webhook's organization.
		up, err := svc.Update(scoped(store.Scope{TenantID: tenant, OrganizationID: o2, OrganizationIDs: []string{o1, o2}}),
			w1.ID, webhooks.Patch{Description: ptrTo("by o2")})
		is.NoErr(err)
		is.Equal(up.OrganizationID, o1)
		got, err = svc.Get(ctxO1, w1.ID)
		is.NoErr(err)
		is.Equal(got.Description, "by o2")
		is.Equal(got.OrganizationID, o1)
	}, webhooks.Migrations)
}

// fakeClock is a settable clock for Options.Now.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

func TestWebhookRotateSecret(t *testing.T) {
	t.Parallel()
	storetest.EachIsolated(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		key := randomKey()
		clk := &fakeClock{t: time.Now()}
		svc := newSvc(t, db, webhooks.Options{SecretKey: key, Now: clk.Now})
		ctx, sc := storetest.NewScope(t)
		w, s0 := mustCreate(t, svc, ctx, hookInput("rotating"))
		other, o0 := mustCreate(t, svc, ctx, hookInput("other")) // rotated later: still in its period at the sweep
		secrets, err := svc.Secrets(ctx, w.ID)
		is.NoErr(err)
		is.Equal(secrets, []string{s0})
		time.Sleep(2 * time.Millisecond)

		started := time.Now().Add(-time.Second)
		r1, err := svc.RotateSecret(ctx, w.ID)
		is.NoErr(err)
		wantSecretShape(t, r1.Secret)
		is.True(r1.Secret != s0)
		is.True(r1.PreviousSecretSetAt.After(started) && r1.PreviousSecretSetAt.Before(time.Now().Add(time.Second)))
		is.Equal(r1.PreviousSecretExpiresAt.Sub(r1.PreviousSecretSetAt), 24*time.Hour)

		// Reads show the period and never a secret.
		got, err := svc.Get(ctx, w.ID)
		is.NoErr(err)
		is.True(got.PreviousSecretSetAt != nil && got.PreviousSecretSetAt.Equal(r1.PreviousSecretSetAt))
		is.True(got.PreviousSecretExpiresAt != nil && got.PreviousSecretExpiresAt.Equal(r1.PreviousSecretExpiresAt))
		is.True(got.UpdatedAt.Equal(r1.PreviousSecretSetAt))
		is.Equal(got.MaskedSecret, webhooks.MaskedSecret)
		b, _ := json.Marshal(got)
		is.True(!strings.Contains(string(b), s0) && !strings.Contains(string(b), r1.Secret))

		// Both are stored sealed.
		current, previous := storedSecrets(t, db, w.ID)
		is.True(previous != nil)
		box, _ := secretbox.New(key, "webhooks.secret")
		for _, sealed := range []string{current, *previous} {
			is.True(strings.HasPrefix(sealed, "v1:"))
			is.True(!strings.Contains(sealed, "whsec_"))
		}
		is.Equal(mustOK(box.Open(current)), r1.Secret)
		is.Equal(mustOK(box.Open(*previous)), s0)

		// During the period both sign, the new one first.
		for _, at := range []time.Time{r1.PreviousSecretSetAt, r1.PreviousSecretSetAt.Add(23 * time.Hour), r1.PreviousSecretExpiresAt.Add(-time.Microsecond)} {
			clk.Set(at)
			secrets, err := svc.Secrets(ctx, w.ID)
			is.NoErr(err)
			is.Equal(secrets, []string{r1.Secret, s0})
		}
		n, err := svc.DropExpiredSecrets(ctx)
		is.NoErr(err)
		is.Equal(n, int64(0)) // still in the period
		got, err = svc.Get(ctx, w.ID)
		is.NoErr(err)
		is.True(got.PreviousSecretSetAt != nil)

		// The other webhook is rotated an hour later.
		clk.Set(time.Now())
		time.Sleep(2 * time.Millisecond)
		rOther, err := svc.RotateSecret(ctx, other.ID)
		is.NoErr(err)

		// After the period only the new one signs, even before the sweep.
		clk.Set(r1.PreviousSecretExpiresAt)
		secrets, err = svc.Secrets(ctx, w.ID)
		is.NoErr(err)
		is.Equal(secrets, []string{r1.Secret})
		clk.Set(r1.PreviousSecretExpiresAt.Add(time.Hour))
		secrets, err = svc.Secrets(ctx, w.ID)
		is.NoErr(err)
		is.Equal(secrets, []string{r1.Secret})
		// the other one is in its period still (it expires later)
		if rOther.PreviousSecretExpiresAt.After(clk.Now()) {
			secrets, err = svc.Secrets(ctx, other.ID)
			is.NoErr(err)
			is.Equal(secrets, []string{rOther.Secret, o0})
		}

		// The sweep clears exactly the ended period.
		clk.Set(r1.PreviousSecretExpiresAt)
		n, err = svc.DropExpiredSecrets(ctx)
		is.NoErr(err)
		is.Equal(n, int64(1))
		got, err = svc.Get(ctx, w.ID)
		is.NoErr(err)
		is.True(got.PreviousSecretSetAt == nil)
		is.True(got.PreviousSecretExpiresAt == nil)
		_, previous = storedSecrets(t, db, w.ID)
		is.True(previous == nil)
		secrets, err = svc.Secrets(ctx, w.ID)
		is.NoErr(err)
		is.Equal(secrets, []string{r1.Secret})
		gotOther, err := svc.Get(ctx, other.ID)
		is.NoErr(err)
		is.True(gotOther.PreviousSecretSetAt != nil && gotOther.PreviousSecretSetAt.Equal(rOther.PreviousSecretSetAt))
		_, previous = storedSecrets(t, db, other.ID)
		is.True(previous != nil)
		n, err = svc.DropExpiredSecrets(ctx)
		is.NoErr(err)
		is.Equal(n, int64(0)) // nothing left to drop
		clk.Set(rOther.PreviousSecretExpiresAt)
		n, err = svc.DropExpiredSecrets(ctx)
		is.NoErr(err)
		is.Equal(n, int64(1))
		secrets, err = svc.Secrets(ctx, other.ID)
		is.NoErr(err)
		is.Equal(secrets, []string{rOther.Secret})

		// Rotating twice within a period: the previous secret is the one
		// rotated out, the oldest is gone.
		clk.Set(time.Now())
		time.Sleep(2 * time.Millisecond)
		r2, err := svc.RotateSecret(ctx, w.ID)
		is.NoErr(err)
		clk.Set(time.Now().Add(time.Second)) // the period starts at the service's clock
		r3, err := svc.RotateSecret(ctx, w.ID)
		is.NoErr(err)
		is.True(r3.Secret != r2.Secret && r2.Secret != r1.Secret)
		is.True(r3.PreviousSecretSetAt.After(r2.PreviousSecretSetAt))
		secrets, err = svc.Secrets(ctx, w.ID)
		is.NoErr(err)
		is.Equal(secrets, []string{r3.Secret, r2.Secret})
		got, err = svc.Get(ctx, w.ID)
		is.NoErr(err)
		is.True(got.PreviousSecretExpiresAt.Equal(r3.PreviousSecretExpiresAt))

		// Unknown ids.
		for _, id := range []string{store.NewID(), "nope"} {
			_, err := svc.RotateSecret(ctx, id)
			wantWebhookNotFound(t, err)
		}
		is.Equal(hookEventTypes(hookEvents(t, db, sc.TenantID)), []string{"webhooks.webhook.created", "webhooks.webhook.created",
			"webhooks.webhook.secret_rotated", "webhooks.webhook.secret_rotated", "webhooks.webhook.secret_rotated",
			"webhooks.webhook.secret_rotated"})

		// Another key cannot open the secrets.
		stranger := newSvc(t, db, webhooks.Options{})
		_, err = stranger.Secrets(ctx, w.ID)
		is.True(err != nil && !errors.Is(err, store.ErrNotFound))
	}, webhooks.Migrations)
}

func TestWebhookRotationPeriodOption(t *testing.T) {
	t.Parallel()
	storetest.EachIsolated(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		clk := &fakeClock{t: time.Now()}
		svc := newSvc(t, db, webhooks.Options{RotationPeriod: time.Hour, Now: clk.Now})
		ctx, _ := storetest.NewScope(t)
		w, s0 := mustCreate(t, svc, ctx, hookInput("hourly"))
		r, err := svc.RotateSecret(ctx, w.ID)
		is.NoErr(err)
		is.Equal(r.PreviousSecretExpiresAt.Sub(r.PreviousSecretSetAt), time.Hour)
		clk.Set(r.PreviousSecretSetAt.Add(59 * time.Minute))
		secrets, err := svc.Secrets(ctx, w.ID)
		is.NoErr(err)
		is.Equal(secrets, []string{r.Secret, s0})
		n, err := svc.DropExpiredSecrets(ctx)
		is.NoErr(err)
		is.Equal(n, int64(0))
		clk.Set(r.PreviousSecretSetAt.Add(61 * time.Minute))
		secrets, err = svc.Secrets(ctx, w.ID)
		is.NoErr(err)
		is.Equal(secrets, []string{r.Secret})
		n, err = svc.DropExpiredSecrets(ctx)
		is.NoErr(err)
		is.Equal(n, int64(1))
	}, webhooks.Migrations)
}

// The service's clock (Options.Now) is the one the rotation period is
// judged by; a rotation must start its period on that clock too, or a
// previous secret can be dropped the moment it is rotated out.
func TestWebhookRotationUsesServiceClock(t *testing.T) {
	t.Parallel()
	storetest.EachIsolated(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		at := time.Now().Add(48 * time.Hour).UTC().Truncate(time.Microsecond)
		svc := newSvc(t, db, webhooks.Options{Now: func() time.Time { return at }})
		ctx, _ := storetest.NewScope(t)
		w, s0 := mustCreate(t, svc, ctx, hookInput("clocked"))
		r, err := svc.RotateSecret(ctx, w.ID)
		is.NoErr(err)
		is.True(r.PreviousSecretSetAt.Equal(at))
		is.True(r.PreviousSecretExpiresAt.Equal(at.Add(24 * time.Hour)))
		secrets, err := svc.Secrets(ctx, w.ID)
		is.NoErr(err)
		is.Equal(secrets, []string{r.Secret, s0}) // just rotated: both sign
		n, err := svc.DropExpiredSecrets(ctx)
		is.NoErr(err)
		is.Equal(n, int64(0))
	}, webhooks.Migrations)
}

func mustOK[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
