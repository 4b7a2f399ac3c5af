package tenantkit_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/tenantkit/tenantkit"
	"github.com/tenantkit/tenantkit/full"
	"github.com/tenantkit/tenantkit/httpapi"
	"github.com/tenantkit/tenantkit/httpapi/paymentsapi"
	"github.com/tenantkit/tenantkit/httpapi/togglesapi"
	"github.com/tenantkit/tenantkit/identity"
	"github.com/tenantkit/tenantkit/integrations"
	"github.com/tenantkit/tenantkit/payments"
	"github.com/tenantkit/tenantkit/rules"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
	"github.com/tenantkit/tenantkit/toggles"
)

// tableAnswers reports whether table exists (a query on it succeeds).
func tableAnswers(ctx context.Context, db *store.DB, table string) bool {
	rows, err := db.Query(ctx, "SELECT 1 FROM "+table+" LIMIT 1")
	if err != nil {
		return false
	}
	for rows.Next() {
	}
	rows.Close()
	return rows.Err() == nil
}

// A Kit opened with two areas has those areas (and no other) on both
// engines: their services, their migrations and tables, their jobs; the
// other areas' tables are not created.
func TestKitWithChosenAreas(t *testing.T) {
	t.Parallel()
	storetest.EachIsolated(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		ctx := t.Context()
		kit, err := full.OpenPlain(ctx, full.Config{DB: db, Areas: []string{tenantkit.AreaToggles, tenantkit.AreaRules}})
		is.NoErr(err)
		defer func() { is.NoErr(kit.Close(context.Background())) }()

		var names []string
		for _, a := range kit.Areas() {
			names = append(names, a.Name())
		}
		is.Equal(names, []string{"toggles", "rules"})
		is.True(kit.Toggles != nil && kit.Rules != nil)
		is.True(kit.Identity == nil && kit.Payments == nil && kit.Attachments == nil && kit.DataSync == nil &&
			kit.Entities == nil && kit.Webhooks == nil && kit.Integrations == nil && kit.Dashboards == nil && kit.Progress == nil)
		is.Equal(len(kit.Migrations()), 2)

		for _, table := range []string{"feature_toggles", "business_rules", "business_rule_sets"} {
			if !tableAnswers(ctx, db, table) {
				t.Errorf("table %s of a chosen area does not answer", table)
			}
		}
		for _, table := range []string{"payment_transactions", "attachments", "custom_entity_records", "webhooks", "auth_users", "auth_api_keys"} {
			if tableAnswers(ctx, db, table) {
				t.Errorf("table %s exists in a Kit of toggles and rules", table)
			}
		}
		sctx := store.WithScope(ctx, store.Scope{TenantID: store.NewID()})
		_, _, err = kit.Toggles.List(sctx, toggles.ListFilter{Limit: 1})
		is.NoErr(err)
		is.NoErr(kit.Start(ctx))
		is.NoErr(kit.Ready(ctx))
	})
}

// An area is opened with the areas it is built on; an unknown name is
// refused, naming it.
func TestKitAreasPullInWhatTheyNeed(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	ctx := t.Context()
	kit, err := full.OpenPlain(ctx, full.Config{DB: storetest.SQLite(t), Areas: []string{tenantkit.AreaDataSync, tenantkit.AreaPayments}})
	is.NoErr(err)
	defer func() { is.NoErr(kit.Close(context.Background())) }()
	var names []string
	for _, a := range kit.Areas() {
		names = append(names, a.Name())
	}
	is.Equal(names, []string{"entities", "integrations", "payments", "progress", "datasync"})

	_, err = full.OpenPlain(ctx, full.Config{DB: storetest.SQLite(t), Areas: []string{"toggles", "billing"}})
	is.True(err != nil && strings.Contains(err.Error(), `"billing"`))
	is.Equal(tenantkit.AllAreas()[0], tenantkit.AreaIdentity)
}

// httpapi over a Kit of toggles and rules serves and documents their
// routes only (and the documentation and health routes), with the host's
// own authenticator; without an identity area and without an
// authenticator, New refuses.
func TestHandlerServesOnlyTheKitsAreas(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	ctx := t.Context()
	kit, err := full.OpenPlain(ctx, full.Config{DB: storetest.SQLite(t), Areas: []string{tenantkit.AreaToggles, tenantkit.AreaRules}})
	is.NoErr(err)
	defer func() { is.NoErr(kit.Close(context.Background())) }()

	_, err = httpapi.New(kit.Kit, httpapi.Options{})
	is.True(errors.Is(err, httpapi.ErrNoAuthenticator))

	tenant := store.NewID()
	h, err := httpapi.New(kit.Kit, httpapi.Options{Authenticator: httpapi.AuthenticatorFunc(func(r *http.Request) (*identity.Identity, error) {
		if r.Header.Get("X-Tenant") == "" {
			return nil, nil
		}
		return identity.ForTenant(r.Header.Get("X-Tenant")).WithFeatures("business_rules.rules.view"), nil
	})})
	is.NoErr(err)
	get := func(path string, tenantID string) (int, string) {
		req := httptest.NewRequest("GET", path, nil)
		if tenantID != "" {
			req.Header.Set("X-Tenant", tenantID)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		body, _ := io.ReadAll(rec.Result().Body)
		return rec.Code, string(body)
	}
	code, _ := get("/api/business_rules/rules", tenant)
	is.Equal(code, 200)
	code, _ = get("/api/business_rules/rules", "")
	is.Equal(code, 401)
	req := httptest.NewRequest("POST", "/api/business_rules/rules", strings.NewReader(`{"name":"r"}`))
	req.Header.Set("X-Tenant", tenant)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	is.Equal(rec.Code, 403) // a feature the host's caller lacks, named
	is.True(strings.Contains(rec.Body.String(), "business_rules.rules.create"))
	for _, absent := range []string{"/api/payment_gateways/transactions", "/api/attachments", "/api/custom_entities", "/api/auth/me", "/api/webhooks"} {
		code, _ = get(absent, tenant)
		is.Equal(code, 404) // not served: the Kit has no such area
	}

	code, doc := get("/api/docs/openapi", "")
	is.Equal(code, 200)
	var document struct {
		Paths map[string]any `json:"paths"`
	}
	is.NoErr(json.Unmarshal([]byte(doc), &document))
	is.True(len(document.Paths) > 5)
	for p := range document.Paths {
		ok := slices.ContainsFunc([]string{"/business_rules", "/feature_toggles", "/events/stream", "/docs", "/health", "/ready"}, func(prefix string) bool {
			return strings.HasPrefix(p, prefix)
		})
		if !ok {
			t.Errorf("the document of a toggles and rules Kit lists %s", p)
		}
	}
}

// A Kit is built from the modules a host lists, without package full: the
// areas they need come with them (payments brings integrations), they are
// built in the Kit's build order, AreaOf finds each service, and a module
// listed twice is refused.
func TestKitFromModules(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	ctx := t.Context()
	kit, err := tenantkit.Open(ctx, tenantkit.Config{DB: storetest.SQLite(t),
		Areas: []tenantkit.Module{paymentsapi.Area(payments.Options{}), togglesapi.Area(toggles.Options{})}})
	is.NoErr(err)
	defer func() { is.NoErr(kit.Close(context.Background())) }()
	var names []string
	for _, m := range kit.Modules() {
		names = append(names, m.Name())
	}
	is.Equal(names, []string{tenantkit.AreaIntegrations, tenantkit.AreaToggles, tenantkit.AreaPayments}) // build order
	_, ok := tenantkit.AreaOf[*payments.Service](kit)
	is.True(ok)
	_, ok = tenantkit.AreaOf[*integrations.Service](kit)
	is.True(ok) // needed by payments
	_, ok = tenantkit.AreaOf[*rules.Service](kit)
	is.True(!ok)
	is.True(kit.Identity == nil)

	_, err = tenantkit.Open(ctx, tenantkit.Config{DB: storetest.SQLite(t),
		Areas: []tenantkit.Module{togglesapi.Area(toggles.Options{}), togglesapi.Area(toggles.Options{})}})
	is.True(err != nil && strings.Contains(err.Error(), `"toggles" listed twice`))
}
