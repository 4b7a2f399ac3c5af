package toggles

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/tenantkit/tenantkit/store"
)

// Type is the type of a toggle's values.
type Type string

// The toggle types.
const (
	Boolean Type = "boolean"
	String  Type = "string"
	Number  Type = "number"
	JSON    Type = "json"
)

// Valid reports whether t is one of the four types.
func (t Type) Valid() bool {
	switch t {
	case Boolean, String, Number, JSON:
		return true
	}
	return false
}

// Toggle is a global feature toggle definition.
type Toggle struct {
	ID          string `json:"id"`
	Identifier  string `json:"identifier"` // the name code checks it by (Service.Bool(ctx, identifier)); unique
	Name        string `json:"name"`
	Description string `json:"description"`
	Category    string `json:"category"` // free text toggles are grouped by
	Type        Type   `json:"type"`     // Boolean, String, Number or JSON: the type of every value
	// DefaultValue is the value of every tenant without an override: JSON
	// of the toggle's type, or null.
	DefaultValue json.RawMessage `json:"defaultValue"`
	CreatedAt    time.Time       `json:"createdAt"`
	UpdatedAt    time.Time       `json:"updatedAt"`
}

// Override is a tenant's own value of a toggle.
type Override struct {
	ID        string          `json:"id"`
	ToggleID  string          `json:"toggleId"`
	TenantID  string          `json:"tenantId"`
	Value     json.RawMessage `json:"value"` // the tenant's value: JSON of the toggle's type, or null
	UpdatedAt time.Time       `json:"updatedAt"`
}

// OverrideItem is one row of ListOverrides: a toggle as the caller's tenant
// sees it. ID is the override's id, "" when the tenant inherits the default.
type OverrideItem struct {
	ID         string          `json:"id"`
	ToggleID   string          `json:"toggleId"`
	TenantID   string          `json:"tenantId"`
	Identifier string          `json:"identifier"` // the toggle's
	Name       string          `json:"name"`
	Category   string          `json:"category"`   // the toggle's
	Type       Type            `json:"type"`       // the toggle's
	IsOverride bool            `json:"isOverride"` // whether the tenant has an override
	Value      json.RawMessage `json:"value"`      // the override's value, or the default's when IsOverride is false
	UpdatedAt  *time.Time      `json:"updatedAt"`
}

// Source tells where a resolved value came from.
type Source string

// The sources of a resolved value.
const (
	FromOverride Source = "override"
	FromDefault  Source = "default"
)

// Resolution is a toggle's effective value for one tenant.
type Resolution struct {
	ToggleID   string
	Identifier string // the toggle's
	TenantID   string
	Type       Type   // the toggle's
	Source     Source // FromOverride or FromDefault: where Value comes from
	// Value is the JSON value (null when unset). It is shared with the
	// cache: do not modify it.
	Value json.RawMessage
}

// The event types the area emits. Toggle events are global (no tenant);
// override events carry the tenant.
const (
	EventToggleCreated   = "feature_toggles.toggle.created"
	EventToggleUpdated   = "feature_toggles.toggle.updated"
	EventToggleDeleted   = "feature_toggles.toggle.deleted"
	EventOverrideUpdated = "feature_toggles.override.updated"
)

// EventTypes describes every event the area emits, for catalogues.
var EventTypes = []EventType{
	{ID: EventToggleCreated, Label: "Feature toggle created", Description: "A global feature toggle was created."},
	{ID: EventToggleUpdated, Label: "Feature toggle updated", Description: "A global feature toggle's definition or default value changed."},
	{ID: EventToggleDeleted, Label: "Feature toggle deleted", Description: "A global feature toggle was deleted."},
	{ID: EventOverrideUpdated, Label: "Feature toggle override updated", Description: "A tenant's override of a toggle was set or removed."},
}

// EventType describes one event type.
type EventType = store.EventType

// ErrMissingToggle is returned when no toggle has the identifier.
var ErrMissingToggle = errors.New("toggles: toggle not found")

// TypeMismatchError is returned when a toggle is read as another type than
// its own.
type TypeMismatchError struct {
	Identifier string // the toggle read
	Actual     Type   // the toggle's type
	Requested  Type   // the type it was read as
}

// Error names the toggle, its type and the type requested.
func (e *TypeMismatchError) Error() string {
	return fmt.Sprintf("Toggle %q has type %q but %q was requested.", e.Identifier, e.Actual, e.Requested)
}

// MissingToggleError carries the identifier of ErrMissingToggle.
type MissingToggleError struct {
	Identifier string // the identifier no toggle has
}

// Error names the missing toggle.
func (e *MissingToggleError) Error() string {
	return fmt.Sprintf("Toggle %q not found (missing).", e.Identifier)
}

// Unwrap makes errors.Is(err, ErrMissingToggle) hold.
func (e *MissingToggleError) Unwrap() error { return ErrMissingToggle }
