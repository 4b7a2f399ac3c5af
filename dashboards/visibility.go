package dashboards

import (
	"context"
	"errors"
	"fmt"

	"github.com/tenantkit/tenantkit/store"
)

// visibleTo resolves the definitions a principal sees, in registration
// order:
//
//  1. a user with an override record sees exactly its widgets;
//  2. otherwise the union of the records of its roles applies;
//  3. when none of its roles has a record, every widget;
//
// and then only the widgets whose Features it holds all of (super admins
// hold every feature). userID is "" for an API key or a role, which have
// no override.
func (s *Service) visibleTo(ctx context.Context, q store.Querier, tenantID, userID string, a Access) ([]*WidgetDefinition, error) {
	var allowed map[string]bool // nil: every widget
	override := false
	if userID != "" {
		ids, err := s.store.UserWidgets(ctx, q, tenantID, userID)
		switch {
		case err == nil:
			allowed, override = setOf(ids), true
		case !errors.Is(err, store.ErrNotFound):
			return nil, err
		}
	}
	if !override {
		records, err := s.store.RoleWidgets(ctx, q, tenantID, a.RoleIDs)
		if err != nil {
			return nil, err
		}
		if len(records) > 0 {
			allowed = map[string]bool{}
			for _, ids := range records {
				for _, id := range ids {
					allowed[id] = true
				}
			}
		}
	}
	var out []*WidgetDefinition
	for _, d := range s.snapshot() {
		if (allowed == nil || allowed[d.ID]) && holdsAll(a, d.Features) {
			out = append(out, d)
		}
	}
	return out, nil
}

func holdsAll(a Access, features []string) bool {
	for _, f := range features {
		if !a.holds(f) {
			return false
		}
	}
	return true
}

func setOf(ids []string) map[string]bool {
	m := make(map[string]bool, len(ids))
	for _, id := range ids {
		m[id] = true
	}
	return m
}

func idsOf(defs []*WidgetDefinition) map[string]bool {
	m := make(map[string]bool, len(defs))
	for _, d := range defs {
		m[d.ID] = true
	}
	return m
}

func itemsOf(defs []*WidgetDefinition) []WidgetItem {
	items := make([]WidgetItem, len(defs))
	for i, d := range defs {
		items[i] = WidgetItem{DefinitionID: d.ID, Title: d.Title, Description: d.Description}
	}
	return items
}

// RoleWidgets previews the widgets a role makes available: its record's
// widgets, or every widget when it has none, of which those whose
// features the role holds. An unknown role, or another tenant's, is
// store.ErrNotFound.
func (s *Service) RoleWidgets(ctx context.Context, roleID string) ([]WidgetItem, error) {
	sc, a, err := s.lookup(ctx, "roleId", roleID, Directory.Role)
	if err != nil {
		return nil, err
	}
	defs, err := s.visibleTo(ctx, s.db, sc.TenantID, "", a)
	return itemsOf(defs), err
}

// SetRoleWidgets stores the widgets a role makes available and returns
// them (duplicates removed, order kept). Every id must name a registered
// widget; widgetIDs nil is a validation error naming widgetIds. An empty
// list stores an empty record: the role makes no widget available.
// ClearRoleWidgets removes the record instead.
func (s *Service) SetRoleWidgets(ctx context.Context, roleID string, widgetIDs []string) ([]string, error) {
	sc, _, err := s.lookup(ctx, "roleId", roleID, Directory.Role)
	if err != nil {
		return nil, err
	}
	if widgetIDs == nil {
		return nil, store.Invalid("widgetIds", "is required (an empty list hides every widget; DELETE removes the restriction)")
	}
	ids, err := s.checkWidgetIDs(widgetIDs)
	if err != nil {
		return nil, err
	}
	err = s.db.Tx(ctx, func(tx *store.Tx) error {
		if err := s.store.SetRoleWidgets(ctx, tx, sc.TenantID, roleID, ids, tx.Now()); err != nil {
			return err
		}
		_, err := tx.EmitData(ctx, EventVisibilityUpdated, sc, VisibilityEvent{RoleID: roleID, WidgetIDs: ids})
		return err
	})
	return ids, err
}

// ClearRoleWidgets removes a role's record, if any: the role then
// restricts nothing (see visibleTo). The event carries no widget ids.
func (s *Service) ClearRoleWidgets(ctx context.Context, roleID string) error {
	sc, _, err := s.lookup(ctx, "roleId", roleID, Directory.Role)
	if err != nil {
		return err
	}
	return s.db.Tx(ctx, func(tx *store.Tx) error {
		if err := s.store.DeleteRoleWidgets(ctx, tx, sc.TenantID, roleID); err != nil {
			return err
		}
		_, err := tx.EmitData(ctx, EventVisibilityUpdated, sc, VisibilityEvent{RoleID: roleID, WidgetIDs: []string{}})
		return err
	})
}

// ForgetRole removes the tenant's record of a role, in q (the transaction
// that deletes the role). The Kit calls it from the identity service's
// delete hook.
func (s *Service) ForgetRole(ctx context.Context, q store.Querier, tenantID, roleID string) error {
	return s.store.DeleteRoleWidgets(ctx, q, tenantID, roleID)
}

// ForgetUser removes the tenant's override record of a user, in q (the
// transaction that deletes the user). The Kit calls it from the identity
// service's delete hook.
func (s *Service) ForgetUser(ctx context.Context, q store.Querier, tenantID, userID string) error {
	return s.store.DeleteUserWidgets(ctx, q, tenantID, userID)
}

// UserWidgets returns a user's mode (ModeOverride when it has an override
// record, ModeInherit otherwise) and the widgets it sees: the override's,
// or its roles', of which those whose features it holds. An unknown
// user, or another tenant's, is store.ErrNotFound.
func (s *Service) UserWidgets(ctx context.Context, userID string) (string, []WidgetItem, error) {
	sc, a, err := s.lookup(ctx, "userId", userID, Directory.User)
	if err != nil {
		return "", nil, err
	}
	mode := ModeOverride
	if _, err := s.store.UserWidgets(ctx, s.db, sc.TenantID, userID); errors.Is(err, store.ErrNotFound) {
		mode = ModeInherit
	} else if err != nil {
		return "", nil, err
	}
	defs, err := s.visibleTo(ctx, s.db, sc.TenantID, userID, a)
	return mode, itemsOf(defs), err
}

// SetUserWidgets sets a user's mode: ModeOverride stores widgetIDs (every
// id a registered widget; an empty list hides every widget), ModeInherit
// removes the override and ignores widgetIDs (a form may send the list it
// shows either way). It returns the ids stored (duplicates removed, order
// kept; empty for inherit).
func (s *Service) SetUserWidgets(ctx context.Context, userID, mode string, widgetIDs []string) ([]string, error) {
	if mode != ModeInherit && mode != ModeOverride {
		return nil, store.Invalid("mode", "must be inherit or override")
	}
	sc, _, err := s.lookup(ctx, "userId", userID, Directory.User)
	if err != nil {
		return nil, err
	}
	ids := []string{}
	if mode == ModeOverride {
		if ids, err = s.checkWidgetIDs(widgetIDs); err != nil {
			return nil, err
		}
	}
	err = s.db.Tx(ctx, func(tx *store.Tx) error {
		var err error
		if mode == ModeInherit {
			err = s.store.DeleteUserWidgets(ctx, tx, sc.TenantID, userID)
		} else {
			err = s.store.SetUserWidgets(ctx, tx, sc.TenantID, userID, ids, tx.Now())
		}
		if err != nil {
			return err
		}
		_, err = tx.EmitData(ctx, EventVisibilityUpdated, sc, VisibilityEvent{UserID: userID, Mode: mode, WidgetIDs: ids})
		return err
	})
	return ids, err
}

// lookup checks the caller's scope and finds a role or user through the
// Directory.
func (s *Service) lookup(ctx context.Context, field, id string, find func(Directory, context.Context, string, string) (Access, error)) (store.Scope, Access, error) {
	sc, err := store.ScopeFrom(ctx)
	if err != nil {
		return sc, Access{}, err
	}
	if id == "" {
		return sc, Access{}, store.Invalid(field, "is required")
	}
	d, err := s.dir()
	if err != nil {
		return sc, Access{}, err
	}
	a, err := find(d, ctx, sc.TenantID, id)
	if err == nil && !sc.AllowsOrganization(a.OrganizationID) {
		// A user of an organization the caller may not see is as
		// unknown to it as another tenant's.
		err = store.ErrNotFound
	}
	if errors.Is(err, store.ErrNotFound) {
		what := "Role"
		if field == "userId" {
			what = "User"
		}
		return sc, Access{}, store.Errorf(store.ErrNotFound, "%s not found", what)
	}
	return sc, a, err
}

// checkWidgetIDs removes duplicates and reports ids of no registered
// widget, naming "widgetIds[i]".
func (s *Service) checkWidgetIDs(ids []string) ([]string, error) {
	if len(ids) > maxVisibilityIDs {
		return nil, store.Invalid("widgetIds", "must hold at most 1000 ids")
	}
	v := &store.ValidationError{}
	out := []string{}
	seen := map[string]bool{}
	for i, id := range ids {
		if _, ok := s.definition(id); !ok {
			v.Add(fmt.Sprintf("widgetIds[%d]", i), fmt.Sprintf("unknown widget %q", truncate(id)))
			continue
		}
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out, v.Err()
}

// maxVisibilityIDs bounds a visibility record's list.
const maxVisibilityIDs = 1000
