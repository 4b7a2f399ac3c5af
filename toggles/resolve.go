package toggles

import (
	"context"
	"encoding/json"

	"github.com/tenantkit/tenantkit/store"
)

// Resolve returns the toggle's effective value for the tenant in ctx, from
// the in-process cache: the tenant's override if it has one, else the
// default. A change made through this Service is visible at once; one made
// by another process on the same database by the first check after the
// poll interval.
func (s *Service) Resolve(ctx context.Context, identifier string) (Resolution, error) {
	c, tenant, err := s.lookup(ctx, identifier)
	if err != nil {
		return Resolution{}, err
	}
	r := Resolution{ToggleID: c.toggle.ID, Identifier: identifier, TenantID: tenant, Type: c.toggle.Type,
		Source: FromDefault, Value: c.def.raw}
	if o := c.overrides[tenant]; o != nil {
		r.Source, r.Value = FromOverride, o.raw
	}
	return r, nil
}

// Bool returns a boolean toggle's value for the tenant in ctx; null is
// false.
func (s *Service) Bool(ctx context.Context, identifier string) (bool, error) {
	v, err := s.typed(ctx, identifier, Boolean)
	if err != nil {
		return false, err
	}
	return v.b, nil
}

// String returns a string toggle's value for the tenant in ctx; null is "".
func (s *Service) String(ctx context.Context, identifier string) (string, error) {
	v, err := s.typed(ctx, identifier, String)
	if err != nil {
		return "", err
	}
	return v.s, nil
}

// Number returns a number toggle's value for the tenant in ctx; null is 0.
func (s *Service) Number(ctx context.Context, identifier string) (float64, error) {
	v, err := s.typed(ctx, identifier, Number)
	if err != nil {
		return 0, err
	}
	return v.n, nil
}

// JSON returns a json toggle's value for the tenant in ctx (null when
// unset). The bytes are shared with the cache: do not modify them.
func (s *Service) JSON(ctx context.Context, identifier string) (json.RawMessage, error) {
	v, err := s.typed(ctx, identifier, JSON)
	if err != nil {
		return nil, err
	}
	return v.raw, nil
}

// Check is Resolve for a caller that asked for a type: a toggle of another
// type gives a *TypeMismatchError.
func (s *Service) Check(ctx context.Context, identifier string, want Type) (Resolution, error) {
	r, err := s.Resolve(ctx, identifier)
	if err == nil && r.Type != want {
		return Resolution{}, &TypeMismatchError{Identifier: identifier, Actual: r.Type, Requested: want}
	}
	return r, err
}

func (s *Service) typed(ctx context.Context, identifier string, want Type) (*cachedValue, error) {
	c, tenant, err := s.lookup(ctx, identifier)
	if err != nil {
		return nil, err
	}
	if c.toggle.Type != want {
		return nil, &TypeMismatchError{Identifier: identifier, Actual: c.toggle.Type, Requested: want}
	}
	if o := c.overrides[tenant]; o != nil {
		return o, nil
	}
	return &c.def, nil
}

func (s *Service) lookup(ctx context.Context, identifier string) (*cachedToggle, string, error) {
	sc, err := store.ScopeFrom(ctx)
	if err != nil {
		return nil, "", err
	}
	snap, err := s.cache.Get(ctx)
	if err != nil { // the first load failed: there are no previous values
		return nil, "", err
	}
	c := snap.byIdentifier[identifier]
	if c == nil {
		return nil, "", &MissingToggleError{Identifier: identifier}
	}
	return c, sc.TenantID, nil
}
