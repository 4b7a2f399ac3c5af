package openfeature

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"

	of "github.com/open-feature/go-sdk/openfeature"

	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/toggles"
)

// Name is the provider's name in its Metadata.
const Name = "tenantkit"

// TenantAttribute is the evaluation context attribute naming the tenant.
const TenantAttribute = "tenantId"

// The flag metadata keys of an answer that found the toggle.
const (
	MetadataToggleID = "toggleId"
	MetadataTenantID = "tenantId"
	MetadataSource   = "source"
)

// Provider is an OpenFeature provider that resolves tenantkit toggles for
// the tenant of the evaluation context. It is safe for concurrent use.
type Provider struct {
	svc *toggles.Service
}

var _ of.FeatureProvider = (*Provider)(nil)

// NewProvider returns a provider answering from svc, which must not be
// nil and which the caller keeps closing. To make it the application's
// provider:
//
//	openfeature.SetProviderAndWait(tkopenfeature.NewProvider(kit.Toggles))
func NewProvider(svc *toggles.Service) *Provider {
	return &Provider{svc: svc}
}

// Metadata names the provider "tenantkit".
func (p *Provider) Metadata() of.Metadata { return of.Metadata{Name: Name} }

// Hooks returns none.
func (p *Provider) Hooks() []of.Hook { return nil }

// BooleanEvaluation resolves a boolean toggle; null is false.
func (p *Provider) BooleanEvaluation(ctx context.Context, flag string, defaultValue bool, flatCtx of.FlattenedContext) of.BoolResolutionDetail {
	v, d := evaluate(ctx, p.svc, flag, toggles.Boolean, flatCtx, func(raw json.RawMessage) (bool, bool, error) {
		if isNull(raw) {
			return false, true, nil // the Service's rule: null is false
		}
		var b bool
		err := json.Unmarshal(raw, &b)
		return b, true, err
	})
	return result(defaultValue, v, d)
}

// StringEvaluation resolves a string toggle; null gives defaultValue.
func (p *Provider) StringEvaluation(ctx context.Context, flag string, defaultValue string, flatCtx of.FlattenedContext) of.StringResolutionDetail {
	v, d := evaluate(ctx, p.svc, flag, toggles.String, flatCtx, func(raw json.RawMessage) (string, bool, error) {
		if isNull(raw) {
			return "", false, nil
		}
		var s string
		err := json.Unmarshal(raw, &s)
		return s, true, err
	})
	return result(defaultValue, v, d)
}

// FloatEvaluation resolves a number toggle; null gives defaultValue.
func (p *Provider) FloatEvaluation(ctx context.Context, flag string, defaultValue float64, flatCtx of.FlattenedContext) of.FloatResolutionDetail {
	v, d := evaluate(ctx, p.svc, flag, toggles.Number, flatCtx, func(raw json.RawMessage) (float64, bool, error) {
		if isNull(raw) {
			return 0, false, nil
		}
		f, err := strconv.ParseFloat(string(raw), 64)
		return f, true, err
	})
	return result(defaultValue, v, d)
}

// errNotWhole marks a number toggle read as Int whose value is not a whole
// number within int64.
var errNotWhole = errors.New("not a whole number within int64")

// IntEvaluation resolves a number toggle whose value is a whole number
// within int64 (another number is a TYPE_MISMATCH); null gives
// defaultValue.
func (p *Provider) IntEvaluation(ctx context.Context, flag string, defaultValue int64, flatCtx of.FlattenedContext) of.IntResolutionDetail {
	v, d := evaluate(ctx, p.svc, flag, toggles.Number, flatCtx, func(raw json.RawMessage) (int64, bool, error) {
		if isNull(raw) {
			return 0, false, nil
		}
		return wholeNumber(string(raw))
	})
	return result(defaultValue, v, d)
}

// ObjectEvaluation resolves a json toggle, decoded with encoding/json into
// an any (objects are map[string]any, arrays []any, numbers float64); null
// gives defaultValue.
func (p *Provider) ObjectEvaluation(ctx context.Context, flag string, defaultValue any, flatCtx of.FlattenedContext) of.InterfaceResolutionDetail {
	v, d := evaluate(ctx, p.svc, flag, toggles.JSON, flatCtx, func(raw json.RawMessage) (any, bool, error) {
		if isNull(raw) {
			return nil, false, nil
		}
		var x any
		err := json.Unmarshal(raw, &x)
		return x, true, err
	})
	return result(defaultValue, v, d)
}

// wholeNumber reads a JSON number as an int64: exactly when it is an
// integer literal, else through float64 when that is whole and in range.
func wholeNumber(s string) (int64, bool, error) {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return n, true, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if errors.Is(err, strconv.ErrRange) {
		return 0, true, errNotWhole
	}
	if err != nil {
		return 0, true, err
	}
	// float64(math.MaxInt64) rounds up to 2^63, which is out of range.
	if f != math.Trunc(f) || f < math.MinInt64 || f >= math.MaxInt64 {
		return 0, true, errNotWhole
	}
	return int64(f), true, nil
}

func isNull(raw json.RawMessage) bool { return len(raw) == 0 || string(raw) == "null" }

// outcome is an evaluation's detail; ok reports that value should be
// answered (false: the caller's default).
type outcome struct {
	ok     bool
	detail of.ProviderResolutionDetail
}

func result[T any](defaultValue, value T, o outcome) of.GenericResolutionDetail[T] {
	if !o.ok {
		value = defaultValue
	}
	return of.GenericResolutionDetail[T]{Value: value, ProviderResolutionDetail: o.detail}
}

// evaluate resolves flag as type want for the tenant of flatCtx and
// decodes its value with decode, which reports false for a value that
// leaves the caller's default in place (null).
func evaluate[T any](ctx context.Context, svc *toggles.Service, flag string, want toggles.Type,
	flatCtx of.FlattenedContext, decode func(json.RawMessage) (T, bool, error)) (T, outcome) {
	var zero T
	tenant, rerr := tenantOf(ctx, flatCtx)
	if rerr != nil {
		return zero, failed(*rerr)
	}
	r, err := svc.Check(store.WithScope(ctx, store.Scope{TenantID: tenant}), flag, want)
	if err != nil {
		return zero, failed(resolutionError(flag, err))
	}
	meta := of.FlagMetadata{MetadataToggleID: r.ToggleID, MetadataTenantID: r.TenantID, MetadataSource: string(r.Source)}
	v, ok, err := decode(r.Value)
	switch {
	case errors.Is(err, errNotWhole):
		return zero, failedWith(of.NewTypeMismatchResolutionError(
			fmt.Sprintf("toggle %q has value %s, which is not an integer", flag, r.Value)), meta)
	case err != nil:
		return zero, failedWith(of.NewParseErrorResolutionError(
			fmt.Sprintf("toggle %q: cannot decode its %s value", flag, r.Type), err), meta)
	case !ok:
		return zero, outcome{detail: of.ProviderResolutionDetail{Reason: of.DefaultReason, FlagMetadata: meta}}
	}
	reason := of.DefaultReason
	if r.Source == toggles.FromOverride {
		reason = of.TargetingMatchReason
	}
	return v, outcome{ok: true, detail: of.ProviderResolutionDetail{Reason: reason, Variant: string(r.Source), FlagMetadata: meta}}
}

func failed(e of.ResolutionError) outcome { return failedWith(e, nil) }

func failedWith(e of.ResolutionError, meta of.FlagMetadata) outcome {
	return outcome{detail: of.ProviderResolutionDetail{ResolutionError: e, Reason: of.ErrorReason, FlagMetadata: meta}}
}

// tenantOf finds the tenant: the "tenantId" attribute, else the targeting
// key, else the scope in ctx.
func tenantOf(ctx context.Context, flatCtx of.FlattenedContext) (string, *of.ResolutionError) {
	if v, present := flatCtx[TenantAttribute]; present && v != nil {
		s, ok := v.(string)
		if !ok {
			e := of.NewInvalidContextResolutionError(fmt.Sprintf("evaluation context attribute %q must be a string, not %T", TenantAttribute, v))
			return "", &e
		}
		if s != "" {
			return s, nil
		}
	}
	if s, _ := flatCtx[of.TargetingKey].(string); s != "" {
		return s, nil
	}
	if sc, err := store.ScopeFrom(ctx); err == nil {
		return sc.TenantID, nil
	}
	e := of.NewTargetingKeyMissingResolutionError(fmt.Sprintf("no tenant: set the targeting key or the %q attribute of the evaluation context", TenantAttribute))
	return "", &e
}

func resolutionError(flag string, err error) of.ResolutionError {
	var mismatch *toggles.TypeMismatchError
	switch {
	case errors.Is(err, toggles.ErrMissingToggle):
		return of.NewFlagNotFoundResolutionError(fmt.Sprintf("toggle %q not found", flag))
	case errors.As(err, &mismatch):
		return of.NewTypeMismatchResolutionError(fmt.Sprintf("toggle %q has type %q, not %q", flag, mismatch.Actual, mismatch.Requested))
	case errors.Is(err, store.ErrNoScope):
		return of.NewTargetingKeyMissingResolutionError("no tenant")
	default:
		return of.NewGeneralResolutionError(fmt.Sprintf("toggle %q: %v", flag, err), err)
	}
}
