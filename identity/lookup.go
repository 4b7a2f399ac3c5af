package identity

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/tenantkit/tenantkit/store"
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

// MaxRecipients bounds how many users RecipientUsers and UsersHolding
// return.
const MaxRecipients = 1000

// RecipientUsers returns the ids of the tenant's live users that refs
// name, each once, in the order found: a ref is a user id, an email (any
// case; a ref holding '@') or the exact name of one of the tenant's roles
// (every user holding it). A ref naming none of these is skipped. Other
// areas use it to address people (a business rule's NOTIFY action).
func (s *Service) RecipientUsers(ctx context.Context, tenantID string, refs []string) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	add := func(users []*UserRecord) {
		for _, u := range users {
			if !seen[u.ID] && len(out) < MaxRecipients {
				seen[u.ID] = true
				out = append(out, u.ID)
			}
		}
	}
	for _, ref := range refs {
		ref = strings.TrimSpace(ref)
		if ref == "" {
			continue
		}
		if strings.Contains(ref, "@") {
			users, err := s.store.UsersByEmail(ctx, s.db, normalizeEmail(ref), tenantID, 1)
			if err != nil {
				return nil, err
			}
			add(users)
			continue
		}
		u, err := s.store.GetUser(ctx, s.db, tenantID, ref)
		switch {
		case err == nil:
			add([]*UserRecord{u})
			continue
		case !errors.Is(err, store.ErrNotFound):
			return nil, err
		}
		r, err := s.store.GetRoleByName(ctx, s.db, tenantID, ref)
		switch {
		case errors.Is(err, store.ErrNotFound):
			continue
		case err != nil:
			return nil, err
		}
		users, err := s.store.UsersWithRoles(ctx, s.db, tenantID, []string{r.ID}, MaxRecipients)
		if err != nil {
			return nil, err
		}
		add(users)
	}
	return out, nil
}

// UsersHolding returns the ids of the tenant's live users whose roles
// grant feature (a super-admin role grants every feature) and who may
// read organization organizationID ("" for any user, whatever
// organizations their roles allow), each once, oldest first; at most
// MaxRecipients. Other areas use it to tell the people in charge
// (webhook failures to those holding webhooks.manage over the webhook's
// organization).
func (s *Service) UsersHolding(ctx context.Context, tenantID, organizationID, feature string) ([]string, error) {
	var roleIDs []string
	const page = 200
	for offset := 0; ; offset += page {
		roles, total, err := s.store.ListRoles(ctx, s.db, tenantID, offset, page)
		if err != nil {
			return nil, err
		}
		for _, r := range roles {
			if identityFromRoles([]*Role{r}).HasFeature(feature) {
				roleIDs = append(roleIDs, r.ID)
			}
		}
		if len(roles) == 0 || offset+len(roles) >= total {
			break
		}
	}
	users, err := s.store.UsersWithRoles(ctx, s.db, tenantID, roleIDs, MaxRecipients)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(users))
	for _, u := range users {
		if organizationID != "" {
			// The user's roles together: the organizations they may read.
			roles, err := s.store.UserRoles(ctx, s.db, u.ID)
			if err != nil {
				return nil, err
			}
			if id := identityFromRoles(roles); !id.CoversTenant() && !slices.Contains(id.OrganizationIDs, organizationID) {
				continue
			}
		}
		out = append(out, u.ID)
	}
	return out, nil
}
