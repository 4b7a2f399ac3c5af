package toggles

import (
	"bytes"
	"context"
	"embed"
	"encoding/json"
	"errors"
	"log/slog"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/tenantkit/tenantkit/internal/vcache"
	"github.com/tenantkit/tenantkit/store"
)

//go:embed migrations
var migrationsFS embed.FS

// Migrations creates the area's tables. tenantkit.Open applies it; a host
// using the package alone applies it with db.Migrate.
var Migrations = store.Migrations{Line: "toggles", FS: migrationsFS, Dir: "migrations"}

// Options tunes a Service. The zero value is ready to use.
type Options struct {
	// Store stores toggles and overrides (default NewSQLStore(), on the
	// area's own tables). A host with its own storage passes its Store;
	// it must keep its data in db (see Store) and pass togglestest.Run.
	Store Store
	// PollInterval is at most how often a check reads the version counter
	// to notice another process's change (default 250 ms; one single-row
	// read, by the first check after the interval).
	PollInterval time.Duration
	// Logger receives cache reload failures. Defaults to slog.Default().
	Logger *slog.Logger
}

// Service manages toggles and overrides and resolves them from an
// in-process cache.
type Service struct {
	db     *store.DB
	store  Store
	cache  *vcache.Value[*snapshot]
	logger *slog.Logger
}

// New returns the service over db, whose migrations include Migrations.
// It starts nothing and reads nothing: the cache loads on the first check.
// It returns an error only for options it cannot accept (none today).
func New(db *store.DB, opts Options) (*Service, error) {
	s := &Service{db: db, store: opts.Store, logger: opts.Logger}
	if s.store == nil {
		s.store = NewSQLStore()
	}
	if s.logger == nil {
		s.logger = slog.Default()
	}
	interval := opts.PollInterval
	if interval <= 0 {
		interval = 250 * time.Millisecond
	}
	s.cache = vcache.NewValue(db, versionCounter, interval, func(ctx context.Context, tx *store.Tx) (*snapshot, error) {
		ts, os, err := s.store.LoadAll(ctx, tx)
		if err != nil {
			return nil, err
		}
		return buildSnapshot(ts, os), nil
	}, func(err error) {
		s.logger.Warn("toggles: cache reload failed; serving the previous values", "err", err)
	})
	return s, nil
}

// Limits of the definition fields, in characters.
const (
	maxIdentifier  = 100
	maxName        = 200
	maxDescription = 2000
	maxCategory    = 100
)

var identifierPattern = regexp.MustCompile(`^[a-z][a-z0-9_.-]*$`)

// CreateInput is a new toggle.
type CreateInput struct {
	// Identifier starts with a lowercase letter, then lowercase letters,
	// digits, _, . and -; unique among all toggles, deleted ones included.
	Identifier  string `json:"identifier" jsonschema:"required,minLength=1,maxLength=100,pattern=^[a-z][a-z0-9_.-]*$"`
	Name        string `json:"name" jsonschema:"required,minLength=1,maxLength=200"`
	Description string `json:"description" jsonschema:"maxLength=2000"`
	// Category is free text toggles are grouped by.
	Category string `json:"category" jsonschema:"maxLength=100"`
	// Type is required: Boolean, String, Number or JSON.
	Type         Type            `json:"type" jsonschema:"required"`
	DefaultValue json.RawMessage `json:"defaultValue"` // JSON of Type, or null (absent: null)
}

// UpdateInput changes a toggle; nil fields keep their value. A toggle's
// type cannot change (its overrides were checked against it): Type, when
// given, must equal the current type.
type UpdateInput struct {
	ID string `json:"id" jsonschema:"required"`
	// Identifier, Name, Description and Category replace the toggle's when not
	// nil (see CreateInput).
	Identifier  *string `json:"identifier" jsonschema:"minLength=1,maxLength=100,pattern=^[a-z][a-z0-9_.-]*$"`
	Name        *string `json:"name" jsonschema:"minLength=1,maxLength=200"`
	Description *string `json:"description" jsonschema:"maxLength=2000"`
	// Category: see Identifier.
	Category *string `json:"category" jsonschema:"maxLength=100"`
	// Type cannot be changed: nil or the toggle's own type; another is a
	// validation error.
	Type *Type `json:"type"`
	// DefaultValue replaces the default when present; JSON null sets it to
	// null.
	DefaultValue json.RawMessage `json:"defaultValue"`
}

// Create adds a toggle.
func (s *Service) Create(ctx context.Context, in CreateInput) (*Toggle, error) {
	t := &Toggle{ID: store.NewID(), Identifier: in.Identifier, Name: in.Name, Description: in.Description,
		Category: in.Category, Type: in.Type, DefaultValue: normalise(in.DefaultValue)}
	v := &store.ValidationError{}
	if !t.Type.Valid() {
		v.Add("type", "must be one of boolean, string, number, json")
	}
	validateFields(v, t)
	if err := v.Err(); err != nil {
		return nil, err
	}
	err := s.change(ctx, func(tx *store.Tx) error {
		if err := s.checkIdentifierFree(ctx, tx, t.Identifier, t.ID); err != nil {
			return err
		}
		t.CreatedAt, t.UpdatedAt = tx.Now(), tx.Now()
		if err := s.store.CreateToggle(ctx, tx, t); err != nil {
			return err
		}
		_, err := tx.EmitData(ctx, EventToggleCreated, store.Scope{}, t)
		return err
	})
	return t, err
}

// Update changes a toggle.
func (s *Service) Update(ctx context.Context, in UpdateInput) (*Toggle, error) {
	var t *Toggle
	err := s.change(ctx, func(tx *store.Tx) error {
		var err error
		if t, err = s.store.GetToggle(ctx, tx, in.ID); err != nil {
			return notFound(err)
		}
		apply(&t.Identifier, in.Identifier)
		apply(&t.Name, in.Name)
		apply(&t.Description, in.Description)
		apply(&t.Category, in.Category)
		if in.DefaultValue != nil {
			t.DefaultValue = normalise(in.DefaultValue)
		}
		v := &store.ValidationError{}
		if in.Type != nil && *in.Type != t.Type {
			v.Add("type", "cannot be changed")
		}
		validateFields(v, t)
		if err := v.Err(); err != nil {
			return err
		}
		if err := s.checkIdentifierFree(ctx, tx, t.Identifier, t.ID); err != nil {
			return err
		}
		t.UpdatedAt = tx.Now()
		if err := s.store.UpdateToggle(ctx, tx, t); err != nil {
			return err
		}
		_, err = tx.EmitData(ctx, EventToggleUpdated, store.Scope{}, t)
		return err
	})
	if err != nil {
		return nil, err
	}
	return t, nil
}

// Delete soft-deletes a toggle. Its identifier stays reserved and its
// overrides are kept (but no longer apply).
func (s *Service) Delete(ctx context.Context, id string) error {
	return s.change(ctx, func(tx *store.Tx) error {
		t, err := s.store.GetToggle(ctx, tx, id)
		if err != nil {
			return notFound(err)
		}
		if err := s.store.DeleteToggle(ctx, tx, id, tx.Now()); err != nil {
			return err
		}
		_, err = tx.EmitData(ctx, EventToggleDeleted, store.Scope{}, t)
		return err
	})
}

// Get returns a live toggle.
func (s *Service) Get(ctx context.Context, id string) (*Toggle, error) {
	t, err := s.store.GetToggle(ctx, s.db, id)
	return t, notFound(err)
}

// List returns a page of toggles and the total. With a search, the total counts at most
// store.SearchCap(ctx)+1 matches: store.CapTotal turns it into the total
// to report (store.SearchTotalCap) and whether it is capped.
func (s *Service) List(ctx context.Context, f ListFilter) ([]*Toggle, int, error) {
	return s.store.ListToggles(ctx, s.db, f)
}

// OverrideView is a toggle's value for the caller's tenant, with the
// override's id ("" when the tenant inherits the default).
type OverrideView struct {
	ID         string          `json:"id"`
	Value      json.RawMessage `json:"value"` // the tenant's value: the override's, or the default
	TenantID   string          `json:"tenantId"`
	ToggleType Type            `json:"toggleType"` // the toggle's type
	UpdatedAt  *time.Time      `json:"updatedAt"`
}

// GetOverride returns the toggle's value for the tenant in ctx.
func (s *Service) GetOverride(ctx context.Context, toggleID string) (*OverrideView, error) {
	sc, err := store.ScopeFrom(ctx)
	if err != nil {
		return nil, err
	}
	t, err := s.Get(ctx, toggleID)
	if err != nil {
		return nil, err
	}
	view := &OverrideView{Value: t.DefaultValue, TenantID: sc.TenantID, ToggleType: t.Type}
	o, err := s.store.GetOverride(ctx, s.db, sc.TenantID, toggleID)
	switch {
	case err == nil:
		view.ID, view.Value, view.UpdatedAt = o.ID, o.Value, &o.UpdatedAt
	case !errors.Is(err, store.ErrNotFound):
		return nil, err
	}
	return view, nil
}

// ListOverrides returns one row per live toggle as the tenant in ctx sees
// it, and the total.
func (s *Service) ListOverrides(ctx context.Context, f OverrideFilter) ([]*OverrideItem, int, error) {
	sc, err := store.ScopeFrom(ctx)
	if err != nil {
		return nil, 0, err
	}
	return s.store.ListOverrides(ctx, s.db, sc.TenantID, f)
}

// SetOverride gives the tenant in ctx its own value of a toggle (on true)
// or removes its override (on false; the result is then nil). The value
// must be of the toggle's type or null.
func (s *Service) SetOverride(ctx context.Context, toggleID string, on bool, value json.RawMessage) (*Override, error) {
	sc, err := store.ScopeFrom(ctx)
	if err != nil {
		return nil, err
	}
	var out *Override
	err = s.change(ctx, func(tx *store.Tx) error {
		t, err := s.store.GetToggle(ctx, tx, toggleID)
		if err != nil {
			return notFound(err)
		}
		event := map[string]any{"toggleId": t.ID, "identifier": t.Identifier, "tenantId": sc.TenantID, "isOverride": on}
		if on {
			value = normalise(value)
			if msg := checkValue(t.Type, value); msg != "" {
				return store.Invalid("overrideValue", msg)
			}
			if out, err = s.store.UpsertOverride(ctx, tx, &Override{ID: store.NewID(), ToggleID: t.ID, TenantID: sc.TenantID,
				Value: value, UpdatedAt: tx.Now()}); err != nil {
				return err
			}
			event["value"] = out.Value
		} else if found, err := s.store.DeleteOverride(ctx, tx, sc.TenantID, t.ID); err != nil || !found {
			return err // removing no override changes nothing and emits nothing
		}
		_, err = tx.EmitData(ctx, EventOverrideUpdated, store.Scope{TenantID: sc.TenantID}, event)
		return err
	})
	return out, err
}

// change runs fn in a transaction that bumps the version counter, and
// reloads this process's cache once it commits, so the next check sees the
// change (and has values to serve should later reloads fail); other
// processes' checks notice the bump. The bump comes first: its row lock
// makes every change wait for the one before to commit, so on PostgreSQL
// (READ COMMITTED) fn reads the latest state and two concurrent updates
// never overwrite each other.
func (s *Service) change(ctx context.Context, fn func(tx *store.Tx) error) error {
	err := s.db.Tx(ctx, func(tx *store.Tx) error {
		if _, err := s.cache.Changed(ctx, tx); err != nil {
			return err
		}
		return fn(tx)
	})
	if err != nil {
		return err
	}
	// A failure with values cached is logged by the cache, which serves
	// them and retries at the next check; without any, the next check
	// loads.
	if _, err := s.cache.Get(ctx); err != nil {
		s.logger.Warn("toggles: cache load after a change failed; the next check retries", "err", err)
	}
	return nil
}

func (s *Service) checkIdentifierFree(ctx context.Context, q store.Querier, identifier, except string) error {
	taken, err := s.store.IdentifierTaken(ctx, q, identifier, except)
	if err != nil {
		return err
	}
	if taken {
		return store.Invalid("identifier", "already exists (identifiers of deleted toggles stay reserved)")
	}
	return nil
}

func validateFields(v *store.ValidationError, t *Toggle) {
	switch {
	case t.Identifier == "":
		v.Add("identifier", "is required")
	case utf8.RuneCountInString(t.Identifier) > maxIdentifier:
		v.Add("identifier", "must be at most 100 characters")
	case !identifierPattern.MatchString(t.Identifier):
		v.Add("identifier", "must start with a lowercase letter and contain only lowercase letters, numbers, dots, dashes, and underscores")
	}
	for field, text := range map[string]string{"identifier": t.Identifier, "name": t.Name, "description": t.Description, "category": t.Category} {
		if store.HasNUL(text) {
			v.Add(field, "must not contain the NUL character")
		}
	}
	if strings.TrimSpace(t.Name) == "" {
		v.Add("name", "is required")
	} else if utf8.RuneCountInString(t.Name) > maxName {
		v.Add("name", "must be at most 200 characters")
	}
	if utf8.RuneCountInString(t.Description) > maxDescription {
		v.Add("description", "must be at most 2000 characters")
	}
	if utf8.RuneCountInString(t.Category) > maxCategory {
		v.Add("category", "must be at most 100 characters")
	}
	if t.Type.Valid() {
		if msg := checkValue(t.Type, t.DefaultValue); msg != "" {
			v.Add("defaultValue", msg)
		}
	}
}

// checkValue returns why raw is not a value of type t, or "". null is a
// value of every type.
func checkValue(t Type, raw json.RawMessage) string {
	if !json.Valid(raw) {
		return "must be valid JSON"
	}
	if string(raw) == "null" {
		return ""
	}
	if store.JSONHasNUL(raw) {
		return "must not contain the NUL character"
	}
	var x any
	_ = json.Unmarshal(raw, &x)
	ok := true
	switch t {
	case Boolean:
		_, ok = x.(bool)
	case String:
		_, ok = x.(string)
	case Number:
		_, ok = x.(float64)
	}
	if !ok {
		return "must be a " + string(t) + " or null"
	}
	return ""
}

// normalise turns an absent value into null and compacts JSON.
func normalise(raw json.RawMessage) json.RawMessage {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return json.RawMessage("null")
	}
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return raw // invalid: checkValue reports it
	}
	return b.Bytes()
}

func apply(dst *string, v *string) {
	if v != nil {
		*dst = *v
	}
}

// notFound gives a missing toggle a caller-facing message.
func notFound(err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return store.Errorf(store.ErrNotFound, "Feature toggle not found")
	}
	return err
}

// CacheVersion is the version of the toggles this process resolves from
// (0 before the first resolution): every process on one database reaches
// the same version within the cache's check interval after a change.
func (s *Service) CacheVersion() int64 { return s.cache.Version() }
