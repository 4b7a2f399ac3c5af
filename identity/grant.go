package identity

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/tenantkit/tenantkit/store"
)

// ErrEscalation is the error (wrapped, with a message naming what is
// refused) of a grant that would hand out more access than the caller
// holds. It is a store.ErrForbidden (403 over HTTP).
var ErrEscalation = errors.New("identity: grant exceeds the caller's own access")

// Access is what a grant hands out: the features, super-admin flag and
// organization restriction of a role, or of several roles together.
type Access struct {
	// Features are feature strings, wildcards included.
	Features []string
	// SuperAdmin bypasses feature checks and tenant boundaries.
	SuperAdmin bool
	// Organizations restricts the holder to these organizations; nil
	// allows every organization of the tenant.
	Organizations []string
}

// AccessOf is the access a role grants.
func AccessOf(r *Role) Access {
	return Access{Features: r.Features, SuperAdmin: r.IsSuperAdmin, Organizations: r.Organizations}
}

// CheckGrant is the one rule of every grant path (API keys and users
// given roles, a role given an ACL, and any grant path added later): a
// caller hands out only access it holds itself.
//
//   - Super admins may grant anything.
//   - Nobody else grants super-admin access.
//   - Every granted feature must be covered by a feature the caller holds
//     ("*" covers all, "x.*" covers "x", "x.y" and "x.y.*").
//   - The organization restriction must be at least as narrow as the
//     caller's: a caller limited to some organizations grants only a
//     restriction to some of those, never "all organizations".
//
// It returns nil or an error wrapping ErrEscalation and store.ErrForbidden
// whose message says what the caller lacks.
func CheckGrant(actor *Identity, a Access) error {
	if actor.IsSuperAdmin {
		return nil
	}
	if a.SuperAdmin {
		return escalation("only super admins may grant super-admin access")
	}
	var missing []string
	for _, f := range a.Features {
		if !actor.HasFeature(f) {
			missing = append(missing, f)
		}
	}
	if len(missing) > 0 {
		return escalation("cannot grant features you do not hold: %s", strings.Join(missing, ", "))
	}
	if actor.OrganizationIDs == nil {
		return nil
	}
	if a.Organizations == nil {
		return escalation("cannot grant access to every organization: your access is limited to some")
	}
	for _, org := range a.Organizations {
		if !slices.Contains(actor.OrganizationIDs, org) {
			return escalation("cannot grant access to organization %s: it is outside your access", org)
		}
	}
	return nil
}

// checkRoleGrants applies CheckGrant to each role handed to a credential,
// naming the first role refused. Each role within the caller's access
// makes their union within it too.
func checkRoleGrants(actor *Identity, roles []*Role) error {
	for _, r := range roles {
		if err := CheckGrant(actor, AccessOf(r)); err != nil {
			return escalation("role %q: %s", r.Name, store.PublicMessage(err))
		}
	}
	return nil
}

// managesOrganization reports whether actor may write identity objects
// (organizations, API keys, users, roles) that belong to org: any of its
// tenant's when it is unrestricted, else only the organizations of its
// restriction. A tenant-level object (org "") belongs to no organization,
// so a restricted caller manages none.
func managesOrganization(actor *Identity, org string) bool {
	if actor.IsSuperAdmin || actor.OrganizationIDs == nil {
		return true
	}
	return org != "" && slices.Contains(actor.OrganizationIDs, org)
}

// managesRole reports whether actor may change a role: its restriction
// must lie within the actor's organizations (an unrestricted role lies
// within an unrestricted actor's only).
func managesRole(actor *Identity, r *Role) bool {
	if actor.IsSuperAdmin || actor.OrganizationIDs == nil {
		return true
	}
	if r.Organizations == nil {
		return false
	}
	for _, org := range r.Organizations {
		if !slices.Contains(actor.OrganizationIDs, org) {
			return false
		}
	}
	return true
}

// outOfOrganizationScope refuses a request-body reference to an
// organization the caller may not manage (403, naming the field).
func outOfOrganizationScope(field string) error {
	return store.Errorf(store.ErrForbidden, "%s: organization out of scope", field)
}

type escalationError struct{ msg string }

func escalation(format string, args ...any) error {
	return &escalationError{msg: fmt.Sprintf(format, args...)}
}

func (e *escalationError) Error() string         { return e.msg }
func (e *escalationError) PublicMessage() string { return e.msg }
func (e *escalationError) Is(target error) bool {
	return target == ErrEscalation || target == store.ErrForbidden
}
