package integrations

import (
	"cmp"
	"context"
	"embed"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/tenantkit/tenantkit/internal/secretbox"
	"github.com/tenantkit/tenantkit/internal/vcache"
	"github.com/tenantkit/tenantkit/store"
)

//go:embed migrations
var migrationsFS embed.FS

// Migrations creates the area's tables. tenantkit.Open applies it; a host
// using the package alone applies it with db.Migrate.
var Migrations = store.Migrations{Line: "integrations", FS: migrationsFS, Dir: "migrations"}

// Options configures a Service.
type Options struct {
	// SecretKey seals stored credentials (at least 32 bytes; the Kit
	// passes its own). Required.
	SecretKey []byte
	// Store stores states, credentials and logs (default NewSQLStore()).
	Store Store
}

// Service is the integration catalogue and each tenant's state,
// credentials and logs.
type Service struct {
	db       *store.DB
	store    Store
	box      *secretbox.Box
	registry registry
	// creds caches tenants' credentials in clear (Values), kept fresh by
	// credentialsCounter.
	creds *vcache.Cache[credentialsKey, cachedCredentials]
	// acks registers this Service among the processes a credentials
	// change waits for (doc.go, "Credentials acknowledged"); nil unless
	// other processes may share the database.
	acks *vcache.Acks
}

// New returns the service over db, whose migrations include Migrations.
func New(db *store.DB, opts Options) (*Service, error) {
	box, err := secretbox.New(opts.SecretKey, "integrations.credentials")
	if err != nil {
		return nil, err
	}
	s := &Service{db: db, store: opts.Store, box: box}
	if db != nil { // nil: a Service for its definitions alone (tests)
		s.creds = vcache.New[credentialsKey, cachedCredentials](db, credentialsCounter, credentialsCheck, maxCachedCredentials)
		if db.Dialect().Notifies() {
			s.acks = vcache.NewAcks(db, serversTable, credentialsCounter, s.creds.Invalidate, nil, "integrations")
		}
	}
	if s.store == nil {
		s.store = NewSQLStore()
	}
	return s, nil
}

// Errors a caller can test with errors.Is.
var (
	// ErrNotFound: no integration is registered with the id.
	ErrNotFound = store.Errorf(store.ErrNotFound, "Integration not found")
	// ErrNotVersioned: the integration declares no API versions.
	ErrNotVersioned = store.Errorf(store.ErrInvalid, "This integration is not versioned")
	// ErrUnknownVersion: the integration has no API version with the id.
	ErrUnknownVersion = store.Errorf(store.ErrInvalid, "Unknown integration version")
	// ErrNoStateChange: a state change named neither field.
	ErrNoStateChange = store.Errorf(store.ErrInvalid, "Invalid state payload: give isEnabled, reauthRequired or notifyAdminsOnFailure")
)

// ListFilter selects catalogue rows; zero fields select all.
type ListFilter struct {
	// Q matches the id, title or description, case-insensitively.
	Q string
	// Category, when set, selects one category.
	Category string
	// IsEnabled, when set, selects by the tenant's state.
	IsEnabled *bool
}

// ListItem is a catalogue row as the caller's tenant sees it.
type ListItem struct {
	ID             string  `json:"id"`
	Title          string  `json:"title"`
	Category       string  `json:"category"`    // see Definition.Category
	Hub            string  `json:"hub"`         // see Definition.Hub
	ProviderKey    string  `json:"providerKey"` // see Definition.ProviderKey
	BundleID       string  `json:"bundleId"`
	HasCredentials bool    `json:"hasCredentials"` // whether the tenant stored credentials
	IsEnabled      bool    `json:"isEnabled"`      // the tenant's state
	APIVersion     *string `json:"apiVersion"`     // the version in use; nil when unversioned
}

// List returns the catalogue rows matching f, ordered by title then id,
// with the caller's tenant's state.
func (s *Service) List(ctx context.Context, f ListFilter) ([]ListItem, error) {
	sc, err := store.ScopeFrom(ctx)
	if err != nil {
		return nil, err
	}
	states, err := s.states(ctx, sc.TenantID)
	if err != nil {
		return nil, err
	}
	withCreds, err := s.store.CredentialIntegrations(ctx, s.db, sc.TenantID)
	if err != nil {
		return nil, err
	}
	q := strings.ToLower(f.Q)
	items := []ListItem{}
	for _, d := range s.Definitions() {
		st := stateOf(d, states[d.ID])
		switch {
		case q != "" && !slices.ContainsFunc([]string{d.ID, d.Title, d.Description}, func(f string) bool { return strings.Contains(strings.ToLower(f), q) }):
			continue
		case f.Category != "" && d.Category != f.Category:
			continue
		case f.IsEnabled != nil && st.IsEnabled != *f.IsEnabled:
			continue
		}
		items = append(items, ListItem{ID: d.ID, Title: d.Title, Category: d.Category, Hub: d.Hub, ProviderKey: d.ProviderKey,
			BundleID: d.BundleID, HasCredentials: slices.Contains(withCreds, d.ID), IsEnabled: st.IsEnabled, APIVersion: st.APIVersion})
	}
	slices.SortFunc(items, func(a, b ListItem) int { return cmp.Or(cmp.Compare(a.Title, b.Title), cmp.Compare(a.ID, b.ID)) })
	return items, nil
}

func (s *Service) states(ctx context.Context, tenantID string) (map[string]*State, error) {
	list, err := s.store.ListStates(ctx, s.db, tenantID)
	m := make(map[string]*State, len(list))
	for _, st := range list {
		m[st.IntegrationID] = st
	}
	return m, err
}

// stateOf is the stored state, or the defaults when there is none.
func stateOf(d Definition, stored *State) State {
	if stored != nil {
		return *stored
	}
	return State{IntegrationID: d.ID, IsEnabled: true, APIVersion: defaultVersion(d)}
}

// Detail is one integration as the caller's tenant sees it.
type Detail struct {
	Integration Definition `json:"integration"` // the catalogue definition
	// Bundle is the integration's bundle; nil when it has none.
	Bundle *Bundle `json:"bundle"`
	// BundleIntegrations are the bundle's integrations with their state;
	// empty without a bundle.
	BundleIntegrations []BundleMember `json:"bundleIntegrations"`
	State              State          `json:"state"`          // the tenant's state (defaults when never stored)
	HasCredentials     bool           `json:"hasCredentials"` // whether the tenant stored credentials
	// CredentialsKeys are the keys of the stored credentials, sorted.
	CredentialsKeys []string `json:"credentialsKeys"`
}

// BundleMember is an integration of a bundle with the tenant's state.
type BundleMember struct {
	Definition
	IsEnabled bool  `json:"isEnabled"` // State.IsEnabled
	State     State `json:"state"`     // the tenant's state of this member
}

// Get returns the integration's detail for the caller's tenant; an
// unknown id is ErrNotFound.
func (s *Service) Get(ctx context.Context, id string) (*Detail, error) {
	sc, err := store.ScopeFrom(ctx)
	if err != nil {
		return nil, err
	}
	d, ok := s.Definition(id)
	if !ok {
		return nil, ErrNotFound
	}
	states, err := s.states(ctx, sc.TenantID)
	if err != nil {
		return nil, err
	}
	out := &Detail{Integration: d, State: stateOf(d, states[d.ID]), BundleIntegrations: []BundleMember{}, CredentialsKeys: []string{}}
	if d.BundleID != "" {
		if b, ok := s.bundle(d.BundleID); ok {
			out.Bundle = b
		}
		for _, m := range s.Definitions() {
			if m.BundleID == d.BundleID {
				st := stateOf(m, states[m.ID])
				out.BundleIntegrations = append(out.BundleIntegrations, BundleMember{Definition: m, IsEnabled: st.IsEnabled, State: st})
			}
		}
	}
	values, _, err := s.values(ctx, s.db, sc.TenantID, id)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return nil, err
	}
	out.HasCredentials = err == nil
	for k := range values {
		out.CredentialsKeys = append(out.CredentialsKeys, k)
	}
	slices.Sort(out.CredentialsKeys)
	return out, nil
}

// StateInput changes a tenant's state; nil fields keep their value.
type StateInput struct {
	IsEnabled      *bool `json:"isEnabled" jsonschema:"anyof_required=isEnabled"`           // nil keeps it; at least one field is required
	ReauthRequired *bool `json:"reauthRequired" jsonschema:"anyof_required=reauthRequired"` // nil keeps it
	// NotifyAdminsOnFailure sets State.NotifyAdminsOnFailure; nil keeps it.
	NotifyAdminsOnFailure *bool `json:"notifyAdminsOnFailure" jsonschema:"anyof_required=notifyAdminsOnFailure"`
}

// SetState changes the caller's tenant's state of the integration and
// returns it. Enabling a disabled integration stamps EnabledAt. Neither
// field is ErrNoStateChange.
func (s *Service) SetState(ctx context.Context, id string, in StateInput) (*State, error) {
	if in.IsEnabled == nil && in.ReauthRequired == nil && in.NotifyAdminsOnFailure == nil {
		return nil, ErrNoStateChange
	}
	return s.changeState(ctx, id, EventStateUpdated, func(d Definition, st *State, tx *store.Tx) error {
		if in.IsEnabled != nil {
			if *in.IsEnabled && !st.IsEnabled {
				at := tx.Now()
				st.EnabledAt = &at
			}
			st.IsEnabled = *in.IsEnabled
		}
		if in.ReauthRequired != nil {
			st.ReauthRequired = *in.ReauthRequired
		}
		if in.NotifyAdminsOnFailure != nil {
			st.NotifyAdminsOnFailure = *in.NotifyAdminsOnFailure
		}
		return nil
	})
}

// SetVersion picks the API version the caller's tenant uses and returns
// it with the one used before. An integration without versions is
// ErrNotVersioned, an unknown version ErrUnknownVersion.
func (s *Service) SetVersion(ctx context.Context, id, version string) (current, previous *string, err error) {
	_, err = s.changeState(ctx, id, EventVersionUpdated, func(d Definition, st *State, _ *store.Tx) error {
		if len(d.APIVersions) == 0 {
			return ErrNotVersioned
		}
		if !slices.ContainsFunc(d.APIVersions, func(v APIVersion) bool { return v.ID == version }) {
			return ErrUnknownVersion
		}
		previous = st.APIVersion
		current = &version
		st.APIVersion = current
		return nil
	})
	return current, previous, err
}

// Health statuses a health check records (RecordHealth).
const (
	HealthHealthy   = "healthy"
	HealthUnhealthy = "unhealthy"
)

// RecordHealth stores the outcome of a health check of the integration
// for the caller's tenant (the data sync area's validate route runs one):
// its status (HealthHealthy or HealthUnhealthy), when it ran and how long
// it took, with the state event.
func (s *Service) RecordHealth(ctx context.Context, id, status string, latency time.Duration) (*State, error) {
	if status != HealthHealthy && status != HealthUnhealthy {
		return nil, store.Invalid("status", "must be healthy or unhealthy")
	}
	return s.changeState(ctx, id, EventStateUpdated, func(_ Definition, st *State, tx *store.Tx) error {
		at, ms := tx.Now(), latency.Milliseconds()
		st.LastHealthStatus, st.LastHealthCheckedAt, st.LastHealthLatencyMs = &status, &at, &ms
		return nil
	})
}

// changeState applies change to the tenant's state (the defaults when
// none is stored) in one transaction with the event typ.
func (s *Service) changeState(ctx context.Context, id, typ string, change func(Definition, *State, *store.Tx) error) (*State, error) {
	sc, err := store.ScopeFrom(ctx)
	if err != nil {
		return nil, err
	}
	d, ok := s.Definition(id)
	if !ok {
		return nil, ErrNotFound
	}
	var st State
	err = s.db.Tx(ctx, func(tx *store.Tx) error {
		stored, err := s.store.GetState(ctx, tx, sc.TenantID, id)
		switch {
		case errors.Is(err, store.ErrNotFound):
			stored = nil
		case err != nil:
			return err
		}
		st = stateOf(d, stored)
		if err := change(d, &st, tx); err != nil {
			return err
		}
		now := tx.Now()
		st.UpdatedAt = &now
		if err := s.store.PutState(ctx, tx, sc.TenantID, &st); err != nil {
			return err
		}
		_, err = tx.EmitData(ctx, typ, sc, stateEvent{IntegrationID: id, State: st})
		return err
	})
	if err != nil {
		return nil, err
	}
	return &st, nil
}

// stateEvent is the data of the state and version events.
type stateEvent struct {
	IntegrationID string `json:"integrationId"`
	State
}

// TenantState returns a tenant's state of the integration: the stored
// one, or the defaults (enabled, the default API version) when the tenant
// never changed it. For code acting for a tenant outside a request (a sync
// run's worker); an unknown integration is ErrNotFound.
func (s *Service) TenantState(ctx context.Context, tenantID, id string) (State, error) {
	d, ok := s.Definition(id)
	if !ok {
		return State{}, ErrNotFound
	}
	stored, err := s.store.GetState(ctx, s.db, tenantID, id)
	switch {
	case errors.Is(err, store.ErrNotFound):
		stored = nil
	case err != nil:
		return State{}, err
	}
	return stateOf(d, stored), nil
}

// Enabled reports whether the tenant has the integration enabled (the
// default when it never changed it). An unknown integration is
// ErrNotFound.
func (s *Service) Enabled(ctx context.Context, tenantID, id string) (bool, error) {
	st, err := s.TenantState(ctx, tenantID, id)
	return st.IsEnabled, err
}
