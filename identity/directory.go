package identity

import (
	"context"
	"errors"

	"github.com/tenantkit/tenantkit/store"
)

// CreateTenant creates a tenant. Super admins only.
func (s *Service) CreateTenant(ctx context.Context, actor *Identity, name string) (*Tenant, error) {
	if err := requireSuperAdmin(actor); err != nil {
		return nil, err
	}
	v := &store.ValidationError{}
	name = checkText(v, "name", name, MaxNameLength)
	if err := v.Err(); err != nil {
		return nil, err
	}
	var t *Tenant
	err := s.createTx(ctx, func(tx *store.Tx) error {
		t = &Tenant{ID: store.NewID(), Name: name, IsActive: true, CreatedAt: tx.Now()}
		if err := s.store.CreateTenant(ctx, tx, t); err != nil {
			return err
		}
		_, err := tx.EmitData(ctx, EventTenantCreated, store.Scope{TenantID: t.ID}, t)
		return err
	})
	return t, err
}

// ListTenants lists live tenants, oldest first. Super admins only.
func (s *Service) ListTenants(ctx context.Context, actor *Identity, offset, limit int) ([]*Tenant, int, error) {
	if err := requireSuperAdmin(actor); err != nil {
		return nil, 0, err
	}
	return s.store.ListTenants(ctx, s.db, offset, limit)
}

// DeleteTenant soft-deletes a tenant; its keys and users stop working.
// Super admins only, and not their own tenant.
func (s *Service) DeleteTenant(ctx context.Context, actor *Identity, id string) error {
	if err := requireSuperAdmin(actor); err != nil {
		return err
	}
	if id == actor.TenantID {
		return store.Errorf(store.ErrConflict, "a super admin cannot delete its own tenant")
	}
	return s.tx(ctx, func(tx *store.Tx) error {
		if err := s.store.DeleteTenant(ctx, tx, id, tx.Now()); err != nil {
			return notFound(err, "tenant not found")
		}
		_, err := tx.EmitData(ctx, EventTenantDeleted, store.Scope{TenantID: id}, map[string]string{"id": id})
		return err
	})
}

// OrganizationInput creates an organization.
type OrganizationInput struct {
	Name string `json:"name" jsonschema:"required,minLength=1"`
	// TenantID defaults to the actor's tenant; naming another is for
	// super admins.
	TenantID string `json:"tenantId"`
	// ParentID places the organization under another of the same tenant.
	ParentID string `json:"parentId"`
}

// CreateOrganization creates an organization in the actor's tenant (or,
// for a super admin, the named one). A caller limited to some
// organizations creates only children of those (parentId is required and
// must be one of them).
func (s *Service) CreateOrganization(ctx context.Context, actor *Identity, in OrganizationInput) (*Organization, error) {
	tenantID, err := actingTenant(actor, in.TenantID)
	if err != nil {
		return nil, err
	}
	v := &store.ValidationError{}
	name := checkText(v, "name", in.Name, MaxNameLength)
	if err := v.Err(); err != nil {
		return nil, err
	}
	var o *Organization
	err = s.createTx(ctx, func(tx *store.Tx) error {
		if _, err := s.store.GetTenant(ctx, tx, tenantID); err != nil {
			return notFoundField(err, "tenantId", "tenant not found")
		}
		o = &Organization{ID: store.NewID(), TenantID: tenantID, Name: name, IsActive: true, CreatedAt: tx.Now()}
		if in.ParentID != "" {
			if _, err := s.store.GetOrganization(ctx, tx, tenantID, in.ParentID); err != nil {
				return notFoundField(err, "parentId", "organization not found in this tenant")
			}
			o.ParentID = &in.ParentID
		}
		if !managesOrganization(actor, in.ParentID) {
			return outOfOrganizationScope("parentId")
		}
		if err := s.store.CreateOrganization(ctx, tx, o); err != nil {
			return err
		}
		_, err := tx.EmitData(ctx, EventOrganizationCreated, store.Scope{TenantID: tenantID, OrganizationID: o.ID}, o)
		return err
	})
	return o, err
}

// ListOrganizations lists a tenant's organizations that the actor may
// see.
func (s *Service) ListOrganizations(ctx context.Context, actor *Identity, tenantID string) ([]*Organization, error) {
	tenantID, err := actingTenant(actor, tenantID)
	if err != nil {
		return nil, err
	}
	orgs, err := s.store.ListOrganizations(ctx, s.db, tenantID)
	if err != nil {
		return nil, err
	}
	if actor.IsSuperAdmin {
		return orgs, nil
	}
	visible := orgs[:0]
	for _, o := range orgs {
		if actor.Scope().AllowsOrganization(o.ID) {
			visible = append(visible, o)
		}
	}
	return visible, nil
}

// DeleteOrganization soft-deletes an organization of the actor's tenant (a
// super admin's: any tenant). The actor must manage the organization (else
// it is not found) and every organization under it (else ErrForbidden);
// one with live children is then a conflict. Its users and keys stop
// working.
func (s *Service) DeleteOrganization(ctx context.Context, actor *Identity, id string) error {
	return s.tx(ctx, func(tx *store.Tx) error {
		tenantID := actor.TenantID
		if actor.IsSuperAdmin {
			var err error
			if tenantID, err = s.store.OrganizationTenant(ctx, tx, id); err != nil {
				return notFound(err, "organization not found")
			}
		}
		if _, err := s.store.GetOrganization(ctx, tx, tenantID, id); err != nil {
			return notFound(err, "organization not found")
		}
		if !managesOrganization(actor, id) {
			return notFound(store.ErrNotFound, "organization not found")
		}
		orgs, err := s.store.ListOrganizations(ctx, tx, tenantID)
		if err != nil {
			return err
		}
		descendants := descendantsOf(orgs, id)
		for _, d := range descendants {
			if !managesOrganization(actor, d) {
				return store.Errorf(store.ErrForbidden, "organization has descendants outside your access")
			}
		}
		if n := countDirectChildren(orgs, id); n > 0 {
			return store.Errorf(store.ErrConflict, "organization has %d child organizations; delete them first", n)
		}
		if err := s.store.DeleteOrganization(ctx, tx, tenantID, id, tx.Now()); err != nil {
			return err
		}
		_, err = tx.EmitData(ctx, EventOrganizationDeleted, store.Scope{TenantID: tenantID, OrganizationID: id}, map[string]string{"id": id})
		return err
	})
}

// descendantsOf returns the ids of the organizations under id in orgs (a
// tenant's live organizations), at any depth.
func descendantsOf(orgs []*Organization, id string) []string {
	children := map[string][]string{}
	for _, o := range orgs {
		if o.ParentID != nil {
			children[*o.ParentID] = append(children[*o.ParentID], o.ID)
		}
	}
	var out []string
	seen := map[string]bool{id: true}
	for queue := []string{id}; len(queue) > 0; queue = queue[1:] {
		for _, c := range children[queue[0]] {
			if !seen[c] {
				seen[c] = true
				out = append(out, c)
				queue = append(queue, c)
			}
		}
	}
	return out
}

func countDirectChildren(orgs []*Organization, id string) int {
	n := 0
	for _, o := range orgs {
		if o.ParentID != nil && *o.ParentID == id {
			n++
		}
	}
	return n
}

// OrganizationNode is a node of the organization switcher's tree.
type OrganizationNode struct {
	ID       string  `json:"id"`
	Name     string  `json:"name"`
	ParentID *string `json:"parentId"`
	// Selectable is false for organizations shown only because an
	// accessible descendant sits under them.
	Selectable bool `json:"selectable"`
	// Children are the organizations directly under this one.
	Children []*OrganizationNode `json:"children"`
}

// Switcher is what the organization switcher shows: the organizations the
// caller may select, the selected one, and how to select another.
type Switcher struct {
	Items      []*OrganizationNode `json:"items"`
	SelectedID *string             `json:"selectedId"`
	TenantID   string              `json:"tenantId"`
	// CanManage is whether the caller may create, rename and delete
	// organizations (feature organizations.manage).
	CanManage bool `json:"canManage"`
	// IsSuperAdmin is whether the caller is a super admin.
	IsSuperAdmin bool `json:"isSuperAdmin"`
	// Tenants lists every tenant, for super admins (who may switch
	// tenant with the TenantCookie); empty otherwise.
	Tenants []*Tenant `json:"tenants"`
	// OrganizationCookie is the cookie that selects the active
	// organization on later calls; TenantCookie likewise for super admins.
	OrganizationCookie string `json:"organizationCookie"`
	TenantCookie       string `json:"tenantCookie"` // the cookie that selects the tenant
}

// Cookie names that persist a selection between calls.
const (
	SelectedOrganizationCookie = "app_selected_org"
	SelectedTenantCookie       = "app_selected_tenant"
)

// OrganizationSwitcher returns the organization tree the actor may access.
func (s *Service) OrganizationSwitcher(ctx context.Context, actor *Identity) (*Switcher, error) {
	orgs, err := s.store.ListOrganizations(ctx, s.db, actor.TenantID)
	if err != nil {
		return nil, err
	}
	sw := &Switcher{
		Items: []*OrganizationNode{}, TenantID: actor.TenantID, IsSuperAdmin: actor.IsSuperAdmin,
		CanManage: actor.HasFeature(FeatureOrganizationsManage), Tenants: []*Tenant{},
		OrganizationCookie: SelectedOrganizationCookie, TenantCookie: SelectedTenantCookie,
	}
	if actor.OrganizationID != "" {
		sw.SelectedID = &actor.OrganizationID
	}
	if actor.IsSuperAdmin {
		if sw.Tenants, _, err = s.store.ListTenants(ctx, s.db, 0, 1000); err != nil {
			return nil, err
		}
	}
	sw.Items = organizationTree(orgs, actor.Scope())
	return sw, nil
}

// organizationTree arranges orgs as a forest, keeping the organizations
// the scope allows and the ancestors needed to reach them.
func organizationTree(orgs []*Organization, sc store.Scope) []*OrganizationNode {
	nodes := map[string]*OrganizationNode{}
	for _, o := range orgs {
		nodes[o.ID] = &OrganizationNode{ID: o.ID, Name: o.Name, ParentID: o.ParentID,
			Selectable: sc.AllowsOrganization(o.ID), Children: []*OrganizationNode{}}
	}
	keep := map[string]bool{}
	for _, o := range orgs {
		if !nodes[o.ID].Selectable {
			continue
		}
		for id := o.ID; id != "" && !keep[id]; {
			keep[id] = true
			n := nodes[id]
			if n == nil || n.ParentID == nil {
				break
			}
			id = *n.ParentID
		}
	}
	roots := []*OrganizationNode{}
	for _, o := range orgs {
		n := nodes[o.ID]
		if !keep[o.ID] {
			continue
		}
		if n.ParentID != nil && keep[*n.ParentID] && nodes[*n.ParentID] != nil {
			parent := nodes[*n.ParentID]
			parent.Children = append(parent.Children, n)
		} else {
			roots = append(roots, n)
		}
	}
	return roots
}

// notFound turns a store "not found" into a not-found error with a message
// for the caller; other errors pass through.
func notFound(err error, msg string) error {
	if errors.Is(err, store.ErrNotFound) {
		return store.Errorf(store.ErrNotFound, "%s", msg)
	}
	return err
}

// notFoundField reports a reference in the request body that does not
// exist as a validation error on that field.
func notFoundField(err error, field, msg string) error {
	if errors.Is(err, store.ErrNotFound) {
		return store.Invalid(field, msg)
	}
	return err
}

// TenantName returns the name of a live tenant (store.ErrNotFound
// otherwise). Areas use it to label a tenant's rows.
func (s *Service) TenantName(ctx context.Context, id string) (string, error) {
	t, err := s.store.GetTenant(ctx, s.db, id)
	if err != nil {
		return "", err
	}
	return t.Name, nil
}
