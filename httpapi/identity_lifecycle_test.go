package httpapi

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// lifecycleFixture is tenant A with two organizations (OrgID and org2)
// and tenant B, an admin key of A holding "*" and a role "viewer".
type lifecycleFixture struct {
	a, b   tenantFixture
	org2   string
	admin  string // key of A, role "*" for every organization
	viewer string // role of A, webhooks.view
}

func newLifecycleFixture(e *testEnv) lifecycleFixture {
	e.t.Helper()
	f := lifecycleFixture{a: e.newTenant("Lifecycle A " + randomHex(3)), b: e.newTenant("Lifecycle B " + randomHex(3))}
	f.org2 = e.do("POST", "/api/directory/organizations", e.superKey,
		map[string]string{"name": "org2", "tenantId": f.a.ID}).expect(201).JSON()["id"].(string)
	f.admin = e.newKey(f.a, "*")
	f.viewer = e.newRole(f.a, nil, "webhooks.view")
	return f
}

// newUser creates a user (as the super admin) and returns its id and email.
func (e *testEnv) lcUser(org string, roles ...string) (id, email string) {
	e.t.Helper()
	email = "lc." + randomHex(6) + "@lifecycle.test"
	if roles == nil {
		roles = []string{}
	}
	id = e.do("POST", "/api/auth/users", e.superKey, map[string]any{"email": email, "password": "lifecycle-password",
		"organizationId": org, "roles": roles}).expect(201).JSON()["id"].(string)
	return id, email
}

func (e *testEnv) lcLogin(email string) string {
	e.t.Helper()
	return e.postForm("/api/login", map[string]string{"email": email, "password": "lifecycle-password"}).expect(200).JSON()["token"].(string)
}

func (e *testEnv) asToken(method, path, token string, body any) *response {
	e.t.Helper()
	return e.send(method, path, body, bearer(token))
}

// lcErr expects status and an error message containing want.
func lcErr(t *testing.T, r *response, status int, want string) {
	t.Helper()
	r.expect(status)
	if !strings.Contains(string(r.Body), want) {
		t.Errorf("%d body %s does not contain %q", status, r.Body, want)
	}
}

func lcItemIDs(t *testing.T, body map[string]any) []string {
	t.Helper()
	out := []string{}
	for _, it := range body["items"].([]any) {
		out = append(out, it.(map[string]any)["id"].(string))
	}
	return out
}

// TestIdentityUserList: the paged list of the caller's tenant, its
// organization scope, search, and no password hash.
func TestIdentityUserList(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		e := newTestEnv(t, db)
		f := newLifecycleFixture(e)
		u1, email1 := e.lcUser(f.a.OrgID, f.viewer)
		u2, _ := e.lcUser(f.org2)
		e.lcUser(f.b.OrgID) // tenant B's: never listed to A

		body := e.do("GET", "/api/auth/users", f.admin, nil).expect(200).JSON()
		expectKeys(t, "user page", body, "items", "total", "page", "pageSize", "totalPages")
		is.Equal(body["total"], float64(2))
		is.True(!strings.Contains(strings.ToLower(string(e.do("GET", "/api/auth/users", f.admin, nil).Body)), "password"))
		for _, it := range body["items"].([]any) {
			expectKeys(t, "user", it.(map[string]any), "id", "tenantId", "email", "organizationId", "roles", "createdAt", "lastLoginAt")
		}
		// Search (case-insensitive, within the email) and paging.
		found := e.do("GET", "/api/auth/users?search="+strings.ToUpper(email1[:9]), f.admin, nil).expect(200).JSON()
		is.Equal(lcItemIDs(t, found), []string{u1})
		item := found["items"].([]any)[0].(map[string]any)
		is.Equal(item["roles"], []any{map[string]any{"id": f.viewer, "name": item["roles"].([]any)[0].(map[string]any)["name"]}})
		is.Equal(item["lastLoginAt"], nil)
		is.Equal(e.do("GET", "/api/auth/users?search=100%25", f.admin, nil).expect(200).JSON()["total"], float64(0))
		p := e.do("GET", "/api/auth/users?pageSize=1&page=2", f.admin, nil).expect(200).JSON()
		is.Equal(p["totalPages"], float64(2))
		is.Equal(len(p["items"].([]any)), 1)
		e.do("GET", "/api/auth/users?pageSize=0", f.admin, nil).expect(400)
		lcErr(t, e.do("GET", "/api/auth/users?search="+strings.Repeat("x", 300), f.admin, nil), 400, "search")

		// Signing in records lastLoginAt.
		e.lcLogin(email1)
		found = e.do("GET", "/api/auth/users?search="+email1, f.admin, nil).expect(200).JSON()
		is.True(found["items"].([]any)[0].(map[string]any)["lastLoginAt"] != nil)

		// An org-limited caller lists only its organizations' users.
		limited, _ := e.keyWith(f.a, f.org2, e.newRole(f.a, []string{f.org2}, "auth.users.view"))
		is.Equal(lcItemIDs(t, e.do("GET", "/api/auth/users", limited, nil).expect(200).JSON()), []string{u2})
		// Tenant B's admin sees only B's user.
		is.Equal(e.do("GET", "/api/auth/users", e.newKey(f.b, "auth.users.view"), nil).expect(200).JSON()["total"], float64(1))
		// The feature is needed, and named.
		lcErr(t, e.do("GET", "/api/auth/users", e.newKey(f.a, "auth.users.manage"), nil), 403, "auth.users.view")
	})
}

// TestIdentityUserUpdate: roles and organization changes, their scope
// rules, bad input, and sessions seeing the change at once.
func TestIdentityUserUpdate(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		e := newTestEnv(t, db)
		f := newLifecycleFixture(e)
		u1, email1 := e.lcUser(f.a.OrgID, f.viewer)
		u2, _ := e.lcUser(f.org2)
		u3, _ := e.lcUser(f.b.OrgID)
		tok := e.lcLogin(email1)
		is.Equal(e.asToken("GET", "/api/auth/me", tok, nil).expect(200).JSON()["features"], []any{"webhooks.view"})

		put := func(key string, body any) *response { return e.do("PUT", "/api/auth/users", key, body) }
		// Roles emptied: the session holds nothing on its next request.
		item := put(f.admin, map[string]any{"id": u1, "roles": []string{}}).expect(200).JSON()["item"].(map[string]any)
		is.Equal(item["roles"], []any{})
		is.Equal(item["organizationId"], f.a.OrgID)
		is.Equal(e.asToken("GET", "/api/auth/me", tok, nil).expect(200).JSON()["features"], []any{})
		// Roles given back (by name too), organization moved.
		second := e.newRole(f.a, nil, "webhooks.manage")
		item = put(f.admin, map[string]any{"id": u1, "roles": []string{f.viewer, second}, "organizationId": f.org2}).expect(200).JSON()["item"].(map[string]any)
		is.Equal(len(item["roles"].([]any)), 2)
		is.Equal(item["organizationId"], f.org2)
		// Absent fields keep their value.
		item = put(f.admin, map[string]any{"id": u1}).expect(200).JSON()["item"].(map[string]any)
		is.Equal(len(item["roles"].([]any)), 2)

		// Bad input names the field; nothing changes.
		lcErr(t, put(f.admin, map[string]any{}), 400, "id")
		lcErr(t, put(f.admin, map[string]any{"id": u1, "organizationId": "nope"}), 400, "organizationId")
		lcErr(t, put(f.admin, map[string]any{"id": u1, "organizationId": f.b.OrgID}), 400, "organizationId")
		lcErr(t, put(f.admin, map[string]any{"id": u1, "roles": []string{"no such role"}}), 400, "roles")
		lcErr(t, put(f.admin, map[string]any{"id": u1, "roles": "x"}), 400, "roles")
		item = put(f.admin, map[string]any{"id": u1}).expect(200).JSON()["item"].(map[string]any)
		is.Equal(item["organizationId"], f.org2)
		// Another tenant's user is not found; so is an unknown one.
		lcErr(t, put(f.admin, map[string]any{"id": u3, "roles": []string{}}), 404, "user not found")
		lcErr(t, put(f.admin, map[string]any{"id": "nope"}), 404, "user not found")

		// An org-limited manager: only its organization's users, only
		// roles it could grant, never a move out of its scope.
		limitedRole := e.newRole(f.a, []string{f.org2}, "auth.users.manage", "auth.users.view", "webhooks.view")
		limited, _ := e.keyWith(f.a, f.org2, limitedRole)
		lcErr(t, put(limited, map[string]any{"id": u2, "organizationId": f.a.OrgID}), 403, "organizationId")
		lcErr(t, put(limited, map[string]any{"id": u2, "roles": []string{f.viewer}}), 403, "cannot grant")
		narrow := e.newRole(f.a, []string{f.org2}, "webhooks.view")
		put(limited, map[string]any{"id": u2, "roles": []string{narrow}}).expect(200)
		// u1 now sits in org2 but holds roles above the limited caller.
		lcErr(t, put(limited, map[string]any{"id": u1, "roles": []string{}}), 403, "you do not")
		put(f.admin, map[string]any{"id": u1, "organizationId": f.a.OrgID}).expect(200)
		lcErr(t, put(limited, map[string]any{"id": u1, "roles": []string{}}), 404, "user not found")
		// The feature is needed, and named.
		lcErr(t, put(e.newKey(f.a, "auth.users.view"), map[string]any{"id": u1}), 403, "auth.users.manage")
	})
}

// TestIdentityUserDelete: a soft delete that ends the user's sessions at
// once and removes its dashboard visibility record; not oneself.
func TestIdentityUserDelete(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		e := newTestEnv(t, db)
		f := newLifecycleFixture(e)
		u1, email1 := e.lcUser(f.a.OrgID, f.viewer)
		u2, _ := e.lcUser(f.org2)
		u3, _ := e.lcUser(f.b.OrgID)
		tok := e.lcLogin(email1)
		e.asToken("GET", "/api/auth/me", tok, nil).expect(200)
		e.do("PUT", "/api/dashboards/users/widgets", f.admin, map[string]any{"userId": u1, "mode": "override", "widgetIds": []string{}}).expect(200)
		is.Equal(lcCount(t, db, `SELECT count(*) FROM dashboard_user_widgets WHERE user_id = $1`, u1), 1)

		del := func(key, id string) *response { return e.do("DELETE", "/api/auth/users?id="+id, key, nil) }
		lcErr(t, del(f.admin, ""), 400, "id")
		lcErr(t, del(f.admin, u3), 404, "user not found") // tenant B's
		limited, _ := e.keyWith(f.a, f.org2, e.newRole(f.a, []string{f.org2}, "auth.users.manage", "webhooks.view"))
		lcErr(t, del(limited, u1), 404, "user not found") // outside its organizations
		lcErr(t, del(e.newKey(f.a, "auth.users.view"), u1), 403, "auth.users.manage")

		is.Equal(del(f.admin, u1).expect(200).JSON(), map[string]any{"ok": true})
		e.asToken("GET", "/api/auth/me", tok, nil).expect(401)
		e.postForm("/api/login", map[string]string{"email": email1, "password": "lifecycle-password"}).expect(401)
		is.Equal(lcCount(t, db, `SELECT count(*) FROM dashboard_user_widgets WHERE user_id = $1`, u1), 0)
		lcErr(t, del(f.admin, u1), 404, "user not found")
		users := e.do("GET", "/api/auth/users", f.admin, nil).expect(200).JSON()
		is.Equal(users["total"], float64(1))
		is.True(!slices.Contains(lcItemIDs(t, users), u1)) // gone from the list
		del(limited, u2).expect(200)
		is.Equal(e.do("GET", "/api/auth/users", e.newKey(f.b, "auth.users.view"), nil).expect(200).JSON()["total"], float64(1))

		// A user cannot delete itself.
		adminRole := e.newRole(f.a, nil, "auth.users.manage")
		self, selfEmail := e.lcUser(f.a.OrgID, adminRole)
		selfTok := e.lcLogin(selfEmail)
		lcErr(t, e.asToken("DELETE", "/api/auth/users?id="+self, selfTok, nil), 409, "itself")
		e.asToken("GET", "/api/auth/me", selfTok, nil).expect(200)
	})
}

// TestIdentityRoleDelete: refused while held, for super-admin roles and
// out of scope; removes the role's visibility record.
func TestIdentityRoleDelete(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		e := newTestEnv(t, db)
		f := newLifecycleFixture(e)
		del := func(key, id string) *response { return e.do("DELETE", "/api/auth/roles?id="+id, key, nil) }
		u1, _ := e.lcUser(f.a.OrgID, f.viewer)
		_, keyID := e.keyWith(f.a, f.a.OrgID, f.viewer)
		e.do("PUT", "/api/dashboards/roles/widgets", f.admin, map[string]any{"roleId": f.viewer, "widgetIds": []string{}}).expect(200)

		lcErr(t, del(f.admin, f.viewer), 409, "held by 1 users and 1 API keys")
		e.do("PUT", "/api/auth/users", f.admin, map[string]any{"id": u1, "roles": []string{}}).expect(200)
		lcErr(t, del(f.admin, f.viewer), 409, "held by 0 users and 1 API keys")
		e.do("DELETE", "/api/api_keys/keys?id="+keyID, f.admin, nil).expect(200)
		is.Equal(lcCount(t, db, `SELECT count(*) FROM dashboard_role_widgets WHERE role_id = $1`, f.viewer), 1)
		is.Equal(del(f.admin, f.viewer).expect(200).JSON(), map[string]any{"ok": true})
		is.Equal(lcCount(t, db, `SELECT count(*) FROM dashboard_role_widgets WHERE role_id = $1`, f.viewer), 0)
		lcErr(t, del(f.admin, f.viewer), 404, "role not found")
		is.True(!slices.Contains(lcItemIDs(t, e.do("GET", "/api/auth/roles", f.admin, nil).expect(200).JSON()), f.viewer)) // gone from the list
		e.do("PUT", "/api/auth/users", f.admin, map[string]any{"id": u1, "roles": []string{f.viewer}}).expect(400)

		// A super-admin role is never deleted.
		sa := e.newRole(f.a, nil)
		e.do("PUT", "/api/auth/roles/acl", e.superKey, map[string]any{"roleId": sa, "features": []string{}, "isSuperAdmin": true}).expect(200)
		lcErr(t, del(e.superKey, sa), 409, "super-admin")
		// Scope: another tenant's role, a role wider than a limited
		// caller, a missing id, a missing feature.
		other := e.newRole(f.b, nil, "webhooks.view")
		lcErr(t, del(f.admin, other), 404, "role not found")
		wide := e.newRole(f.a, nil, "webhooks.view")
		limited, _ := e.keyWith(f.a, f.org2, e.newRole(f.a, []string{f.org2}, "auth.roles.manage", "webhooks.view"))
		lcErr(t, del(limited, wide), 404, "role not found")
		narrow := e.newRole(f.a, []string{f.org2}, "webhooks.view")
		del(limited, narrow).expect(200)
		lcErr(t, del(f.admin, ""), 400, "id")
		lcErr(t, del(e.newKey(f.a, "auth.roles.view"), wide), 403, "auth.roles.manage")
		del(e.newKey(f.b, "*"), other).expect(200)
	})
}

// TestIdentityLogout: the caller's session token ends; its other sessions
// and API keys keep working.
func TestIdentityLogout(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		e := newTestEnv(t, db)
		f := newLifecycleFixture(e)
		_, email := e.lcUser(f.a.OrgID, f.viewer)
		tok1, tok2 := e.lcLogin(email), e.lcLogin(email)
		e.asToken("GET", "/api/auth/me", tok1, nil).expect(200)
		is.Equal(e.asToken("POST", "/api/logout", tok1, nil).expect(200).JSON(), map[string]any{"ok": true})
		e.asToken("GET", "/api/auth/me", tok1, nil).expect(401)
		e.asToken("POST", "/api/logout", tok1, nil).expect(401)
		e.asToken("GET", "/api/auth/me", tok2, nil).expect(200)
		// An API key is not a session: refused, and it keeps working.
		lcErr(t, e.do("POST", "/api/logout", f.admin, nil), 400, "session")
		e.do("GET", "/api/auth/me", f.admin, nil).expect(200)
		e.send("POST", "/api/logout", nil, func(r *http.Request) {}).expect(401)
	})
}

func lcCount(t *testing.T, db *store.DB, query string, args ...any) int {
	t.Helper()
	var n int
	if err := db.QueryRow(t.Context(), query, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
