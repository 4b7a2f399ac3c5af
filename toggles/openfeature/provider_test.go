package openfeature_test

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"

	of "github.com/open-feature/go-sdk/openfeature"
	"github.com/open-feature/go-sdk/openfeature/isolated"

	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
	"github.com/tenantkit/tenantkit/toggles"
	tkopenfeature "github.com/tenantkit/tenantkit/toggles/openfeature"
)

// fixture is a real Service on SQLite with one toggle of each type and
// overrides for tenant-a, and an OpenFeature client of an isolated API
// whose provider answers from it.
type fixture struct {
	svc    *toggles.Service
	client *of.Client
	ids    map[string]string // identifier → toggle id
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	ctx := t.Context()
	db := storetest.SQLite(t, toggles.Migrations)
	svc := must(toggles.New(db, toggles.Options{}))
	f := &fixture{svc: svc, ids: map[string]string{}}

	for _, c := range []struct {
		identifier string
		typ        toggles.Type
		def        string
	}{
		{"beta", toggles.Boolean, `false`},
		{"theme", toggles.String, `"light"`},
		{"limit", toggles.Number, `10`},
		{"ratio", toggles.Number, `0.25`},
		{"big", toggles.Number, `9007199254740993`},
		{"thousand", toggles.Number, `1e3`},
		{"three", toggles.Number, `3.0`},
		{"huge", toggles.Number, `1e19`},
		{"config", toggles.JSON, `{"a":1,"b":[true,"x"]}`},
		{"plain-json", toggles.JSON, `"just a string"`},
		{"null-bool", toggles.Boolean, `null`},
		{"null-string", toggles.String, `null`},
		{"null-number", toggles.Number, `null`},
		{"null-json", toggles.JSON, `null`},
		{"gone", toggles.Boolean, `true`},
	} {
		tg, err := svc.Create(ctx, toggles.CreateInput{Identifier: c.identifier, Name: c.identifier, Type: c.typ,
			DefaultValue: json.RawMessage(c.def)})
		if err != nil {
			t.Fatalf("create %s: %v", c.identifier, err)
		}
		f.ids[c.identifier] = tg.ID
	}
	if err := svc.Delete(ctx, f.ids["gone"]); err != nil {
		t.Fatal(err)
	}

	f.override(t, "tenant-a", "beta", `true`)
	f.override(t, "tenant-a", "theme", `"dark"`)
	f.override(t, "tenant-a", "limit", `2.5`)
	f.override(t, "tenant-a", "config", `{"a":2,"nested":{"k":null}}`)
	f.override(t, "tenant-a", "null-bool", `true`)
	f.override(t, "tenant-c", "theme", `null`)
	f.override(t, "tenant-c", "beta", `null`)

	api := isolated.NewAPI()
	t.Cleanup(func() { _ = api.Shutdown(context.Background()) })
	if err := api.SetProviderAndWait(ctx, tkopenfeature.NewProvider(svc)); err != nil {
		t.Fatal(err)
	}
	f.client = api.NewClient()
	return f
}

func (f *fixture) override(t *testing.T, tenant, identifier, value string) {
	t.Helper()
	ctx := store.WithScope(t.Context(), store.Scope{TenantID: tenant})
	if _, err := f.svc.SetOverride(ctx, f.ids[identifier], true, json.RawMessage(value)); err != nil {
		t.Fatalf("override %s for %s: %v", identifier, tenant, err)
	}
}

// byKey is an evaluation context naming the tenant by targeting key,
// byAttr one naming it by the "tenantId" attribute.
func byKey(tenant string) of.EvaluationContext { return of.NewEvaluationContext(tenant, nil) }

func byAttr(tenant string) of.EvaluationContext {
	return of.NewTargetlessEvaluationContext(map[string]any{"tenantId": tenant})
}

// want is the part of an evaluation's details a case checks.
type want struct {
	value   any
	reason  of.Reason
	variant string
	code    of.ErrorCode // "" for success
	meta    of.FlagMetadata
}

func check[T any](t *testing.T, d of.GenericEvaluationDetails[T], err error, w want) {
	t.Helper()
	if !reflect.DeepEqual(any(d.Value), w.value) {
		t.Errorf("value = %#v, want %#v", d.Value, w.value)
	}
	if d.Reason != w.reason {
		t.Errorf("reason = %q, want %q", d.Reason, w.reason)
	}
	if d.Variant != w.variant {
		t.Errorf("variant = %q, want %q", d.Variant, w.variant)
	}
	if d.ErrorCode != w.code {
		t.Errorf("error code = %q, want %q (message %q)", d.ErrorCode, w.code, d.ErrorMessage)
	}
	if (err != nil) != (w.code != "") {
		t.Errorf("err = %v, want an error: %v", err, w.code != "")
	}
	if w.meta != nil && !reflect.DeepEqual(d.FlagMetadata, w.meta) {
		t.Errorf("flag metadata = %v, want %v", d.FlagMetadata, w.meta)
	}
}

func meta(f *fixture, identifier, tenant, source string) of.FlagMetadata {
	return of.FlagMetadata{"toggleId": f.ids[identifier], "tenantId": tenant, "source": source}
}

func TestTenantOverrideAndDefault(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()

	t.Run("boolean: tenant-a by targeting key gets its override", func(t *testing.T) {
		d, err := f.client.BooleanValueDetails(ctx, "beta", false, byKey("tenant-a"))
		check(t, d, err, want{true, of.TargetingMatchReason, "override", "", meta(f, "beta", "tenant-a", "override")})
	})
	t.Run("boolean: tenant-b by attribute gets the default", func(t *testing.T) {
		d, err := f.client.BooleanValueDetails(ctx, "beta", true, byAttr("tenant-b"))
		check(t, d, err, want{false, of.DefaultReason, "default", "", meta(f, "beta", "tenant-b", "default")})
	})
	t.Run("string", func(t *testing.T) {
		d, err := f.client.StringValueDetails(ctx, "theme", "x", byKey("tenant-a"))
		check(t, d, err, want{"dark", of.TargetingMatchReason, "override", "", meta(f, "theme", "tenant-a", "override")})
		d, err = f.client.StringValueDetails(ctx, "theme", "x", byAttr("tenant-b"))
		check(t, d, err, want{"light", of.DefaultReason, "default", "", meta(f, "theme", "tenant-b", "default")})
	})
	t.Run("float", func(t *testing.T) {
		d, err := f.client.FloatValueDetails(ctx, "limit", -1, byKey("tenant-a"))
		check(t, d, err, want{2.5, of.TargetingMatchReason, "override", "", nil})
		d, err = f.client.FloatValueDetails(ctx, "limit", -1, byKey("tenant-b"))
		check(t, d, err, want{10.0, of.DefaultReason, "default", "", nil})
		d, err = f.client.FloatValueDetails(ctx, "ratio", -1, byKey("tenant-b"))
		check(t, d, err, want{0.25, of.DefaultReason, "default", "", nil})
	})
	t.Run("object", func(t *testing.T) {
		d, err := f.client.ObjectValueDetails(ctx, "config", nil, byKey("tenant-a"))
		check(t, d, err, want{map[string]any{"a": 2.0, "nested": map[string]any{"k": nil}}, of.TargetingMatchReason, "override", "",
			meta(f, "config", "tenant-a", "override")})
		d, err = f.client.ObjectValueDetails(ctx, "config", nil, byAttr("tenant-b"))
		check(t, d, err, want{map[string]any{"a": 1.0, "b": []any{true, "x"}}, of.DefaultReason, "default", "", nil})
		d, err = f.client.ObjectValueDetails(ctx, "plain-json", nil, byAttr("tenant-b"))
		check(t, d, err, want{"just a string", of.DefaultReason, "default", "", nil})
	})
	t.Run("the plain accessors agree", func(t *testing.T) {
		if got := f.client.Boolean(ctx, "beta", false, byKey("tenant-a")); !got {
			t.Error("Boolean for tenant-a = false")
		}
		if got := f.client.String(ctx, "theme", "x", byAttr("tenant-b")); got != "light" {
			t.Errorf("String for tenant-b = %q", got)
		}
	})
	t.Run("a change shows at once", func(t *testing.T) {
		f.override(t, "tenant-b", "theme", `"blue"`)
		d, err := f.client.StringValueDetails(ctx, "theme", "x", byAttr("tenant-b"))
		check(t, d, err, want{"blue", of.TargetingMatchReason, "override", "", nil})
	})
}

func TestIntAndFloat(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	b := byKey("tenant-b")

	for _, c := range []struct {
		flag   string
		tenant string
		want   want
	}{
		{"limit", "tenant-b", want{int64(10), of.DefaultReason, "default", "", meta(f, "limit", "tenant-b", "default")}},
		{"big", "tenant-b", want{int64(9007199254740993), of.DefaultReason, "default", "", nil}},
		{"thousand", "tenant-b", want{int64(1000), of.DefaultReason, "default", "", nil}},
		{"three", "tenant-b", want{int64(3), of.DefaultReason, "default", "", nil}},
		// 2.5 and 0.25 are numbers but not integers; 1e19 is beyond int64.
		{"limit", "tenant-a", want{int64(-1), of.ErrorReason, "", of.TypeMismatchCode, meta(f, "limit", "tenant-a", "override")}},
		{"ratio", "tenant-b", want{int64(-1), of.ErrorReason, "", of.TypeMismatchCode, nil}},
		{"huge", "tenant-b", want{int64(-1), of.ErrorReason, "", of.TypeMismatchCode, nil}},
	} {
		t.Run(c.flag+"/"+c.tenant, func(t *testing.T) {
			d, err := f.client.IntValueDetails(ctx, c.flag, -1, byKey(c.tenant))
			check(t, d, err, c.want)
		})
	}

	d, err := f.client.FloatValueDetails(ctx, "huge", -1, b)
	check(t, d, err, want{1e19, of.DefaultReason, "default", "", nil})
	d, err = f.client.FloatValueDetails(ctx, "thousand", -1, b)
	check(t, d, err, want{1000.0, of.DefaultReason, "default", "", nil})
}

func TestErrors(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	a := byKey("tenant-a")

	t.Run("unknown flag", func(t *testing.T) {
		d, err := f.client.BooleanValueDetails(ctx, "no-such-toggle", true, a)
		check(t, d, err, want{true, of.ErrorReason, "", of.FlagNotFoundCode, of.FlagMetadata{}})
		s, err := f.client.StringValueDetails(ctx, "no-such-toggle", "fallback", a)
		check(t, s, err, want{"fallback", of.ErrorReason, "", of.FlagNotFoundCode, nil})
	})
	t.Run("deleted flag", func(t *testing.T) {
		d, err := f.client.BooleanValueDetails(ctx, "gone", false, a)
		check(t, d, err, want{false, of.ErrorReason, "", of.FlagNotFoundCode, nil})
	})
	t.Run("wrong type", func(t *testing.T) {
		b, err := f.client.BooleanValueDetails(ctx, "theme", false, a)
		check(t, b, err, want{false, of.ErrorReason, "", of.TypeMismatchCode, nil})
		s, err := f.client.StringValueDetails(ctx, "beta", "fallback", a)
		check(t, s, err, want{"fallback", of.ErrorReason, "", of.TypeMismatchCode, nil})
		fl, err := f.client.FloatValueDetails(ctx, "theme", 1.5, a)
		check(t, fl, err, want{1.5, of.ErrorReason, "", of.TypeMismatchCode, nil})
		i, err := f.client.IntValueDetails(ctx, "config", 7, a)
		check(t, i, err, want{int64(7), of.ErrorReason, "", of.TypeMismatchCode, nil})
		o, err := f.client.ObjectValueDetails(ctx, "beta", "dflt", a)
		check(t, o, err, want{"dflt", of.ErrorReason, "", of.TypeMismatchCode, nil})
	})
	t.Run("no tenant", func(t *testing.T) {
		d, err := f.client.BooleanValueDetails(ctx, "beta", true, of.EvaluationContext{})
		check(t, d, err, want{true, of.ErrorReason, "", of.TargetingKeyMissingCode, nil})
		s, err := f.client.StringValueDetails(ctx, "theme", "fallback",
			of.NewTargetlessEvaluationContext(map[string]any{"tenantId": "", "other": "x"}))
		check(t, s, err, want{"fallback", of.ErrorReason, "", of.TargetingKeyMissingCode, nil})
	})
	t.Run("tenantId not a string", func(t *testing.T) {
		d, err := f.client.BooleanValueDetails(ctx, "beta", true,
			of.NewTargetlessEvaluationContext(map[string]any{"tenantId": 42}))
		check(t, d, err, want{true, of.ErrorReason, "", of.InvalidContextCode, nil})
	})
}

func TestTenantSources(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()

	t.Run("the attribute wins over the targeting key", func(t *testing.T) {
		ec := of.NewEvaluationContext("user-17", map[string]any{"tenantId": "tenant-a"})
		d, err := f.client.BooleanValueDetails(ctx, "beta", false, ec)
		check(t, d, err, want{true, of.TargetingMatchReason, "override", "", meta(f, "beta", "tenant-a", "override")})
	})
	t.Run("the scope in ctx is the last resort", func(t *testing.T) {
		sctx := store.WithScope(ctx, store.Scope{TenantID: "tenant-a"})
		d, err := f.client.BooleanValueDetails(sctx, "beta", false, of.EvaluationContext{})
		check(t, d, err, want{true, of.TargetingMatchReason, "override", "", meta(f, "beta", "tenant-a", "override")})
		d, err = f.client.BooleanValueDetails(sctx, "beta", true, byKey("tenant-b"))
		check(t, d, err, want{false, of.DefaultReason, "default", "", meta(f, "beta", "tenant-b", "default")})
	})
	t.Run("a transaction context carries the tenant", func(t *testing.T) {
		tctx := of.WithTransactionContext(ctx, byKey("tenant-a"))
		if got := f.client.String(tctx, "theme", "x", of.EvaluationContext{}); got != "dark" {
			t.Errorf("theme = %q, want dark", got)
		}
	})
}

func TestNullValues(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	b := byKey("tenant-b")

	t.Run("boolean null is false", func(t *testing.T) {
		d, err := f.client.BooleanValueDetails(ctx, "null-bool", true, b)
		check(t, d, err, want{false, of.DefaultReason, "default", "", meta(f, "null-bool", "tenant-b", "default")})
		d, err = f.client.BooleanValueDetails(ctx, "beta", true, byKey("tenant-c")) // null override
		check(t, d, err, want{false, of.TargetingMatchReason, "override", "", meta(f, "beta", "tenant-c", "override")})
		d, err = f.client.BooleanValueDetails(ctx, "null-bool", false, byKey("tenant-a"))
		check(t, d, err, want{true, of.TargetingMatchReason, "override", "", nil})
	})
	t.Run("other types give the caller's default", func(t *testing.T) {
		s, err := f.client.StringValueDetails(ctx, "null-string", "fallback", b)
		check(t, s, err, want{"fallback", of.DefaultReason, "", "", meta(f, "null-string", "tenant-b", "default")})
		s, err = f.client.StringValueDetails(ctx, "theme", "fallback", byKey("tenant-c")) // null override
		check(t, s, err, want{"fallback", of.DefaultReason, "", "", meta(f, "theme", "tenant-c", "override")})
		fl, err := f.client.FloatValueDetails(ctx, "null-number", 4.5, b)
		check(t, fl, err, want{4.5, of.DefaultReason, "", "", nil})
		i, err := f.client.IntValueDetails(ctx, "null-number", 9, b)
		check(t, i, err, want{int64(9), of.DefaultReason, "", "", nil})
		o, err := f.client.ObjectValueDetails(ctx, "null-json", map[string]any{"d": true}, b)
		check(t, o, err, want{map[string]any{"d": true}, of.DefaultReason, "", "", meta(f, "null-json", "tenant-b", "default")})
	})
}

// TestGlobalAPI goes through the package-level functions of the doc
// comment, on a domain of its own so it leaves the default provider alone.
func TestGlobalAPI(t *testing.T) {
	f := newFixture(t)
	const domain = "tenantkit-provider-test"
	if err := of.SetNamedProviderAndWait(domain, tkopenfeature.NewProvider(f.svc)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = of.SetNamedProviderAndWait(domain, of.NoopProvider{}) })
	if got := of.NamedProviderMetadata(domain).Name; got != "tenantkit" {
		t.Errorf("provider name = %q, want tenantkit", got)
	}
	client := of.NewClient(domain)
	if got := client.State(); got != of.ReadyState {
		t.Errorf("state = %q, want READY", got)
	}
	if got := client.Boolean(t.Context(), "beta", false, byKey("tenant-a")); !got {
		t.Error("beta for tenant-a = false, want true")
	}
}

func TestMetadataAndHooks(t *testing.T) {
	p := tkopenfeature.NewProvider(nil)
	if got := p.Metadata().Name; got != "tenantkit" {
		t.Errorf("name = %q", got)
	}
	if h := p.Hooks(); len(h) != 0 {
		t.Errorf("hooks = %v", h)
	}
}

// TestConcurrent evaluates from many goroutines while overrides change,
// for the race detector.
func TestConcurrent(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 20 {
			v := `true`
			if i%2 == 0 {
				v = `false`
			}
			dctx := store.WithScope(ctx, store.Scope{TenantID: "tenant-d"})
			if _, err := f.svc.SetOverride(dctx, f.ids["beta"], true, json.RawMessage(v)); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	errs := make(chan error, 8)
	for range 8 {
		go func() {
			var err error
			for range 200 {
				if _, err = f.client.BooleanValueDetails(ctx, "beta", false, byKey("tenant-d")); err != nil {
					break
				}
			}
			errs <- err
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	<-done
}
