package httpapi

import (
	"cmp"
	"context"
	"errors"
	"mime"
	"net/http"
	"time"

	"github.com/invopop/jsonschema"
	"github.com/tenantkit/tenantkit"
	"github.com/tenantkit/tenantkit/httpapi/internal/apikit"
	"github.com/tenantkit/tenantkit/identity"
	"github.com/tenantkit/tenantkit/ratelimit"
	"github.com/tenantkit/tenantkit/store"
)

// identityRoutes are the built-in identity endpoints: directory, roles,
// users, API keys, sign-in and password reset.
func identityRoutes(svc *identity.Service, limits *ratelimit.Policy) []apikit.Route {
	h := identityHandlers{svc: svc, limits: limits}
	page := apikit.PageQuery(50, 200)
	inTenant := func(what string) []apikit.Param {
		return append([]apikit.Param{apikit.TextQuery("tenantId", "The tenant whose "+what+" to list (default the caller's; another tenant is for super admins)")}, page...)
	}
	byID := func(what string) []apikit.Param {
		return []apikit.Param{{Name: "id", Required: true, Description: "The " + what + "'s id"}}
	}
	notFound, conflict := http.StatusNotFound, http.StatusConflict
	// The sign-in routes apply their rate limits in their handlers (429),
	// and a wrong email or password is 401.
	signIn := []int{http.StatusTooManyRequests}
	return []apikit.Route{
		// Directory
		{Method: "GET", Path: "/directory/tenants", Handler: h.listTenants,
			Access: apikit.Access{SuperAdmin: true},
			Doc:    apikit.Doc{Summary: "List tenants", Query: page, Response: apikit.PageResponse[*identity.Tenant]{}}},
		{Method: "POST", Path: "/directory/tenants", Handler: h.createTenant,
			Access: apikit.Access{SuperAdmin: true},
			Doc: apikit.Doc{Summary: "Create a tenant", Request: createTenantInput{}, Status: http.StatusCreated,
				Response: idResponse{}}},
		{Method: "DELETE", Path: "/directory/tenants", Handler: h.deleteTenant,
			Access: apikit.Access{SuperAdmin: true},
			Doc: apikit.Doc{Summary: "Delete a tenant (?id=)", Query: byID("tenant"), Response: apikit.OkFlag{},
				Errors: []int{notFound, conflict}}},
		{Method: "GET", Path: "/directory/organizations", Handler: h.listOrganizations,
			Access: apikit.Access{Features: []string{identity.FeatureOrganizationsView}},
			Doc: apikit.Doc{Summary: "List organizations", Query: inTenant("organizations"),
				Response: apikit.PageResponse[*identity.Organization]{}}},
		{Method: "POST", Path: "/directory/organizations", Handler: h.createOrganization,
			Access: apikit.Access{Features: []string{identity.FeatureOrganizationsManage}},
			Doc: apikit.Doc{Summary: "Create an organization", Request: identity.OrganizationInput{}, Status: http.StatusCreated,
				Response: idResponse{}}},
		{Method: "DELETE", Path: "/directory/organizations", Handler: h.deleteOrganization,
			Access: apikit.Access{Features: []string{identity.FeatureOrganizationsManage}},
			Doc: apikit.Doc{Summary: "Delete an organization (?id=)", Query: byID("organization"), Response: apikit.OkFlag{},
				Errors: []int{notFound, conflict}}},
		{Method: "GET", Path: "/directory/organization-switcher", Handler: h.switcher,
			Doc: apikit.Doc{Summary: "Organization tree the caller may access", Response: switcherBody{}}},

		// Roles and users
		{Method: "GET", Path: "/auth/roles", Handler: h.listRoles,
			Access: apikit.Access{Features: []string{identity.FeatureRolesView}},
			Doc:    apikit.Doc{Summary: "List roles", Query: inTenant("roles"), Response: apikit.PageResponse[*identity.Role]{}}},
		{Method: "POST", Path: "/auth/roles", Handler: h.createRole,
			Access: apikit.Access{Features: []string{identity.FeatureRolesManage}},
			Doc: apikit.Doc{Summary: "Create a role", Request: createRoleInput{}, Status: http.StatusCreated, Response: idResponse{},
				Errors: []int{conflict}}},
		{Method: "PUT", Path: "/auth/roles/acl", Handler: h.setACL,
			Access: apikit.Access{Features: []string{identity.FeatureRolesManage}},
			Doc:    apikit.Doc{Summary: "Set a role's features", Request: roleACLInput{}, Response: apikit.OkFlag{}, Errors: []int{notFound}}},
		{Method: "POST", Path: "/auth/users", Handler: h.createUser,
			Access: apikit.Access{Features: []string{identity.FeatureUsersManage}},
			Doc: apikit.Doc{Summary: "Create a user", Request: identity.UserInput{}, Status: http.StatusCreated,
				Response: idResponse{}, Errors: []int{conflict}}},
		{Method: "GET", Path: "/auth/users", Handler: h.listUsers,
			Access: apikit.Access{Features: []string{identity.FeatureUsersView}},
			Doc: apikit.Doc{Summary: "List users (?search= matches emails)",
				Description: "The live users of the caller's tenant (or tenantId's, for super admins), by email; a caller limited to some organizations sees only their users. Password hashes are never listed.",
				Query:       append([]apikit.Param{apikit.TextQuery("search", "Only users whose email contains this text, ignoring case")}, inTenant("users")...),
				Response:    apikit.PageResponse[*identity.User]{}}},
		{Method: "PUT", Path: "/auth/users", Handler: h.updateUser,
			Access: apikit.Access{Features: []string{identity.FeatureUsersManage}},
			Doc: apikit.Doc{Summary: "Change a user's roles or organization ({id, roles?, organizationId?})",
				Description: "Absent fields keep their value; roles replaces the user's roles (an empty list removes them). The user's sessions see the change on their next request, on every server.",
				Request:     identity.UserUpdate{}, Response: userItem{}, Errors: []int{notFound}}},
		{Method: "DELETE", Path: "/auth/users", Handler: h.deleteUser,
			Access: apikit.Access{Features: []string{identity.FeatureUsersManage}},
			Doc: apikit.Doc{Summary: "Delete a user (?id=); its sessions end at once",
				Description: "A soft delete: the user's sessions are refused by every server from the next request, and its dashboard visibility record is removed. A caller cannot delete itself (409).",
				Query:       byID("user"), Response: apikit.OkFlag{}, Errors: []int{notFound, conflict}}},
		{Method: "DELETE", Path: "/auth/roles", Handler: h.deleteRole,
			Access: apikit.Access{Features: []string{identity.FeatureRolesManage}},
			Doc: apikit.Doc{Summary: "Delete a role (?id=) no user or API key holds",
				Description: "409 while a live user or API key holds the role, and for a super-admin role. The role's dashboard visibility record is removed with it.",
				Query:       byID("role"), Response: apikit.OkFlag{}, Errors: []int{notFound, conflict}}},
		{Method: "GET", Path: "/auth/me", Handler: h.me, Doc: apikit.Doc{Summary: "The caller's identity", Response: meResponse{}}},

		// API keys
		{Method: "GET", Path: "/api_keys/keys", Handler: h.listKeys,
			Access: apikit.Access{Features: []string{identity.FeatureAPIKeysView}},
			Doc:    apikit.Doc{Summary: "List API keys", Query: inTenant("API keys"), Response: apikit.PageResponse[*identity.APIKey]{}}},
		{Method: "POST", Path: "/api_keys/keys", Handler: h.createKey, NoStore: true,
			Access: apikit.Access{Features: []string{identity.FeatureAPIKeysManage}},
			Doc: apikit.Doc{Summary: "Create an API key (the secret is shown once)", Request: identity.APIKeyInput{},
				Status: http.StatusCreated, Response: createKeyResponse{}, Errors: []int{conflict}}},
		{Method: "DELETE", Path: "/api_keys/keys", Handler: h.deleteKey,
			Access: apikit.Access{Features: []string{identity.FeatureAPIKeysManage}},
			Doc:    apikit.Doc{Summary: "Delete an API key (?id=)", Query: byID("API key"), Response: apikit.OkFlag{}, Errors: []int{notFound}}},

		// Sign-in (form bodies; JSON is accepted too)
		{Method: "POST", Path: "/login", Handler: h.login, ErrorBody: okFalseBody, NoStore: true,
			Access: apikit.Access{Public: true},
			Doc: apikit.Doc{Summary: "Sign in with email and password (a form-urlencoded, multipart or JSON body)",
				Request: loginForm{}, FormBody: true, Response: loginBody{},
				Errors: append([]int{http.StatusUnauthorized}, signIn...)}},
		{Method: "POST", Path: "/logout", Handler: h.logout, NoStore: true,
			Doc: apikit.Doc{Summary: "End the caller's session token",
				Description: "The token is refused by every server from the next request; the user's other sessions and API keys keep working. An API key is not a session (400).",
				Response:    apikit.OkFlag{}, Errors: []int{http.StatusBadRequest}}},
		{Method: "POST", Path: "/reset", Handler: h.requestReset, ErrorBody: okFalseBody,
			Access: apikit.Access{Public: true},
			Doc: apikit.Doc{Summary: "Request a password reset email (a form-urlencoded, multipart or JSON body)",
				Request: resetForm{}, FormBody: true, Response: apikit.OkFlag{}, Errors: signIn}},
		{Method: "POST", Path: "/reset/confirm", Handler: h.confirmReset, ErrorBody: okFalseBody,
			Access: apikit.Access{Public: true},
			Doc: apikit.Doc{Summary: "Set a new password with a reset token (a form-urlencoded, multipart or JSON body)",
				Request: confirmResetForm{}, FormBody: true, Response: apikit.OkFlag{}, Errors: signIn}},
	}
}

// loginForm documents the fields of POST /login.
type loginForm struct {
	Email    string `json:"email" jsonschema:"required,minLength=1"`
	Password string `json:"password" jsonschema:"required,minLength=1"`
	// TenantID names the tenant when the email has accounts in several.
	TenantID string `json:"tenantId"`
	// Tenant is tenantId's other name; tenantId wins when both are given.
	Tenant string `json:"tenant"`
}

// loginBody answers a successful sign-in with the session token.
type loginBody struct {
	OK    bool   `json:"ok"`
	Token string `json:"token"`
}

// resetForm documents the field of POST /reset.
type resetForm struct {
	Email string `json:"email" jsonschema:"required,minLength=1"`
}

// confirmResetForm documents the fields of POST /reset/confirm.
type confirmResetForm struct {
	Token string `json:"token" jsonschema:"required,minLength=1"`
	// Password is 8 to 256 bytes.
	Password string `json:"password" jsonschema:"required,maxLength=256"`
}

// createTenantInput is the body of POST /directory/tenants.
type createTenantInput struct {
	// Name is at most 120 characters once trimmed.
	Name string `json:"name" jsonschema:"required,minLength=1"`
}

// createRoleInput is the body of POST /auth/roles.
type createRoleInput struct {
	// Name is at most 120 characters once trimmed; unique in the tenant.
	Name string `json:"name" jsonschema:"required,minLength=1"`
	// TenantID defaults to the caller's; another tenant is for super
	// admins.
	TenantID string `json:"tenantId"`
}

// roleACLInput documents the body of PUT /auth/roles/acl, which the
// handler decodes into identity.ACLInput (the same fields, with the same
// validation tags). It is a copy because ACLInput's organizations is an
// identity.OptionalList, which tells absent (keep the role's
// organizations) from null (allow all) and reflects as an object; here it
// is what is sent, a nullable list.
type roleACLInput struct {
	RoleID        string   `json:"roleId" jsonschema:"required,minLength=1"`
	Features      []string `json:"features" jsonschema:"required,maxItems=500,maxLength=200,pattern=^([*]|[a-z0-9_]+([.][a-z0-9_]+)*([.][*])?)$"`
	IsSuperAdmin  *bool    `json:"isSuperAdmin" jsonschema_description:"Super admins only; absent or null keeps the role's flag"`
	Organizations []string `json:"organizations" jsonschema:"nullable" jsonschema_description:"Restricts the role to these organizations; null allows every organization; absent keeps the current ones"`
}

type identityHandlers struct {
	svc    *identity.Service
	limits *ratelimit.Policy
}

func actor(r *http.Request) *identity.Identity { return identity.IdentityFrom(r.Context()) }

// listOf pages a list the service already loaded whole.
func listOf[T any](w http.ResponseWriter, r *http.Request, all []T) error {
	p, err := apikit.ParsePage(r.URL.Query(), 50, 200)
	if err != nil {
		return err
	}
	start := min(p.Offset(), len(all))
	end := min(start+p.PageSize, len(all))
	return apikit.Encode(w, http.StatusOK, apikit.NewPage(all[start:end], len(all), p))
}

// pagedList runs a list method that pages in the database.
func pagedList[T any](w http.ResponseWriter, r *http.Request, list func(offset, limit int) ([]T, int, error)) error {
	p, err := apikit.ParsePage(r.URL.Query(), 50, 200)
	if err != nil {
		return err
	}
	items, total, err := list(p.Offset(), p.PageSize)
	if err != nil {
		return err
	}
	return apikit.Encode(w, http.StatusOK, apikit.NewPage(items, total, p))
}

type idResponse struct {
	ID string `json:"id"`
}

func (h identityHandlers) listTenants(w http.ResponseWriter, r *http.Request) error {
	return pagedList(w, r, func(offset, limit int) ([]*identity.Tenant, int, error) {
		return h.svc.ListTenants(r.Context(), actor(r), offset, limit)
	})
}

func (h identityHandlers) createTenant(w http.ResponseWriter, r *http.Request) error {
	in, err := apikit.Decode[createTenantInput](r)
	if err != nil {
		return err
	}
	t, err := h.svc.CreateTenant(r.Context(), actor(r), in.Name)
	if err != nil {
		return err
	}
	return apikit.Encode(w, http.StatusCreated, idResponse{t.ID})
}

func (h identityHandlers) deleteTenant(w http.ResponseWriter, r *http.Request) error {
	id, err := apikit.RequiredID(r)
	if err != nil {
		return err
	}
	if err := h.svc.DeleteTenant(r.Context(), actor(r), id); err != nil {
		return err
	}
	return apikit.Encode(w, http.StatusOK, apikit.OkResponse)
}

func (h identityHandlers) listOrganizations(w http.ResponseWriter, r *http.Request) error {
	orgs, err := h.svc.ListOrganizations(r.Context(), actor(r), r.URL.Query().Get("tenantId"))
	if err != nil {
		return err
	}
	return listOf(w, r, orgs)
}

func (h identityHandlers) createOrganization(w http.ResponseWriter, r *http.Request) error {
	in, err := apikit.Decode[identity.OrganizationInput](r)
	if err != nil {
		return err
	}
	o, err := h.svc.CreateOrganization(r.Context(), actor(r), in)
	if err != nil {
		return err
	}
	return apikit.Encode(w, http.StatusCreated, idResponse{o.ID})
}

func (h identityHandlers) deleteOrganization(w http.ResponseWriter, r *http.Request) error {
	id, err := apikit.RequiredID(r)
	if err != nil {
		return err
	}
	if err := h.svc.DeleteOrganization(r.Context(), actor(r), id); err != nil {
		return err
	}
	return apikit.Encode(w, http.StatusOK, apikit.OkResponse)
}

func (h identityHandlers) switcher(w http.ResponseWriter, r *http.Request) error {
	sw, err := h.svc.OrganizationSwitcher(r.Context(), actor(r))
	if err != nil {
		return err
	}
	return apikit.Encode(w, http.StatusOK, (*switcherBody)(sw))
}

// switcherBody is identity.Switcher (the same fields, so the same JSON),
// documented with switcherNode for its tree.
type switcherBody identity.Switcher

// JSONSchemaProperty documents the tree's nodes as switcherNode.
func (switcherBody) JSONSchemaProperty(prop string) any {
	if prop == "items" {
		return []*switcherNode(nil)
	}
	return nil
}

// switcherNode documents identity.OrganizationNode. A node's children
// are nodes: reflected as is, the schema's required children array would
// refer straight back to it, which libopenapi takes for an infinite
// circular reference (it does not count that an array may be empty), so
// the children's items refer to the node through an anyOf.
type switcherNode identity.OrganizationNode

// JSONSchemaProperty documents the children as switcherNodes.
func (switcherNode) JSONSchemaProperty(prop string) any {
	if prop == "children" {
		return []*switcherNode(nil)
	}
	return nil
}

// JSONSchemaExtend wraps the children's item reference in an anyOf, and
// lets parentId be null (a root's): the generator finds the pointers
// that may be null in the Go types it is given, and the nodes' type is
// reached only through JSONSchemaProperty.
func (switcherNode) JSONSchemaExtend(s *jsonschema.Schema) {
	if p, ok := s.Properties.Get("children"); ok && p.Items != nil && p.Items.Ref != "" {
		p.Items = &jsonschema.Schema{AnyOf: []*jsonschema.Schema{{Ref: p.Items.Ref}}}
	}
	if p, ok := s.Properties.Get("parentId"); ok && p.AnyOf == nil {
		s.Properties.Set("parentId", &jsonschema.Schema{AnyOf: []*jsonschema.Schema{p, {Type: "null"}}})
	}
}

func (h identityHandlers) listRoles(w http.ResponseWriter, r *http.Request) error {
	return pagedList(w, r, func(offset, limit int) ([]*identity.Role, int, error) {
		return h.svc.ListRoles(r.Context(), actor(r), r.URL.Query().Get("tenantId"), offset, limit)
	})
}

func (h identityHandlers) createRole(w http.ResponseWriter, r *http.Request) error {
	in, err := apikit.Decode[createRoleInput](r)
	if err != nil {
		return err
	}
	role, err := h.svc.CreateRole(r.Context(), actor(r), in.Name, in.TenantID)
	if err != nil {
		return err
	}
	return apikit.Encode(w, http.StatusCreated, idResponse{role.ID})
}

func (h identityHandlers) setACL(w http.ResponseWriter, r *http.Request) error {
	in, err := apikit.Decode[identity.ACLInput](r)
	if err != nil {
		return err
	}
	if _, err := h.svc.SetRoleACL(r.Context(), actor(r), in); err != nil {
		return err
	}
	return apikit.Encode(w, http.StatusOK, apikit.OkResponse)
}

func (h identityHandlers) createUser(w http.ResponseWriter, r *http.Request) error {
	in, err := apikit.Decode[identity.UserInput](r)
	if err != nil {
		return err
	}
	u, err := h.svc.CreateUser(r.Context(), actor(r), in)
	if err != nil {
		return err
	}
	return apikit.Encode(w, http.StatusCreated, idResponse{u.ID})
}

// userItem answers PUT /auth/users with the changed user.
type userItem struct {
	Item *identity.User `json:"item"`
}

func (h identityHandlers) listUsers(w http.ResponseWriter, r *http.Request) error {
	return pagedList(w, r, func(offset, limit int) ([]*identity.User, int, error) {
		return h.svc.ListUsers(r.Context(), actor(r), r.URL.Query().Get("tenantId"), r.URL.Query().Get("search"), offset, limit)
	})
}

func (h identityHandlers) updateUser(w http.ResponseWriter, r *http.Request) error {
	in, err := apikit.Decode[identity.UserUpdate](r)
	if err != nil {
		return err
	}
	u, err := h.svc.UpdateUser(r.Context(), actor(r), in)
	if err != nil {
		return err
	}
	return apikit.Encode(w, http.StatusOK, userItem{Item: u})
}

func (h identityHandlers) deleteUser(w http.ResponseWriter, r *http.Request) error {
	id, err := apikit.RequiredID(r)
	if err != nil {
		return err
	}
	if err := h.svc.DeleteUser(r.Context(), actor(r), id); err != nil {
		return err
	}
	return apikit.Encode(w, http.StatusOK, apikit.OkResponse)
}

func (h identityHandlers) deleteRole(w http.ResponseWriter, r *http.Request) error {
	id, err := apikit.RequiredID(r)
	if err != nil {
		return err
	}
	if err := h.svc.DeleteRole(r.Context(), actor(r), id); err != nil {
		return err
	}
	return apikit.Encode(w, http.StatusOK, apikit.OkResponse)
}

// logout ends the session token the request was authenticated with.
func (h identityHandlers) logout(w http.ResponseWriter, r *http.Request) error {
	if actor(r).UserID == "" {
		return identity.ErrNotASession
	}
	if err := h.svc.Logout(r.Context(), credential(r).Secret); err != nil {
		return err
	}
	return apikit.Encode(w, http.StatusOK, apikit.OkResponse)
}

// meResponse is GET /auth/me.
type meResponse struct {
	TenantID       string   `json:"tenantId"`
	OrganizationID *string  `json:"organizationId"`
	UserID         *string  `json:"userId,omitempty"`
	APIKeyID       *string  `json:"apiKeyId,omitempty"`
	Roles          []string `json:"roles"`
	Features       []string `json:"features"`
	IsSuperAdmin   bool     `json:"isSuperAdmin"`
}

func (h identityHandlers) me(w http.ResponseWriter, r *http.Request) error {
	id := actor(r)
	return apikit.Encode(w, http.StatusOK, meResponse{
		TenantID: id.TenantID, OrganizationID: optional(id.OrganizationID), UserID: optional(id.UserID),
		APIKeyID: optional(id.APIKeyID), Roles: apikit.NonNil(id.Roles), Features: apikit.NonNil(id.Features), IsSuperAdmin: id.IsSuperAdmin,
	})
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func (h identityHandlers) listKeys(w http.ResponseWriter, r *http.Request) error {
	return pagedList(w, r, func(offset, limit int) ([]*identity.APIKey, int, error) {
		return h.svc.ListAPIKeys(r.Context(), actor(r), r.URL.Query().Get("tenantId"), offset, limit)
	})
}

// createKeyResponse is the one response that shows a key's secret.
type createKeyResponse struct {
	ID             string             `json:"id"`
	Name           string             `json:"name"`
	KeyPrefix      string             `json:"keyPrefix"`
	Secret         string             `json:"secret"`
	TenantID       string             `json:"tenantId"`
	OrganizationID *string            `json:"organizationId"`
	Roles          []identity.RoleRef `json:"roles"`
	ExpiresAt      *time.Time         `json:"expiresAt"`
}

func (h identityHandlers) createKey(w http.ResponseWriter, r *http.Request) error {
	in, err := apikit.Decode[identity.APIKeyInput](r)
	if err != nil {
		return err
	}
	k, secret, err := h.svc.CreateAPIKey(r.Context(), actor(r), in)
	if err != nil {
		return err
	}
	return apikit.Encode(w, http.StatusCreated, createKeyResponse{ID: k.ID, Name: k.Name, KeyPrefix: k.KeyPrefix, Secret: secret,
		TenantID: k.TenantID, OrganizationID: k.OrganizationID, Roles: k.Roles, ExpiresAt: k.ExpiresAt})
}

func (h identityHandlers) deleteKey(w http.ResponseWriter, r *http.Request) error {
	id, err := apikit.RequiredID(r)
	if err != nil {
		return err
	}
	if err := h.svc.DeleteAPIKey(r.Context(), actor(r), id); err != nil {
		return err
	}
	return apikit.Encode(w, http.StatusOK, apikit.OkResponse)
}

// formValues reads a sign-in body: application/x-www-form-urlencoded or
// multipart/form-data as documented, and JSON for convenience.
func formValues(r *http.Request, names ...string) (map[string]string, error) {
	out := map[string]string{}
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if ct == "application/json" {
		m, err := apikit.Decode[map[string]any](r)
		if err != nil {
			return nil, err
		}
		for _, n := range names {
			if s, ok := m[n].(string); ok {
				out[n] = s
			} else if m[n] != nil {
				return nil, store.Invalid(n, "must be a string")
			}
		}
		return out, nil
	}
	var err error
	if ct == "multipart/form-data" {
		err = r.ParseMultipartForm(64 << 10)
	} else {
		err = r.ParseForm()
	}
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return nil, apikit.ErrBodyTooLarge
		}
		return nil, store.Errorf(store.ErrInvalid, "Malformed form body")
	}
	for _, n := range names {
		out[n] = r.PostFormValue(n)
	}
	return out, nil
}

// okFalseBody is the sign-in routes' error body: {ok:false, error}.
func okFalseBody(status int, _ error, message string, details map[string]string) any {
	body := map[string]any{"ok": false, "error": message}
	if len(details) > 0 {
		body["details"] = details
	}
	return body
}

// The sign-in handlers apply the IP limit before reading the body and the
// account limit (client address and email hash) before any validation or
// database work, so a refused request costs nothing.

func (h identityHandlers) login(w http.ResponseWriter, r *http.Request) error {
	if err := h.limits.CheckAuth(r, ratelimit.Login); err != nil {
		return err
	}
	f, err := formValues(r, "email", "password", "tenantId", "tenant")
	if err != nil {
		return err
	}
	if err := h.limits.CheckAuthAccount(r, ratelimit.Login, f["email"]); err != nil {
		return err
	}
	v := &store.ValidationError{}
	if f["email"] == "" {
		v.Add("email", "is required")
	}
	if f["password"] == "" {
		v.Add("password", "is required")
	}
	if err := v.Err(); err != nil {
		return err
	}
	token, _, err := h.svc.Login(r.Context(), f["email"], f["password"], cmp.Or(f["tenantId"], f["tenant"]))
	if errors.Is(err, identity.ErrInvalidLogin) {
		return loginFailed{}
	}
	if err != nil {
		return err
	}
	h.limits.ResetAuthAccount(r, ratelimit.Login, f["email"])
	return apikit.Encode(w, http.StatusOK, loginBody{OK: true, Token: token})
}

// loginFailed answers a wrong email or password with 401, the same for
// both.
type loginFailed struct{}

func (loginFailed) Error() string         { return "Invalid email or password" }
func (loginFailed) Unwrap() error         { return identity.ErrUnauthenticated }
func (loginFailed) PublicMessage() string { return "Invalid email or password" }

func (h identityHandlers) requestReset(w http.ResponseWriter, r *http.Request) error {
	if err := h.limits.CheckAuth(r, ratelimit.PasswordReset); err != nil {
		return err
	}
	f, err := formValues(r, "email")
	if err != nil {
		return err
	}
	if err := h.limits.CheckAuthAccount(r, ratelimit.PasswordReset, f["email"]); err != nil {
		return err
	}
	if f["email"] == "" {
		return store.Invalid("email", "is required")
	}
	// The answer is the same whether or not the account exists.
	if err := h.svc.RequestPasswordReset(r.Context(), f["email"]); err != nil {
		return err
	}
	return apikit.Encode(w, http.StatusOK, apikit.OkResponse)
}

func (h identityHandlers) confirmReset(w http.ResponseWriter, r *http.Request) error {
	if err := h.limits.CheckAuth(r, ratelimit.PasswordResetConfirm); err != nil {
		return err
	}
	f, err := formValues(r, "token", "password")
	if err != nil {
		return err
	}
	if err := h.svc.ConfirmPasswordReset(r.Context(), f["token"], f["password"]); err != nil {
		return err
	}
	return apikit.Encode(w, http.StatusOK, apikit.OkResponse)
}

// ready answers 200 {"status":"ready"} when the Kit can serve
// (tenantkit.Kit.Ready), else 503 {"status":"unavailable","reason":…}
// with the reason (database, migrations or jobs) and the cause logged: a
// load balancer holds traffic back from a process still starting or cut
// off from its database.
func (a *api) ready(w http.ResponseWriter, r *http.Request) error {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	err := a.kit.Ready(ctx)
	if err == nil {
		return apikit.Encode(w, http.StatusOK, statusBody{Status: "ready"})
	}
	reason := "database"
	switch {
	case errors.Is(err, tenantkit.ErrMigrationsPending):
		reason = "migrations"
	case errors.Is(err, tenantkit.ErrJobsNotRunning):
		reason = "jobs"
	}
	a.logger.WarnContext(r.Context(), "httpapi: not ready", "reason", reason, "err", err)
	return apikit.Encode(w, http.StatusServiceUnavailable, statusBody{Status: "unavailable", Reason: reason})
}

// statusBody is the body of /health and /ready.
type statusBody struct {
	Status string `json:"status" jsonschema:"enum=ok,enum=ready,enum=unavailable"`
	// Reason says what is not ready: database, migrations or jobs.
	Reason string `json:"reason,omitempty" jsonschema:"enum=database,enum=migrations,enum=jobs"`
}

func (a *api) health(w http.ResponseWriter, r *http.Request) error {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	if err := a.kit.DB.Ping(ctx); err != nil {
		a.logger.ErrorContext(r.Context(), "httpapi: health check failed", "err", err)
		return apikit.Encode(w, http.StatusServiceUnavailable, statusBody{Status: "unavailable"})
	}
	return apikit.Encode(w, http.StatusOK, statusBody{Status: "ok"})
}
