package identity

import (
	"context"
)

// RoleAccess returns what the tenant's role grants, as the Identity of a
// caller holding just that role (no tenant scope beyond TenantID, no
// credential). Another tenant's role is store.ErrNotFound. Other areas use
// it to preview what a role sees (the dashboards' widget visibility).
func (s *Service) RoleAccess(ctx context.Context, tenantID, roleID string) (*Identity, error) {
	r, err := s.store.GetRole(ctx, s.db, tenantID, roleID)
	if err != nil {
		return nil, notFound(err, "role not found")
	}
	id := identityFromRoles([]*Role{r})
	id.TenantID = tenantID
	return id, nil
}

// UserAccess returns what the tenant's live user may do: the Identity its
// session would have, its organization (OrganizationID) the one a session
// of it starts in. Another tenant's user, or a deleted one, is
// store.ErrNotFound.
func (s *Service) UserAccess(ctx context.Context, tenantID, userID string) (*Identity, error) {
	u, err := s.store.GetUser(ctx, s.db, tenantID, userID)
	if err != nil {
		return nil, notFound(err, "user not found")
	}
	roles, err := s.store.UserRoles(ctx, s.db, u.ID)
	if err != nil {
		return nil, err
	}
	id := identityFromRoles(roles)
	id.TenantID, id.UserID, id.OrganizationID = tenantID, u.ID, u.OrganizationID
	return id, nil
}
