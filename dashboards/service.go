package dashboards

import (
	"context"
	"embed"
	"errors"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/tenantkit/tenantkit/store"
)

//go:embed migrations
var migrationsFS embed.FS

// Migrations creates the area's tables. tenantkit.Open applies it; a host
// using the package alone applies it with db.Migrate.
var Migrations = store.Migrations{Line: "dashboards", FS: migrationsFS, Dir: "migrations"}

// Options tunes a Service. The zero value is ready to use.
type Options struct {
	// Store stores layouts and visibility records (default NewSQLStore()).
	// A host with its own storage passes its Store; it must keep its data
	// in db (see Store) and pass dashboardstest.Run.
	Store Store
	// Directory looks up roles and users for the visibility methods.
	// The Kit sets it from its identity area when it opens; it
	// may also be set later with SetDirectory.
	Directory Directory
}

// Service manages dashboard layouts, the widget registry and widget
// visibility.
type Service struct {
	db        *store.DB
	store     Store
	directory atomic.Pointer[Directory]
	registry  registry
}

// New returns the service over db, whose migrations include Migrations.
// It starts nothing and reads nothing; register widgets with Register.
// It returns an error only for options it cannot accept (none today).
func New(db *store.DB, opts Options) (*Service, error) {
	s := &Service{db: db, store: opts.Store}
	if s.store == nil {
		s.store = NewSQLStore()
	}
	if opts.Directory != nil {
		s.SetDirectory(opts.Directory)
	}
	return s, nil
}

// SetDirectory sets the Directory the visibility methods use. It is safe
// to call while requests are served.
func (s *Service) SetDirectory(d Directory) { s.directory.Store(&d) }

// HasDirectory reports whether a Directory is set.
func (s *Service) HasDirectory() bool { return s.directory.Load() != nil }

func (s *Service) dir() (Directory, error) {
	d := s.directory.Load()
	if d == nil || *d == nil {
		return nil, ErrNoDirectory
	}
	return *d, nil
}

// maxCASAttempts bounds the compare-and-set retries of a write without
// If-Match (last write wins): each attempt fails only because another
// writer committed in between.
const maxCASAttempts = 50

// Widgets returns the definitions the viewer may see, in registration
// order.
func (s *Service) Widgets(ctx context.Context, v Viewer) ([]WidgetDefinition, error) {
	sc, err := store.ScopeFrom(ctx)
	if err != nil {
		return nil, err
	}
	defs, err := s.visibleTo(ctx, s.db, sc.TenantID, v.UserID, v.Access)
	if err != nil {
		return nil, err
	}
	out := make([]WidgetDefinition, len(defs))
	for i, d := range defs {
		out[i] = *d
	}
	return out, nil
}

// WidgetData runs the definition's Data provider in the caller's scope.
// An unknown definition is store.ErrNotFound, one the viewer may not see
// store.ErrForbidden, one without a provider ErrNoData.
func (s *Service) WidgetData(ctx context.Context, v Viewer, definitionID string) (any, error) {
	sc, err := store.ScopeFrom(ctx)
	if err != nil {
		return nil, err
	}
	d, ok := s.definition(definitionID)
	if !ok {
		return nil, store.Errorf(store.ErrNotFound, "Widget not found")
	}
	visible, err := s.visibleTo(ctx, s.db, sc.TenantID, v.UserID, v.Access)
	if err != nil {
		return nil, err
	}
	if !idsOf(visible)[d.ID] {
		return nil, store.Errorf(store.ErrForbidden, "This widget is not available to the caller")
	}
	if d.Data == nil {
		return nil, ErrNoData
	}
	return d.Data(ctx)
}

// Layout returns the viewer's layout: the stored widgets it may still see
// (widgets hidden since they were placed are left out, not deleted) and
// the stored layout's ETag. The first read stores a layout seeded with the
// defaultEnabled widgets the viewer sees, at their default grids.
func (s *Service) Layout(ctx context.Context, v Viewer) ([]Widget, string, error) {
	sc, err := store.ScopeFrom(ctx)
	if err != nil {
		return nil, "", err
	}
	if err := checkOwner(v); err != nil {
		return nil, "", err
	}
	// A stored layout is read without a write transaction (on SQLite the
	// one writer connection stays free); only the first read seeds.
	defs, err := s.visibleTo(ctx, s.db, sc.TenantID, v.UserID, v.Access)
	if err != nil {
		return nil, "", err
	}
	visible := idsOf(defs)
	l, err := s.store.GetLayout(ctx, s.db, sc.TenantID, v.Owner)
	if errors.Is(err, store.ErrNotFound) {
		err = s.db.Tx(ctx, func(tx *store.Tx) error {
			var err error
			l, visible, err = s.loadLayout(ctx, tx, sc, v)
			return err
		})
	}
	if err != nil {
		return nil, "", err
	}
	widgets := slices.DeleteFunc(slices.Clone(l.Widgets), func(w Widget) bool { return !visible[w.DefinitionID] })
	if widgets == nil {
		widgets = []Widget{}
	}
	return widgets, l.ETag(), nil
}

// loadLayout returns the viewer's stored layout, seeding it when there is
// none, and the definitions the viewer sees.
func (s *Service) loadLayout(ctx context.Context, tx *store.Tx, sc store.Scope, v Viewer) (*Layout, map[string]bool, error) {
	defs, err := s.visibleTo(ctx, tx, sc.TenantID, v.UserID, v.Access)
	if err != nil {
		return nil, nil, err
	}
	l, err := s.store.GetLayout(ctx, tx, sc.TenantID, v.Owner)
	if errors.Is(err, store.ErrNotFound) {
		l = &Layout{TenantID: sc.TenantID, Owner: v.Owner, Widgets: []Widget{}, Version: 1, CreatedAt: tx.Now(), UpdatedAt: tx.Now()}
		for _, d := range defs {
			if d.DefaultEnabled {
				l.Widgets = append(l.Widgets, Widget{ID: store.NewID(), DefinitionID: d.ID, Grid: d.DefaultGrid, Config: d.DefaultConfig})
			}
		}
		var created bool
		if created, err = s.store.CreateLayout(ctx, tx, l); err == nil && !created {
			// Another request seeded it first (PostgreSQL); read theirs.
			l, err = s.store.GetLayout(ctx, tx, sc.TenantID, v.Owner)
		}
	}
	if err != nil {
		return nil, nil, err
	}
	return l, idsOf(defs), nil
}

// PutLayout replaces the viewer's layout with widgets and returns the new
// ETag. ifMatch, when not "", must be the layout's current ETag (or "*"),
// otherwise nothing is written and the error is ErrPreconditionFailed.
// Problems with the widgets are a store.ValidationError naming
// "widgets[i].field": a bad or duplicate id, an unknown definition or one
// the viewer may not see, a bad grid or config, more than MaxWidgets.
func (s *Service) PutLayout(ctx context.Context, v Viewer, widgets []Widget, ifMatch string) (string, error) {
	return s.modify(ctx, v, ifMatch, func(_ []Widget, visible map[string]bool) ([]Widget, error) {
		return validateLayout(widgets, visible, func(id string) bool { _, ok := s.definition(id); return ok })
	})
}

// LayoutItem returns one widget of the viewer's layout by id; an unknown
// id, or a widget the viewer may no longer see, is store.ErrNotFound.
func (s *Service) LayoutItem(ctx context.Context, v Viewer, itemID string) (*Widget, error) {
	widgets, _, err := s.Layout(ctx, v)
	if err != nil {
		return nil, err
	}
	for _, w := range widgets {
		if sameID(w.ID, itemID) {
			return &w, nil
		}
	}
	return nil, errItemNotFound
}

var errItemNotFound = store.Errorf(store.ErrNotFound, "Layout item not found")

// DeleteLayoutItem removes one widget from the viewer's layout and
// returns the new ETag; ifMatch as for PutLayout. An unknown id, or a
// widget the viewer may no longer see (LayoutItem does not show it
// either), is store.ErrNotFound.
func (s *Service) DeleteLayoutItem(ctx context.Context, v Viewer, itemID, ifMatch string) (string, error) {
	return s.modify(ctx, v, ifMatch, func(current []Widget, visible map[string]bool) ([]Widget, error) {
		i := slices.IndexFunc(current, func(w Widget) bool { return sameID(w.ID, itemID) && visible[w.DefinitionID] })
		if i < 0 {
			return nil, errItemNotFound
		}
		return slices.Delete(slices.Clone(current), i, i+1), nil
	})
}

// sameID compares layout item ids (UUIDs) regardless of case.
func sameID(stored, given string) bool { return strings.EqualFold(stored, given) }

// modify runs one layout change as a compare-and-set on the layout's
// version: change gets the stored widgets and the definitions the viewer
// sees, and returns the new widgets. With ifMatch, a version other than
// the one named fails with ErrPreconditionFailed, before or during the
// write; without, a write that lost the race to another runs again on
// the newer layout.
func (s *Service) modify(ctx context.Context, v Viewer, ifMatch string, change func(current []Widget, visible map[string]bool) ([]Widget, error)) (string, error) {
	sc, err := store.ScopeFrom(ctx)
	if err != nil {
		return "", err
	}
	if err := checkOwner(v); err != nil {
		return "", err
	}
	for range maxCASAttempts {
		var etag string
		err := s.db.Tx(ctx, func(tx *store.Tx) error {
			l, visible, err := s.loadLayout(ctx, tx, sc, v)
			if err != nil {
				return err
			}
			if ifMatch != "" && ifMatch != "*" && !matchesETag(ifMatch, l.ETag()) {
				return ErrPreconditionFailed
			}
			widgets, err := change(l.Widgets, visible)
			if err != nil {
				return err
			}
			if err := s.store.UpdateLayout(ctx, tx, sc.TenantID, v.Owner, l.Version, widgets, tx.Now()); err != nil {
				if errors.Is(err, store.ErrNotFound) {
					return errLostRace
				}
				return err
			}
			next := &Layout{Version: l.Version + 1}
			etag = next.ETag()
			_, err = tx.EmitData(ctx, EventLayoutUpdated, sc, LayoutEvent{Owner: v.Owner, Widgets: widgets, Version: next.Version})
			return err
		})
		switch {
		case errors.Is(err, errLostRace) && ifMatch != "":
			return "", ErrPreconditionFailed
		case errors.Is(err, errLostRace):
			continue
		}
		return etag, err
	}
	return "", errTooBusy
}

// errTooBusy: a write without If-Match lost the compare-and-set
// maxCASAttempts times in a row to other writers of the same layout.
var errTooBusy = store.Errorf(store.ErrConflict, "The layout is being changed by other requests; try again")

// errLostRace: the compare-and-set found the layout changed by another
// writer since this one read it.
var errLostRace = errors.New("dashboards: the layout changed during the write")

// matchesETag reports whether an If-Match header value (one tag or a
// comma-separated list; weak tags compare by their opaque part) names
// etag.
func matchesETag(header, etag string) bool {
	for len(header) > 0 {
		var tag string
		tag, header, _ = strings.Cut(header, ",")
		tag = strings.TrimSpace(tag)
		tag = strings.TrimPrefix(tag, "W/")
		if tag == etag || tag == "*" {
			return true
		}
	}
	return false
}

func checkOwner(v Viewer) error {
	if v.Owner == "" {
		return store.Errorf(store.ErrForbidden, "A layout belongs to a user or an API key; the caller is neither")
	}
	return nil
}
