package dashboards

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/tenantkit/tenantkit/store"
)

// Widget is one placed widget of a layout: an instance of a registered
// definition, with its position and its own settings. A definition may be
// placed several times; the id tells the instances apart.
type Widget struct {
	// ID is a UUID, unique within the layout.
	ID string `json:"id" jsonschema:"required,format=uuid"`
	// DefinitionID names a registered WidgetDefinition.
	DefinitionID string `json:"definitionId" jsonschema:"required,minLength=1"`
	// Grid is where the widget sits and how large it is.
	Grid Grid `json:"grid" jsonschema:"required"`
	// Config is the instance's settings: a JSON object, {} when none.
	Config json.RawMessage `json:"config" jsonschema:"oneof_type=object;null"`
}

// Grid is a widget's cell position (X, Y ≥ 0) and size (W, H ≥ 1) on the
// dashboard's grid.
type Grid struct {
	X int `json:"x" jsonschema:"required,minimum=0,maximum=10000"` // column of the left edge, from 0
	Y int `json:"y" jsonschema:"required,minimum=0,maximum=10000"` // row of the top edge, from 0
	W int `json:"w" jsonschema:"required,minimum=1,maximum=1000"`  // width in columns
	H int `json:"h" jsonschema:"required,minimum=1,maximum=1000"`  // height in rows
}

// Bounds of a layout.
const (
	// MaxWidgets is the most widgets a layout holds.
	MaxWidgets = 100
	// MaxGridCoordinate bounds X and Y, MaxGridSize W and H.
	MaxGridCoordinate = 10_000
	MaxGridSize       = 1_000
	// MaxConfigBytes bounds one widget's Config.
	MaxConfigBytes = 16 << 10
	// MaxDefinitionIDLength bounds a definition id.
	MaxDefinitionIDLength = 200
)

// DataFunc answers GET /dashboards/widgets/{definitionId}/data: the
// widget's data for the caller's scope, which ctx carries
// (store.ScopeFrom). Its result is encoded as JSON.
type DataFunc func(ctx context.Context) (any, error)

// WidgetDefinition describes a kind of widget a layout may place. Hosts
// register their own with Service.Register; the Kit registers built-ins
// over its areas.
type WidgetDefinition struct {
	// ID names the definition ("webhooks.delivery_health"); unique.
	ID string `json:"id"`
	// Title and Description are shown to people choosing widgets.
	Title       string `json:"title"`
	Description string `json:"description"`
	// Features must all be held by a caller for the widget to be visible
	// (super admins hold every feature).
	Features []string `json:"features"`
	// DefaultEnabled widgets seed a caller's layout on its first read.
	DefaultEnabled bool `json:"defaultEnabled"`
	// DefaultGrid places a seeded widget.
	DefaultGrid Grid `json:"defaultGrid"`
	// DefaultConfig is a seeded widget's Config; nil means {}.
	DefaultConfig json.RawMessage `json:"defaultConfig"`
	// Data, when set, provides the widget's data.
	Data DataFunc `json:"-"`
}

// Access is what decides which widgets a principal (a caller, a user or a
// role) sees: its roles and the features it holds.
type Access struct {
	// RoleIDs are the principal's roles, whose visibility records apply.
	RoleIDs []string
	// SuperAdmin holds every feature.
	SuperAdmin bool
	// Holds reports whether the principal holds a feature (wildcards are
	// the Holds function's business). Nil holds none.
	Holds func(feature string) bool
	// OrganizationID is a user's organization, which the caller's scope
	// must allow for the user visibility methods to reach it ("" for a
	// role, or a user of no organization).
	OrganizationID string
}

func (a Access) holds(feature string) bool {
	return a.SuperAdmin || (a.Holds != nil && a.Holds(feature))
}

// Viewer is the caller of a Service method: whose layout it reads and
// writes, and what it may see.
type Viewer struct {
	// Owner owns the layout: the calling user's id, or "api_key:<id>" for
	// an API key. Required for layout methods.
	Owner string
	// UserID is the calling user ("" for an API key): a user's override,
	// when it has one, decides what it sees.
	UserID string
	Access
}

// Directory looks up roles and users for the visibility routes. The Kit
// gets one from its identity area when the Kit opens; a host with its
// own identity system passes its own as Options.Directory.
type Directory interface {
	// Role returns the access of the tenant's role: RoleIDs holds just
	// roleID. An unknown role, or another tenant's, is an error wrapping
	// store.ErrNotFound.
	Role(ctx context.Context, tenantID, roleID string) (Access, error)
	// User returns the access of the tenant's user (its roles, features
	// and organization). An unknown user, or another tenant's, is an
	// error wrapping store.ErrNotFound.
	User(ctx context.Context, tenantID, userID string) (Access, error)
}

// Layout is an owner's stored layout.
type Layout struct {
	TenantID string
	// Owner is a user id or "api_key:<id>".
	Owner   string
	Widgets []Widget // the placed widgets, in order
	// Version counts the layout's changes; its ETag is derived from it.
	Version   int64
	CreatedAt time.Time
	UpdatedAt time.Time
}

// ETag is the layout's entity tag, as sent in the ETag header and
// compared with If-Match.
func (l *Layout) ETag() string { return fmt.Sprintf(`"%d"`, l.Version) }

// Modes of a user's visibility record.
const (
	// ModeInherit: the user sees what its roles allow (no record).
	ModeInherit = "inherit"
	// ModeOverride: the user sees exactly the record's widgets.
	ModeOverride = "override"
)

// WidgetItem is a definition as the visibility routes list it.
type WidgetItem struct {
	DefinitionID string `json:"definitionId"`
	Title        string `json:"title"`
	Description  string `json:"description"`
}

// Errors a caller can test with errors.Is.
var (
	// ErrPreconditionFailed: If-Match named a version that is no longer
	// the layout's (HTTP 412). It is a store.ErrConflict.
	ErrPreconditionFailed = fmt.Errorf("dashboards: the layout changed since it was read: %w", store.ErrConflict)
	// ErrNoDirectory: the visibility routes need a Directory and the
	// Service has none.
	ErrNoDirectory = fmt.Errorf("dashboards: no directory to look up roles and users")
	// ErrNoData: the definition has no Data provider.
	ErrNoData = store.Errorf(store.ErrNotFound, "This widget has no data")
)

// Event types emitted by the area.
const (
	EventLayoutUpdated     = "dashboards.layout.updated"
	EventVisibilityUpdated = "dashboards.visibility.updated"
)

// EventTypes describes the events the area emits.
var EventTypes = []store.EventType{
	{ID: EventLayoutUpdated, Label: "Dashboard layout updated", Description: "A user's or API key's dashboard layout was saved or a widget removed from it."},
	{ID: EventVisibilityUpdated, Label: "Dashboard widget visibility updated", Description: "The widgets a role or a user may see changed."},
}

// LayoutEvent is the data of dashboards.layout.updated.
type LayoutEvent struct {
	Owner   string   `json:"ownerId"` // a user id or "api_key:<id>"
	Widgets []Widget `json:"widgets"` // the layout after the change
	Version int64    `json:"version"` // the layout's new version
}

// VisibilityEvent is the data of dashboards.visibility.updated: either
// RoleID or UserID is set. For a user, Mode is inherit or override.
type VisibilityEvent struct {
	RoleID    string   `json:"roleId,omitempty"`
	UserID    string   `json:"userId,omitempty"`
	Mode      string   `json:"mode,omitempty"` // see the type comment
	WidgetIDs []string `json:"widgetIds"`      // the widget ids stored, duplicates removed
}
