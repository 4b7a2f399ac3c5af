package integrations_test

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/tenantkit/tenantkit/integrations"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// The Service in Go, on both engines: registry validation, the defaults
// of a tenant that changed nothing, state and version changes with their
// events, credential validation, masking and the mask round trip,
// credentials sealed at rest, the log's clipping and payload replacement,
// and two tenants kept apart.

func newKey() []byte {
	k := make([]byte, 32)
	_, _ = rand.Read(k)
	return k
}

// newService is a Service over db with the test definitions registered.
func newService(t *testing.T, db *store.DB, key []byte) *integrations.Service {
	t.Helper()
	s, err := integrations.New(db, integrations.Options{SecretKey: key})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.RegisterBundle(integrations.Bundle{ID: "suite", Title: "Suite", Description: "Shared login",
		Credentials: []integrations.Field{{Key: "tenantUrl", Label: "Tenant URL", Type: integrations.FieldURL, Required: true},
			{Key: "password", Label: "Password", Type: integrations.FieldSecret}}}); err != nil {
		t.Fatal(err)
	}
	for _, d := range testDefinitions {
		if err := s.Register(d); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// allFields has a field of every type.
var allFields = []integrations.Field{
	{Key: "account", Label: "Account", Type: integrations.FieldText, Required: true},
	{Key: "apiKey", Label: "API key", Type: integrations.FieldSecret, Required: true},
	{Key: "signing", Label: "Signing secret", Type: integrations.FieldSecret},
	{Key: "region", Label: "Region", Type: integrations.FieldSelect, Options: []integrations.Option{{Value: "eu", Label: "EU"}, {Value: "us", Label: "US"}}},
	{Key: "sandbox", Label: "Sandbox", Type: integrations.FieldBoolean},
	{Key: "endpoint", Label: "Endpoint", Type: integrations.FieldURL},
}

var testDefinitions = []integrations.Definition{
	{ID: "crm", Title: "CRM", Description: "Contacts from the Zeta CRM", Category: "sync", Hub: "data_sync", ProviderKey: "zeta",
		APIVersions: []integrations.APIVersion{{ID: "2023", Label: "2023", Status: "deprecated"}, {ID: "2024", Label: "2024", Status: "stable", Default: true}},
		Credentials: allFields},
	{ID: "erp", Title: "ERP", Description: "Orders", Category: "sync",
		APIVersions: []integrations.APIVersion{{ID: "v1", Label: "v1"}, {ID: "v2", Label: "v2"}}},
	{ID: "mailer", Title: "Mailer", Description: "Sends mail", Category: "messaging"},
	{ID: "suite_a", Title: "Suite A", Category: "suite", BundleID: "suite"},
	{ID: "suite_b", Title: "Suite B", Category: "suite", BundleID: "suite",
		Credentials: []integrations.Field{{Key: "token", Label: "Token", Type: integrations.FieldSecret}}},
	{ID: "aaa", Title: "CRM", Description: "Same title as crm, smaller id"},
}

func TestRegisterValidation(t *testing.T) {
	t.Parallel()
	s, err := integrations.New(nil, integrations.Options{SecretKey: newKey()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := integrations.New(nil, integrations.Options{SecretKey: make([]byte, 16)}); err == nil {
		t.Error("New with a 16-byte key: no error, want one (at least 32 bytes)")
	}
	field := func(key string, typ integrations.FieldType) integrations.Field {
		return integrations.Field{Key: key, Label: key, Type: typ}
	}
	if err := s.RegisterBundle(integrations.Bundle{ID: "b", Title: "B"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Register(integrations.Definition{ID: "taken", Title: "Taken"}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		def  integrations.Definition
		want string
	}{
		{"no id", integrations.Definition{Title: "X"}, "needs an ID and a Title"},
		{"no title", integrations.Definition{ID: "x"}, "needs an ID and a Title"},
		{"empty field key", integrations.Definition{ID: "x", Title: "X", Credentials: []integrations.Field{field("", integrations.FieldText)}}, "must be set and unique"},
		{"duplicate field key", integrations.Definition{ID: "x", Title: "X", Credentials: []integrations.Field{field("a", integrations.FieldText), field("a", integrations.FieldSecret)}}, "must be set and unique"},
		{"unknown field type", integrations.Definition{ID: "x", Title: "X", Credentials: []integrations.Field{field("a", "password")}}, `unknown type "password"`},
		{"select without options", integrations.Definition{ID: "x", Title: "X", Credentials: []integrations.Field{field("a", integrations.FieldSelect)}}, "has no options"},
		{"empty version id", integrations.Definition{ID: "x", Title: "X", APIVersions: []integrations.APIVersion{{ID: ""}}}, "must be set and unique"},
		{"duplicate version", integrations.Definition{ID: "x", Title: "X", APIVersions: []integrations.APIVersion{{ID: "v1"}, {ID: "v1"}}}, "must be set and unique"},
		{"two defaults", integrations.Definition{ID: "x", Title: "X", APIVersions: []integrations.APIVersion{{ID: "v1", Default: true}, {ID: "v2", Default: true}}}, "at most one"},
		{"unknown bundle", integrations.Definition{ID: "x", Title: "X", BundleID: "nope"}, `bundle "nope" is not registered`},
		{"duplicate id", integrations.Definition{ID: "taken", Title: "Again"}, "already registered"},
	} {
		err := s.Register(c.def)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Register (%s): %v, want an error containing %q", c.name, err, c.want)
		}
	}
	if _, ok := s.Definition("x"); ok {
		t.Error("a refused definition was registered")
	}
	for _, c := range []struct {
		name string
		b    integrations.Bundle
		want string
	}{
		{"no id", integrations.Bundle{Title: "B"}, "needs an ID and a Title"},
		{"no title", integrations.Bundle{ID: "c"}, "needs an ID and a Title"},
		{"bad field", integrations.Bundle{ID: "c", Title: "C", Credentials: []integrations.Field{field("a", "")}}, "unknown type"},
		{"duplicate", integrations.Bundle{ID: "b", Title: "Again"}, "already registered"},
	} {
		if err := s.RegisterBundle(c.b); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("RegisterBundle (%s): %v, want an error containing %q", c.name, err, c.want)
		}
	}
	// Register copies what it keeps: changing the caller's slices later
	// changes nothing.
	fields := []integrations.Field{field("a", integrations.FieldText)}
	versions := []integrations.APIVersion{{ID: "v1"}}
	if err := s.Register(integrations.Definition{ID: "copied", Title: "Copied", Credentials: fields, APIVersions: versions}); err != nil {
		t.Fatal(err)
	}
	fields[0].Key, versions[0].ID = "changed", "changed"
	if d, _ := s.Definition("copied"); d.Credentials[0].Key != "a" || d.APIVersions[0].ID != "v1" {
		t.Errorf("the registered definition follows the caller's slices: %+v", d)
	}
	if got := len(s.Definitions()); got != 2 {
		t.Errorf("Definitions: %d, want 2 (taken, copied)", got)
	}
}

// scoped returns a context carrying a fresh tenant, and the tenant.
func scoped(t *testing.T) (context.Context, string) {
	ctx, sc := storetest.NewScope(t)
	return ctx, sc.TenantID
}

func TestDefaults(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		s := newService(t, db, newKey())
		c, tn := scoped(t)
		items, err := s.List(c, integrations.ListFilter{})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, it := range items {
			v := "null"
			if it.APIVersion != nil {
				v = *it.APIVersion
			}
			got = append(got, it.ID+":"+v+":"+map[bool]string{true: "on", false: "off"}[it.IsEnabled])
			if it.HasCredentials {
				t.Errorf("%s has credentials in a fresh tenant", it.ID)
			}
		}
		// By title, then id; the default version is the one marked,
		// else the first, else null.
		want := []string{"aaa:null:on", "crm:2024:on", "erp:v1:on", "mailer:null:on", "suite_a:null:on", "suite_b:null:on"}
		if !slices.Equal(got, want) {
			t.Errorf("List = %v, want %v", got, want)
		}
		d, err := s.Get(c, "crm")
		if err != nil {
			t.Fatal(err)
		}
		if st := d.State; !st.IsEnabled || st.APIVersion == nil || *st.APIVersion != "2024" || st.ReauthRequired || st.EnabledAt != nil ||
			st.UpdatedAt != nil || st.LastHealthStatus != nil || st.LastHealthCheckedAt != nil || st.LastHealthLatencyMs != nil {
			t.Errorf("default state %+v", st)
		}
		if d.Bundle != nil || d.BundleIntegrations == nil || len(d.BundleIntegrations) != 0 || d.HasCredentials ||
			d.CredentialsKeys == nil || len(d.CredentialsKeys) != 0 {
			t.Errorf("detail of an unbundled integration without credentials: %+v", d)
		}
		if on, err := s.Enabled(t.Context(), tn, "crm"); !on || err != nil {
			t.Errorf("Enabled by default = %v, %v", on, err)
		}
		if _, err := s.Enabled(t.Context(), tn, "nope"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("Enabled of an unknown integration: %v", err)
		}
		if _, err := s.Get(c, "nope"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("Get of an unknown integration: %v", err)
		}
		if _, err := s.List(t.Context(), integrations.ListFilter{}); !errors.Is(err, store.ErrNoScope) {
			t.Errorf("List without a scope: %v, want ErrNoScope", err)
		}

		// A bundle: both members listed with their states, the member
		// without fields of its own takes the bundle's.
		d, err = s.Get(c, "suite_a")
		if err != nil {
			t.Fatal(err)
		}
		if d.Bundle == nil || d.Bundle.ID != "suite" || len(d.BundleIntegrations) != 2 ||
			d.BundleIntegrations[0].ID != "suite_a" || d.BundleIntegrations[1].ID != "suite_b" || !d.BundleIntegrations[1].IsEnabled {
			t.Errorf("bundle detail: %+v", d)
		}
		schema, _, err := s.Credentials(c, "suite_a")
		if err != nil || len(schema) != 2 || schema[0].Key != "tenantUrl" {
			t.Errorf("suite_a's schema %+v, %v; want the bundle's", schema, err)
		}
		schema, _, _ = s.Credentials(c, "suite_b")
		if len(schema) != 1 || schema[0].Key != "token" {
			t.Errorf("suite_b's schema %+v, want its own", schema)
		}
		schema, values, err := s.Credentials(c, "mailer")
		if err != nil || schema == nil || len(schema) != 0 || values == nil || len(values) != 0 {
			t.Errorf("mailer's credentials: %#v, %#v, %v; want [] and {}", schema, values, err)
		}

		// Filters.
		for _, f := range []struct {
			f    integrations.ListFilter
			want []string
		}{
			{integrations.ListFilter{Q: "zeta"}, []string{"crm"}},   // the description
			{integrations.ListFilter{Q: "ORDERS"}, []string{"erp"}}, // case-insensitive
			{integrations.ListFilter{Q: "suite_"}, []string{"suite_a", "suite_b"}},
			{integrations.ListFilter{Q: "crm"}, []string{"aaa", "crm"}}, // aaa by title
			{integrations.ListFilter{Category: "sync"}, []string{"crm", "erp"}},
			{integrations.ListFilter{Category: "Sync"}, nil},
			{integrations.ListFilter{IsEnabled: new(bool)}, nil},
		} {
			items, err := s.List(c, f.f)
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, it := range items {
				ids = append(ids, it.ID)
			}
			if !slices.Equal(ids, f.want) {
				t.Errorf("List(%+v) = %v, want %v", f.f, ids, f.want)
			}
		}
	}, integrations.Migrations)
}

func TestStateChanges(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		s := newService(t, db, newKey())
		c, tn := scoped(t)
		if _, err := s.SetState(c, "crm", integrations.StateInput{}); !errors.Is(err, integrations.ErrNoStateChange) || !errors.Is(err, store.ErrInvalid) {
			t.Errorf("SetState without a change: %v", err)
		}
		if _, err := s.SetState(c, "nope", integrations.StateInput{IsEnabled: new(bool)}); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("SetState of an unknown integration: %v", err)
		}
		off, on := false, true
		st, err := s.SetState(c, "crm", integrations.StateInput{IsEnabled: &off})
		if err != nil {
			t.Fatal(err)
		}
		if st.IsEnabled || st.EnabledAt != nil || st.UpdatedAt == nil || st.APIVersion == nil || *st.APIVersion != "2024" {
			t.Errorf("after disabling: %+v (the default version is kept, enabledAt stays null)", st)
		}
		if enabled, _ := s.Enabled(t.Context(), tn, "crm"); enabled {
			t.Error("Enabled after disabling = true")
		}
		st, err = s.SetState(c, "crm", integrations.StateInput{ReauthRequired: &on})
		if err != nil || st.IsEnabled || !st.ReauthRequired || st.EnabledAt != nil {
			t.Errorf("reauthRequired alone: %+v, %v (isEnabled unchanged)", st, err)
		}
		st, err = s.SetState(c, "crm", integrations.StateInput{IsEnabled: &on})
		if err != nil || !st.IsEnabled || st.EnabledAt == nil || !st.EnabledAt.Equal(*st.UpdatedAt) || !st.ReauthRequired {
			t.Fatalf("re-enabling: %+v, %v; want enabledAt stamped at updatedAt", st, err)
		}
		stamped := *st.EnabledAt
		st, _ = s.SetState(c, "crm", integrations.StateInput{IsEnabled: &on, ReauthRequired: &off})
		if !st.EnabledAt.Equal(stamped) || st.ReauthRequired {
			t.Errorf("enabling an enabled integration moved enabledAt from %v to %v", stamped, st.EnabledAt)
		}
		d, _ := s.Get(c, "crm")
		if !d.State.IsEnabled || d.State.EnabledAt == nil || !d.State.EnabledAt.Equal(stamped) || d.State.UpdatedAt == nil {
			t.Errorf("Get after the changes: %+v", d.State)
		}

		// Versions.
		if _, _, err := s.SetVersion(c, "mailer", "v1"); !errors.Is(err, integrations.ErrNotVersioned) {
			t.Errorf("SetVersion of an unversioned integration: %v", err)
		}
		if _, _, err := s.SetVersion(c, "erp", "v3"); !errors.Is(err, integrations.ErrUnknownVersion) {
			t.Errorf("SetVersion to an unknown version: %v", err)
		}
		if _, _, err := s.SetVersion(c, "nope", "v1"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("SetVersion of an unknown integration: %v", err)
		}
		cur, prev, err := s.SetVersion(c, "erp", "v2")
		if err != nil || cur == nil || *cur != "v2" || prev == nil || *prev != "v1" {
			t.Errorf("SetVersion erp v2: %v, %v, %v; want v2 from v1 (the default)", cur, prev, err)
		}
		cur, prev, _ = s.SetVersion(c, "erp", "v1")
		if *cur != "v1" || *prev != "v2" {
			t.Errorf("SetVersion back: %s from %s", *cur, *prev)
		}
		items, _ := s.List(c, integrations.ListFilter{IsEnabled: &off})
		if len(items) != 0 {
			t.Errorf("disabled after re-enabling: %v", items)
		}
		if d, _ := s.Get(c, "erp"); !d.State.IsEnabled || *d.State.APIVersion != "v1" {
			t.Errorf("erp after version changes: %+v", d.State)
		}
		// No refused change stored anything for mailer.
		if d, _ := s.Get(c, "mailer"); d.State.UpdatedAt != nil {
			t.Errorf("a refused version change stored a state: %+v", d.State)
		}

		// The events: one per change, with the integration and its state.
		evs, err := store.ListEvents(t.Context(), db, store.EventFilter{TenantID: tn})
		if err != nil {
			t.Fatal(err)
		}
		var types []string
		for _, ev := range evs {
			types = append(types, ev.Type)
		}
		wantTypes := []string{integrations.EventStateUpdated, integrations.EventStateUpdated, integrations.EventStateUpdated,
			integrations.EventStateUpdated, integrations.EventVersionUpdated, integrations.EventVersionUpdated}
		if !slices.Equal(types, wantTypes) {
			t.Fatalf("events %v, want %v", types, wantTypes)
		}
		var data map[string]any
		if err := json.Unmarshal(evs[2].Data, &data); err != nil {
			t.Fatal(err)
		}
		wantKeys := []string{"apiVersion", "enabledAt", "integrationId", "isEnabled", "lastHealthCheckedAt", "lastHealthLatencyMs",
			"lastHealthStatus", "notifyAdminsOnFailure", "reauthRequired", "updatedAt"}
		if got := slices.Sorted(maps.Keys(data)); !slices.Equal(got, wantKeys) {
			t.Errorf("state event keys %v, want %v", got, wantKeys)
		}
		if data["integrationId"] != "crm" || data["isEnabled"] != true || data["enabledAt"] == nil {
			t.Errorf("re-enabling event data %s", evs[2].Data)
		}
		if err := json.Unmarshal(evs[4].Data, &data); err != nil || data["integrationId"] != "erp" || data["apiVersion"] != "v2" {
			t.Errorf("version event data %s", evs[4].Data)
		}
	}, integrations.Migrations)
}

func TestCredentialValidation(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		s := newService(t, db, newKey())
		c, tn := scoped(t)
		base := func(more map[string]any) map[string]any {
			m := map[string]any{"account": "acme", "apiKey": "sk_1"}
			maps.Copy(m, more)
			return m
		}
		longKey := strings.Repeat("k", 100)
		for _, tc := range []struct {
			name   string
			values map[string]any
			fields []string // the details; nil: accepted
		}{
			{"unknown key", base(map[string]any{"extra": "x"}), []string{"credentials.extra"}},
			{"long unknown key, cut", base(map[string]any{longKey: "x"}), []string{"credentials." + strings.Repeat("k", 64) + "…"}},
			{"NUL in an unknown key, quoted", base(map[string]any{"a\x00b": "x"}), []string{`credentials."a\x00b"`}},
			{"number for text", base(map[string]any{"account": 5.0}), []string{"credentials.account"}},
			{"object for text", base(map[string]any{"account": map[string]any{"a": "b"}}), []string{"credentials.account"}},
			{"boolean for secret", base(map[string]any{"apiKey": true}), []string{"credentials.apiKey"}},
			{"string for boolean", base(map[string]any{"sandbox": "true"}), []string{"credentials.sandbox"}},
			{"number for boolean", base(map[string]any{"sandbox": 1.0}), []string{"credentials.sandbox"}},
			{"select outside its options", base(map[string]any{"region": "asia"}), []string{"credentials.region"}},
			{"select by label", base(map[string]any{"region": "EU"}), []string{"credentials.region"}},
			{"ftp url", base(map[string]any{"endpoint": "ftp://x.test"}), []string{"credentials.endpoint"}},
			{"not a url", base(map[string]any{"endpoint": "not a url"}), []string{"credentials.endpoint"}},
			{"url without host", base(map[string]any{"endpoint": "https://"}), []string{"credentials.endpoint"}},
			{"url without scheme", base(map[string]any{"endpoint": "//x.test/a"}), []string{"credentials.endpoint"}},
			{"relative url", base(map[string]any{"endpoint": "/api"}), []string{"credentials.endpoint"}},
			{"NUL in text", base(map[string]any{"account": "a\x00b"}), []string{"credentials.account"}},
			{"NUL in a secret", base(map[string]any{"apiKey": "sk\x00"}), []string{"credentials.apiKey"}},
			{"invalid UTF-8", base(map[string]any{"account": "\xffacme"}), []string{"credentials.account"}},
			{"over 20,000 bytes", base(map[string]any{"signing": strings.Repeat("s", integrations.MaxValueLength+1)}), []string{"credentials.signing"}},
			{"required missing", map[string]any{"region": "eu"}, []string{"credentials.account", "credentials.apiKey"}},
			{"required null", base(map[string]any{"account": nil}), []string{"credentials.account"}},
			{"required empty map", map[string]any{}, []string{"credentials.account", "credentials.apiKey"}},
			{"the mask with nothing stored", base(map[string]any{"apiKey": integrations.Mask}), []string{"credentials.apiKey"}},
			{"several at once", map[string]any{"account": 1.0, "sandbox": "no", "zzz": 1.0},
				[]string{"credentials.account", "credentials.apiKey", "credentials.sandbox", "credentials.zzz"}},
		} {
			err := s.SetCredentials(c, "crm", tc.values)
			var ve *store.ValidationError
			if !errors.As(err, &ve) || !errors.Is(err, store.ErrInvalid) {
				t.Errorf("%s: %v, want a validation error naming %v", tc.name, err, tc.fields)
				continue
			}
			if got := slices.Sorted(maps.Keys(ve.Fields)); !slices.Equal(got, tc.fields) {
				t.Errorf("%s: details %v, want %v", tc.name, ve.Fields, tc.fields)
			}
		}
		// Nothing refused was stored.
		if _, err := s.Values(t.Context(), tn, "crm"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("Values after refusals only: %v, want ErrNotFound", err)
		}
		if err := s.SetCredentials(c, "nope", base(nil)); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("SetCredentials of an unknown integration: %v", err)
		}

		for _, tc := range []struct {
			name   string
			values map[string]any
			want   map[string]any
		}{
			{"every type", base(map[string]any{"signing": "whsec", "region": "us", "sandbox": false, "endpoint": "https://api.zeta.test/v2?x=1"}),
				base(map[string]any{"signing": "whsec", "region": "us", "sandbox": false, "endpoint": "https://api.zeta.test/v2?x=1"})},
			{"http url, exactly 20,000 bytes", base(map[string]any{"endpoint": "http://localhost:8080", "signing": strings.Repeat("s", integrations.MaxValueLength)}),
				base(map[string]any{"endpoint": "http://localhost:8080", "signing": strings.Repeat("s", integrations.MaxValueLength)})},
			{"null leaves optional keys out", base(map[string]any{"region": nil, "sandbox": nil}), base(nil)},
			{"empty strings are values", base(map[string]any{"account": ""}), base(map[string]any{"account": ""})},
		} {
			if err := s.SetCredentials(c, "crm", tc.values); err != nil {
				t.Errorf("%s: %v", tc.name, err)
				continue
			}
			got, err := s.Values(t.Context(), tn, "crm")
			if err != nil {
				t.Fatal(err)
			}
			if g, w := mustJSON(t, got), mustJSON(t, tc.want); g != w {
				t.Errorf("%s: stored %.200s, want %.200s", tc.name, g, w)
			}
		}
		// The bundle's schema checks a member without fields of its own.
		if err := s.SetCredentials(c, "suite_a", map[string]any{"token": "x"}); !hasFields(err, "credentials.tenantUrl", "credentials.token") {
			t.Errorf("suite_a with suite_b's field: %v", err)
		}
		if err := s.SetCredentials(c, "suite_a", map[string]any{"tenantUrl": "https://t.suite.test"}); err != nil {
			t.Errorf("suite_a with the bundle's fields: %v", err)
		}
	}, integrations.Migrations)
}

func hasFields(err error, fields ...string) bool {
	var ve *store.ValidationError
	return errors.As(err, &ve) && slices.Equal(slices.Sorted(maps.Keys(ve.Fields)), fields)
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestCredentialMasking(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		s := newService(t, db, newKey())
		c, tn := scoped(t)
		const secret, signing = "sk_live_0123456789abcdef", "whsec_0123456789"
		if err := s.SetCredentials(c, "crm", map[string]any{"account": "acme", "apiKey": secret, "signing": signing, "region": "eu", "sandbox": true}); err != nil {
			t.Fatal(err)
		}
		schema, shown, err := s.Credentials(c, "crm")
		if err != nil {
			t.Fatal(err)
		}
		if mustJSON(t, schema) != mustJSON(t, allFields) {
			t.Errorf("schema %s, want the definition's fields", mustJSON(t, schema))
		}
		want := map[string]any{"account": "acme", "apiKey": integrations.Mask, "signing": integrations.Mask, "region": "eu", "sandbox": true}
		if mustJSON(t, shown) != mustJSON(t, want) {
			t.Errorf("Credentials shows %s, want %s", mustJSON(t, shown), mustJSON(t, want))
		}
		if integrations.Mask != "••••••••" {
			t.Errorf("Mask = %q", integrations.Mask)
		}
		d, _ := s.Get(c, "crm")
		if !d.HasCredentials || !slices.Equal(d.CredentialsKeys, []string{"account", "apiKey", "region", "sandbox", "signing"}) {
			t.Errorf("detail: hasCredentials %v, keys %v", d.HasCredentials, d.CredentialsKeys)
		}

		// What GET showed, sent back with one change: the secrets keep
		// their stored values.
		back := maps.Clone(shown)
		back["account"] = "acme-2"
		if err := s.SetCredentials(c, "crm", back); err != nil {
			t.Fatal(err)
		}
		got, _ := s.Values(t.Context(), tn, "crm")
		wantStored := map[string]any{"account": "acme-2", "apiKey": secret, "signing": signing, "region": "eu", "sandbox": true}
		if mustJSON(t, got) != mustJSON(t, wantStored) {
			t.Errorf("after the mask round trip: %s, want %s", mustJSON(t, got), mustJSON(t, wantStored))
		}
		// A secret replaced by a new value, another dropped by leaving it
		// out: PUT replaces the whole object.
		if err := s.SetCredentials(c, "crm", map[string]any{"account": "acme-2", "apiKey": "sk_new"}); err != nil {
			t.Fatal(err)
		}
		got, _ = s.Values(t.Context(), tn, "crm")
		if mustJSON(t, got) != mustJSON(t, map[string]any{"account": "acme-2", "apiKey": "sk_new"}) {
			t.Errorf("after replacing: %s", mustJSON(t, got))
		}
		// The mask for a secret that has no stored value leaves it out.
		if err := s.SetCredentials(c, "crm", map[string]any{"account": "a", "apiKey": integrations.Mask, "signing": integrations.Mask}); err != nil {
			t.Fatal(err)
		}
		got, _ = s.Values(t.Context(), tn, "crm")
		if mustJSON(t, got) != mustJSON(t, map[string]any{"account": "a", "apiKey": "sk_new"}) {
			t.Errorf("the mask of an unstored secret: %s", mustJSON(t, got))
		}
		// The mask in a text field is a value like any other.
		if err := s.SetCredentials(c, "crm", map[string]any{"account": integrations.Mask, "apiKey": integrations.Mask}); err != nil {
			t.Fatal(err)
		}
		got, _ = s.Values(t.Context(), tn, "crm")
		if got["account"] != integrations.Mask || got["apiKey"] != "sk_new" {
			t.Errorf("the mask in a text field: %s", mustJSON(t, got))
		}

		// The events name the keys, never a value.
		evs, err := store.ListEvents(t.Context(), db, store.EventFilter{TenantID: tn, Type: integrations.EventCredentialsUpdated})
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) != 5 {
			t.Fatalf("%d credentials events, want 5", len(evs))
		}
		var first map[string]any
		if err := json.Unmarshal(evs[0].Data, &first); err != nil {
			t.Fatal(err)
		}
		if got := mustJSON(t, first); got != `{"integrationId":"crm","keys":["account","apiKey","region","sandbox","signing"]}` {
			t.Errorf("first credentials event %s", evs[0].Data)
		}
		for _, ev := range evs {
			for _, v := range []string{secret, signing, "sk_new", "acme"} {
				if strings.Contains(string(ev.Data), v) {
					t.Errorf("event %s carries the value %q", ev.Data, v)
				}
			}
		}
	}, integrations.Migrations)
}

func TestCredentialsSealedAtRest(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		key := newKey()
		s := newService(t, db, key)
		c, tn := scoped(t)
		const secret, account = "sk_live_PLAINTEXT_SECRET_42", "account-in-clear-text"
		values := map[string]any{"account": account, "apiKey": secret, "endpoint": "https://zeta.example/api"}
		raw := func() string {
			t.Helper()
			var sealed string
			if err := db.QueryRow(t.Context(), `SELECT sealed FROM integration_credentials WHERE tenant_id = $1 AND integration_id = $2`,
				tn, "crm").Scan(&sealed); err != nil {
				t.Fatal(err)
			}
			return sealed
		}
		if err := s.SetCredentials(c, "crm", values); err != nil {
			t.Fatal(err)
		}
		first := raw()
		if !strings.HasPrefix(first, "v1:") {
			t.Errorf("the stored column %.40q… is not a sealed value", first)
		}
		for _, plain := range []string{secret, account, "zeta.example", "apiKey", "PLAINTEXT"} {
			if strings.Contains(first, plain) {
				t.Errorf("the stored column holds %q in clear: %s", plain, first)
			}
		}
		// A fresh nonce each time: the same values seal differently.
		if err := s.SetCredentials(c, "crm", values); err != nil {
			t.Fatal(err)
		}
		if second := raw(); second == first {
			t.Error("sealing the same credentials twice stored the same text")
		}
		if got, err := s.Values(t.Context(), tn, "crm"); err != nil || got["apiKey"] != secret {
			t.Errorf("Values = %v, %v", got, err)
		}
		// Another Service with the same key opens them; one with another
		// key cannot, and says so rather than answering "none".
		if got, err := newService(t, db, key).Values(t.Context(), tn, "crm"); err != nil || got["apiKey"] != secret {
			t.Errorf("the same key: %v, %v", got, err)
		}
		other := newService(t, db, newKey())
		if _, err := other.Values(t.Context(), tn, "crm"); err == nil || errors.Is(err, store.ErrNotFound) {
			t.Errorf("another key: %v, want an error other than not found", err)
		}
		if _, _, err := other.Credentials(c, "crm"); err == nil {
			t.Error("Credentials with another key: no error")
		}
		if _, err := other.Get(c, "crm"); err == nil {
			t.Error("Get with another key: no error")
		}
	}, integrations.Migrations)
}

func TestLogs(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		s := newService(t, db, newKey())
		c, _ := scoped(t)
		log := func(e integrations.LogEntry) *integrations.LogEntry {
			t.Helper()
			if err := s.Log(c, e); err != nil {
				t.Fatalf("Log(%.80s): %v", e.Message, err)
			}
			items, _, err := s.Logs(c, integrations.LogFilter{Limit: 1})
			if err != nil || len(items) != 1 {
				t.Fatalf("Logs after Log: %v, %v", items, err)
			}
			if items[0].IntegrationID != e.IntegrationID || items[0].Level != e.Level || items[0].CreatedAt.IsZero() || items[0].ID == "" {
				t.Fatalf("the newest entry is %+v", items[0])
			}
			return items[0]
		}
		for _, bad := range []integrations.LogEntry{
			{Level: integrations.LevelInfo, Message: "m"},
			{IntegrationID: "crm", Message: "m"},
			{IntegrationID: "crm", Level: "debug", Message: "m"},
			{IntegrationID: "crm", Level: integrations.LevelInfo},
		} {
			if err := s.Log(c, bad); err == nil {
				t.Errorf("Log(%+v): no error", bad)
			}
		}
		if err := s.Log(t.Context(), integrations.LogEntry{IntegrationID: "crm", Level: integrations.LevelInfo, Message: "m"}); !errors.Is(err, store.ErrNoScope) {
			t.Errorf("Log without a scope: %v", err)
		}

		// The message: cut at 4,000 bytes on a rune boundary, NUL
		// removed, invalid UTF-8 replaced.
		long := "a" + strings.Repeat("é", 2500) // 5,001 bytes; byte 4,000 is inside an é
		got := log(integrations.LogEntry{IntegrationID: "crm", Level: integrations.LevelWarn, Message: long})
		if len(got.Message) > integrations.MaxLogMessage || len(got.Message) < integrations.MaxLogMessage-3 ||
			!utf8.ValidString(got.Message) || !strings.HasPrefix(long, got.Message) {
			t.Errorf("a 5,001-byte message stored as %d bytes (valid UTF-8 %v)", len(got.Message), utf8.ValidString(got.Message))
		}
		exact := strings.Repeat("x", integrations.MaxLogMessage)
		if got := log(integrations.LogEntry{IntegrationID: "crm", Level: integrations.LevelInfo, Message: exact}); got.Message != exact {
			t.Errorf("a message of exactly 4,000 bytes was changed to %d bytes", len(got.Message))
		}
		if got := log(integrations.LogEntry{IntegrationID: "crm", Level: integrations.LevelInfo, Message: "a\x00b\xffc"}); got.Message != "ab\uFFFDc" {
			t.Errorf("message with NUL and a bad byte stored as %q", got.Message)
		}

		// The payload: kept when it is JSON of at most 64 KiB without NUL,
		// else replaced by a note; none stays none.
		note := func(n int) string {
			return `{"bytes":` + itoa(n) + `,"omitted":"payload not JSON or larger than 64 KiB"}`
		}
		big := `{"a":"` + strings.Repeat("x", integrations.MaxLogPayload-8) + `"}` // exactly 64 KiB
		for _, p := range []struct{ name, in, want string }{
			{"JSON", `{"status":502,"body":["x",1]}`, `{"status":502,"body":["x",1]}`},
			{"a JSON string", `"plain"`, `"plain"`},
			{"not JSON", `<html>502</html>`, note(16)},
			{"cut JSON", `{"a":`, note(5)},
			{"NUL inside", `{"a":"x\u0000y"}`, note(16)},
			{"exactly 64 KiB", big, big},
			{"one byte over", big + " ", note(integrations.MaxLogPayload + 1)},
		} {
			got := log(integrations.LogEntry{IntegrationID: "crm", Level: integrations.LevelError, Message: p.name, Payload: json.RawMessage(p.in)})
			if string(got.Payload) != p.want {
				t.Errorf("payload %s stored as %.120s, want %.120s", p.name, got.Payload, p.want)
			}
		}
		if got := log(integrations.LogEntry{IntegrationID: "crm", Level: integrations.LevelInfo, Message: "no payload"}); got.Payload != nil {
			t.Errorf("no payload stored as %q", got.Payload)
		}

		// Filters refused.
		for _, f := range []struct {
			f     integrations.LogFilter
			field string
		}{
			{integrations.LogFilter{Level: "debug"}, "level"},
			{integrations.LogFilter{IntegrationID: "a\x00"}, "integrationId"},
			{integrations.LogFilter{RunID: "\x00"}, "runId"},
			{integrations.LogFilter{EntityType: "\xff"}, "entityType"},
			{integrations.LogFilter{EntityID: "x\x00"}, "entityId"},
		} {
			f.f.Limit = 10
			if _, _, err := s.Logs(c, f.f); !hasFields(err, f.field) {
				t.Errorf("Logs(%+v): %v, want a validation error naming %s", f.f, err, f.field)
			}
		}
		items, total, err := s.Logs(c, integrations.LogFilter{IntegrationID: "nope", Limit: 10})
		if err != nil || items == nil || len(items) != 0 || total != 0 {
			t.Errorf("Logs of no entries: %#v, %d, %v; want an empty slice", items, total, err)
		}
		items, total, _ = s.Logs(c, integrations.LogFilter{Level: integrations.LevelError, Limit: 100})
		if total != 7 || len(items) != 7 || items[0].Message != "one byte over" || items[6].Message != "JSON" {
			t.Errorf("error entries: %d (total %d), newest %q", len(items), total, items[0].Message)
		}

		// LogTx writes in the caller's transaction.
		rollback := errors.New("rollback")
		err = db.Tx(c, func(tx *store.Tx) error {
			if err := s.LogTx(c, tx, integrations.LogEntry{IntegrationID: "rolled", Level: integrations.LevelInfo, Message: "m"}); err != nil {
				return err
			}
			return rollback
		})
		if !errors.Is(err, rollback) {
			t.Fatal(err)
		}
		if _, total, _ := s.Logs(c, integrations.LogFilter{IntegrationID: "rolled", Limit: 10}); total != 0 {
			t.Error("an entry logged in a rolled-back transaction persists")
		}
	}, integrations.Migrations)
}

func itoa(n int) string { return strconv.Itoa(n) }

// The fields a log entry takes as given (code, run and entity) may come
// from a provider too: logging never fails on what a provider sent.
func TestLogProviderFields(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		s := newService(t, db, newKey())
		c, _ := scoped(t)
		bad := "E\x00\xff"
		err := s.Log(c, integrations.LogEntry{IntegrationID: "crm", Level: integrations.LevelError, Message: "provider error",
			Code: &bad, RunID: &bad, EntityType: &bad, EntityID: &bad})
		if err != nil {
			t.Fatalf("Log with NUL and invalid UTF-8 in code, runId, entityType and entityId: %v", err)
		}
		items, _, err := s.Logs(c, integrations.LogFilter{Limit: 1})
		if err != nil || len(items) != 1 {
			t.Fatalf("Logs: %v, %v", items, err)
		}
		for _, p := range []*string{items[0].Code, items[0].RunID, items[0].EntityType, items[0].EntityID} {
			if p == nil || !store.Storable(*p) {
				t.Errorf("a provider field read back as %q, want text without NUL, valid UTF-8", derefOr(p))
			}
		}
	}, integrations.Migrations)
}

func derefOr(p *string) string {
	if p == nil {
		return "<nil>"
	}
	return *p
}

func TestTwoTenants(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		s := newService(t, db, newKey())
		a, ta := scoped(t)
		b, tb := scoped(t)
		off := false
		if _, err := s.SetState(a, "crm", integrations.StateInput{IsEnabled: &off}); err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.SetVersion(a, "erp", "v2"); err != nil {
			t.Fatal(err)
		}
		if err := s.SetCredentials(a, "crm", map[string]any{"account": "a", "apiKey": "sk_a"}); err != nil {
			t.Fatal(err)
		}
		if err := s.Log(a, integrations.LogEntry{IntegrationID: "crm", Level: integrations.LevelInfo, Message: "a's"}); err != nil {
			t.Fatal(err)
		}

		d, _ := s.Get(b, "crm")
		if !d.State.IsEnabled || d.HasCredentials || d.State.UpdatedAt != nil {
			t.Errorf("tenant B sees A's state or credentials: %+v", d)
		}
		if d, _ := s.Get(b, "erp"); *d.State.APIVersion != "v1" {
			t.Errorf("tenant B's erp version %s, want the default v1", *d.State.APIVersion)
		}
		if on, _ := s.Enabled(t.Context(), tb, "crm"); !on {
			t.Error("Enabled for B follows A")
		}
		if _, vals, _ := s.Credentials(b, "crm"); len(vals) != 0 {
			t.Errorf("tenant B reads A's credentials: %v", vals)
		}
		if _, err := s.Values(t.Context(), tb, "crm"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("Values for B: %v", err)
		}
		items, _ := s.List(b, integrations.ListFilter{})
		for _, it := range items {
			if !it.IsEnabled || it.HasCredentials {
				t.Errorf("tenant B's list: %+v", it)
			}
		}
		if logs, total, _ := s.Logs(b, integrations.LogFilter{Limit: 10}); len(logs) != 0 || total != 0 {
			t.Errorf("tenant B sees A's log: %d", total)
		}
		// B's own changes leave A's alone.
		if err := s.SetCredentials(b, "crm", map[string]any{"account": "b", "apiKey": integrations.Mask}); !hasFields(err, "credentials.apiKey") {
			t.Errorf("B sending the mask for A's stored secret: %v, want credentials.apiKey required (A's value is not B's)", err)
		}
		if err := s.SetCredentials(b, "crm", map[string]any{"account": "b", "apiKey": "sk_b"}); err != nil {
			t.Fatal(err)
		}
		if got, _ := s.Values(t.Context(), ta, "crm"); got["apiKey"] != "sk_a" || got["account"] != "a" {
			t.Errorf("A's credentials after B's write: %v", got)
		}
		if d, _ := s.Get(a, "crm"); d.State.IsEnabled {
			t.Error("A's crm is enabled again")
		}
		evs, _ := store.ListEvents(t.Context(), db, store.EventFilter{TenantID: tb})
		if len(evs) != 1 || evs[0].Type != integrations.EventCredentialsUpdated {
			t.Errorf("tenant B's events: %v", evs)
		}
	}, integrations.Migrations)
}

// TestValuesSeeChangesAtOnce: Values caches the credentials in clear, yet
// a change committed before a call is what the call returns, through
// the Service that made it and, where several processes may share the
// database (PostgreSQL), through another Service over it; and the map
// Values returns is the caller's to change.
func TestValuesSeeChangesAtOnce(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		key := newKey()
		s := newService(t, db, key)
		services := []*integrations.Service{s}
		if db.Dialect().Notifies() {
			services = append(services, newService(t, db, key)) // another process
		}
		c, tn := scoped(t)
		for _, r := range services {
			if _, err := r.Values(t.Context(), tn, "crm"); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("Values before any: %v, want ErrNotFound", err)
			}
		}
		for i := range 3 {
			account := fmt.Sprintf("acme-%d", i)
			if err := s.SetCredentials(c, "crm", map[string]any{"account": account, "apiKey": "sk_1"}); err != nil {
				t.Fatal(err)
			}
			for j, r := range services {
				got, err := r.Values(t.Context(), tn, "crm")
				if err != nil {
					t.Fatal(err)
				}
				if got["account"] != account {
					t.Fatalf("service %d after change %d: account %v, want %s", j, i, got["account"], account)
				}
				got["account"] = "changed by the caller"
			}
		}
	}, integrations.Migrations)
}
