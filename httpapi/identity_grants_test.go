package httpapi

import (
	"net/http"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// grantFixture is a tenant with three organizations (org1 with a child
// org1c, org2, org3) and a role holding "*" for every organization, made
// by the super admin.
type grantFixture struct {
	tenantFixture
	org1c, org2, org3 string
	adminRole         string
}

func (e *testEnv) newGrantFixture() grantFixture {
	e.t.Helper()
	tf := e.newTenant("Grants")
	org := func(name, parent string) string {
		return e.do("POST", "/api/directory/organizations", e.superKey,
			map[string]string{"name": name, "tenantId": tf.ID, "parentId": parent}).expect(201).JSON()["id"].(string)
	}
	g := grantFixture{tenantFixture: tf}
	g.org1c = org("org1 child", tf.OrgID)
	g.org2 = org("org2", "")
	g.org3 = org("org3", "")
	g.adminRole = e.newRole(tf, nil, "*")
	return g
}

// newRole creates, as the super admin, a role of the tenant with features,
// limited to orgs (all organizations when orgs is nil).
func (e *testEnv) newRole(tf tenantFixture, orgs []string, features ...string) string {
	e.t.Helper()
	id := e.do("POST", "/api/auth/roles", e.superKey, map[string]string{"name": "role-" + randomHex(4), "tenantId": tf.ID}).expect(201).JSON()["id"].(string)
	if features == nil {
		features = []string{}
	}
	e.do("PUT", "/api/auth/roles/acl", e.superKey, map[string]any{"roleId": id, "features": features, "organizations": orgs}).expect(200)
	return id
}

// keyWith creates, as the super admin, a key of org holding roles.
func (e *testEnv) keyWith(tf tenantFixture, org string, roles ...string) (secret, id string) {
	e.t.Helper()
	k := e.do("POST", "/api/api_keys/keys", e.superKey, map[string]any{"name": "k", "tenantId": tf.ID, "organizationId": org, "roles": roles}).expect(201).JSON()
	return k["secret"].(string), k["id"].(string)
}

// forbidden expects a 403 whose message contains want.
func forbidden(t *testing.T, r *response, want string) {
	t.Helper()
	r.expect(403)
	if msg, _ := r.JSON()["error"].(string); !strings.Contains(msg, want) {
		t.Errorf("403 message %q does not contain %q", msg, want)
	}
}

// TestNoEscalationThroughAPIKeys: a key that manages keys hands out only
// roles within its own features and organizations (finding 1, first
// repro, and finding 2's key in another organization).
func TestNoEscalationThroughAPIKeys(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		e := newTestEnv(t, db)
		g := e.newGrantFixture()
		manager, _ := e.keyWith(g.tenantFixture, g.OrgID, e.newRole(g.tenantFixture, []string{g.OrgID}, "api_keys.manage", "api_keys.view"))

		// The repro: the tenant's admin role (features *) is refused, by id and by name.
		forbidden(t, e.do("POST", "/api/api_keys/keys", manager, map[string]any{"name": "x", "roles": []string{g.adminRole}}), "cannot grant features you do not hold: *")
		// A role within its features but for every organization is refused too.
		wide := e.newRole(g.tenantFixture, nil, "api_keys.view")
		forbidden(t, e.do("POST", "/api/api_keys/keys", manager, map[string]any{"name": "x", "roles": []string{wide}}), "every organization")
		// A role limited to another organization is refused.
		other := e.newRole(g.tenantFixture, []string{g.org2}, "api_keys.view")
		forbidden(t, e.do("POST", "/api/api_keys/keys", manager, map[string]any{"name": "x", "roles": []string{other}}), "outside your access")
		// A key in another organization, or a tenant-level key, is out of scope.
		narrow := e.newRole(g.tenantFixture, []string{g.OrgID}, "api_keys.view")
		forbidden(t, e.do("POST", "/api/api_keys/keys", manager, map[string]any{"name": "x", "roles": []string{narrow}, "organizationId": g.org2}), "organizationId")

		// Within its access it works, and the new key holds only what was granted.
		created := e.do("POST", "/api/api_keys/keys", manager, map[string]any{"name": "ok", "roles": []string{narrow}}).expect(201).JSON()
		is.Equal(created["organizationId"], g.OrgID)
		me := e.do("GET", "/api/auth/me", created["secret"].(string), nil).expect(200).JSON()
		is.Equal(me["features"], []any{"api_keys.view"})

		// Nothing was created by the refused calls.
		is.Equal(e.do("GET", "/api/api_keys/keys?tenantId="+g.ID, e.superKey, nil).expect(200).JSON()["total"], float64(2))
	})
}

// TestNoEscalationThroughUsers: a user manager creates users only with
// roles it may grant, in organizations it manages (finding 1, second
// repro).
func TestNoEscalationThroughUsers(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		e := newTestEnv(t, db)
		g := e.newGrantFixture()
		manager, _ := e.keyWith(g.tenantFixture, g.OrgID, e.newRole(g.tenantFixture, nil, "auth.users.manage"))
		user := func(email string, org string, roles ...string) *response {
			return e.do("POST", "/api/auth/users", manager, map[string]any{"email": email, "password": "long enough password", "organizationId": org, "roles": roles})
		}

		forbidden(t, user("admin@grants.test", g.OrgID, g.adminRole), "cannot grant features you do not hold: *")
		usersRole := e.newRole(g.tenantFixture, nil, "auth.users.manage")
		user("peer@grants.test", g.OrgID, usersRole).expect(201)

		// Signing in as the refused user is impossible; the created one holds what was granted.
		e.postForm("/api/login", map[string]string{"email": "admin@grants.test", "password": "long enough password"}).expect(401)
		token := e.postForm("/api/login", map[string]string{"email": "peer@grants.test", "password": "long enough password"}).expect(200).JSON()["token"].(string)
		me := e.send("GET", "/api/auth/me", nil, func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+token) }).expect(200).JSON()
		is.Equal(me["features"], []any{"auth.users.manage"})

		// A manager limited to org1 creates users in org1 only.
		limited, _ := e.keyWith(g.tenantFixture, g.OrgID, e.newRole(g.tenantFixture, []string{g.OrgID}, "auth.users.manage"))
		narrow := e.newRole(g.tenantFixture, []string{g.OrgID}, "auth.users.manage")
		forbidden(t, e.do("POST", "/api/auth/users", limited, map[string]any{"email": "o2@grants.test", "password": "long enough password", "organizationId": g.org2, "roles": []string{narrow}}), "organizationId")
		forbidden(t, e.do("POST", "/api/auth/users", limited, map[string]any{"email": "o1@grants.test", "password": "long enough password", "organizationId": g.OrgID, "roles": []string{usersRole}}), "every organization")
		e.do("POST", "/api/auth/users", limited, map[string]any{"email": "o1@grants.test", "password": "long enough password", "organizationId": g.OrgID, "roles": []string{narrow}}).expect(201)
	})
}

// TestNoEscalationThroughRoleACLs: a role manager gives roles only access
// it holds, never widens its own role, and leaves roles above it alone
// (finding 1, third repro, and finding 2's org-limited "*" widening its
// organizations).
func TestNoEscalationThroughRoleACLs(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		e := newTestEnv(t, db)
		g := e.newGrantFixture()
		ownRole := e.newRole(g.tenantFixture, nil, "auth.roles.manage", "webhooks.*")
		manager, _ := e.keyWith(g.tenantFixture, g.OrgID, ownRole)
		acl := func(key string, body map[string]any) *response { return e.do("PUT", "/api/auth/roles/acl", key, body) }

		// The repro: its own role to "*".
		forbidden(t, acl(manager, map[string]any{"roleId": ownRole, "features": []string{"*"}}), "cannot grant features you do not hold: *")
		is.Equal(e.do("GET", "/api/auth/me", manager, nil).expect(200).JSON()["features"], []any{"auth.roles.manage", "webhooks.*"})

		// Wildcards cover what they name and no more.
		role := e.do("POST", "/api/auth/roles", manager, map[string]string{"name": "hooks"}).expect(201).JSON()["id"].(string)
		acl(manager, map[string]any{"roleId": role, "features": []string{"webhooks.view", "webhooks.*"}}).expect(200)
		forbidden(t, acl(manager, map[string]any{"roleId": role, "features": []string{"webhooks.view", "entities.records.view"}}), "entities.records.view")
		forbidden(t, acl(manager, map[string]any{"roleId": role, "features": []string{"webhooks.*", "auth.*"}}), "auth.*")
		forbidden(t, acl(manager, map[string]any{"roleId": role, "features": []string{}, "isSuperAdmin": true}), "super-admin")

		// A role above the manager cannot be changed, not even stripped.
		forbidden(t, acl(manager, map[string]any{"roleId": g.adminRole, "features": []string{}}), "the role holds access you do not")

		// An org-limited "*" cannot lift its own organization limit.
		limitedRole := e.newRole(g.tenantFixture, []string{g.OrgID}, "*")
		limited, _ := e.keyWith(g.tenantFixture, g.OrgID, limitedRole)
		forbidden(t, acl(limited, map[string]any{"roleId": limitedRole, "features": []string{"*"}, "organizations": nil}), "every organization")
		forbidden(t, acl(limited, map[string]any{"roleId": limitedRole, "features": []string{"*"}, "organizations": []string{g.OrgID, g.org2}}), "outside your access")
		me := e.do("GET", "/api/auth/me", limited, nil).expect(200).JSON()
		is.Equal(me["features"], []any{"*"})
		// Roles outside its organizations are not found to it; roles it creates are limited like it.
		acl(limited, map[string]any{"roleId": g.adminRole, "features": []string{}}).expect(404)
		acl(limited, map[string]any{"roleId": e.newRole(g.tenantFixture, []string{g.org2}), "features": []string{}}).expect(404)
		mine := e.do("POST", "/api/auth/roles", limited, map[string]string{"name": "limited-made"}).expect(201).JSON()["id"].(string)
		acl(limited, map[string]any{"roleId": mine, "features": []string{"webhooks.view"}}).expect(200)
		for _, r := range e.do("GET", "/api/auth/roles?pageSize=200&tenantId="+g.ID, e.superKey, nil).expect(200).JSON()["items"].([]any) {
			if r := r.(map[string]any); r["id"] == mine {
				is.Equal(r["organizations"], []any{g.OrgID})
			}
		}

		// The super admin keeps full power.
		acl(e.superKey, map[string]any{"roleId": limitedRole, "features": []string{"*"}, "organizations": nil}).expect(200)
	})
}

// TestOrganizationScopeOnIdentityWrites: a caller limited to org1 writes
// no organization, key or role outside it (finding 2).
func TestOrganizationScopeOnIdentityWrites(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		e := newTestEnv(t, db)
		g := e.newGrantFixture()
		limited, _ := e.keyWith(g.tenantFixture, g.OrgID, e.newRole(g.tenantFixture, []string{g.OrgID}, "directory.organizations.manage", "directory.organizations.view", "api_keys.manage", "api_keys.view"))
		org3Key, org3KeyID := e.keyWith(g.tenantFixture, g.org3, e.newRole(g.tenantFixture, nil, "api_keys.view"))

		// The repro: deleting org3 is "not found", and org3 and its key live on.
		e.do("DELETE", "/api/directory/organizations?id="+g.org3, limited, nil).expect(404)
		e.do("GET", "/api/auth/me", org3Key, nil).expect(200)
		// A child of org2, or a new root organization, is out of scope.
		forbidden(t, e.do("POST", "/api/directory/organizations", limited, map[string]string{"name": "x", "parentId": g.org2}), "parentId")
		forbidden(t, e.do("POST", "/api/directory/organizations", limited, map[string]string{"name": "x"}), "parentId")
		// Another organization's key cannot be deleted (and is not listed).
		e.do("DELETE", "/api/api_keys/keys?id="+org3KeyID, limited, nil).expect(404)
		e.do("GET", "/api/auth/me", org3Key, nil).expect(200)
		for _, k := range e.do("GET", "/api/api_keys/keys", limited, nil).expect(200).JSON()["items"].([]any) {
			is.True(k.(map[string]any)["organizationId"] == g.OrgID)
		}

		// Deleting org1 needs access to its child too.
		forbidden(t, e.do("DELETE", "/api/directory/organizations?id="+g.OrgID, limited, nil), "descendants")
		withChild, _ := e.keyWith(g.tenantFixture, g.OrgID, e.newRole(g.tenantFixture, []string{g.OrgID, g.org1c}, "directory.organizations.manage"))
		e.do("DELETE", "/api/directory/organizations?id="+g.OrgID, withChild, nil).expect(409) // it still has a child
		e.do("POST", "/api/directory/organizations", withChild, map[string]string{"name": "grandchild", "parentId": g.org1c}).expect(201)
		// The grandchild is in no role's list: org1c's subtree is not all within access.
		forbidden(t, e.do("DELETE", "/api/directory/organizations?id="+g.org1c, withChild, nil), "descendants")

		// A key it may not grant cannot be revoked by it either.
		adminKey, adminKeyID := e.keyWith(g.tenantFixture, g.OrgID, g.adminRole)
		keysManager, _ := e.keyWith(g.tenantFixture, g.OrgID, e.newRole(g.tenantFixture, nil, "api_keys.manage"))
		forbidden(t, e.do("DELETE", "/api/api_keys/keys?id="+adminKeyID, keysManager, nil), "cannot delete a key with access you do not hold")
		e.do("GET", "/api/auth/me", adminKey, nil).expect(200)
		e.do("DELETE", "/api/api_keys/keys?id="+adminKeyID, e.superKey, nil).expect(200)
	})
}

// TestIdentitySecretsAreNotCached: the responses that carry an API key
// secret or a session token answer Cache-Control: no-store; other identity
// reads do not.
func TestIdentitySecretsAreNotCached(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		e := newTestEnv(t, db)
		acme := e.newTenant("NoStore")
		created := e.do("POST", "/api/api_keys/keys", e.superKey, map[string]any{"name": "k", "tenantId": acme.ID, "organizationId": acme.OrgID}).expect(201)
		is.Equal(created.Header.Get("Cache-Control"), "no-store")
		e.do("POST", "/api/auth/users", e.superKey, map[string]any{"email": "nostore@acme.test", "password": "long enough password", "organizationId": acme.OrgID}).expect(201)
		login := e.postForm("/api/login", map[string]string{"email": "nostore@acme.test", "password": "long enough password"}).expect(200)
		is.Equal(login.Header.Get("Cache-Control"), "no-store")
		is.True(login.JSON()["token"] != nil)
		is.Equal(e.postForm("/api/login", map[string]string{"email": "nostore@acme.test", "password": "wrong password!"}).expect(401).Header.Get("Cache-Control"), "no-store")
		for _, path := range []string{"/api/api_keys/keys", "/api/auth/me", "/api/auth/roles"} {
			r := e.do("GET", path, e.superKey, nil).expect(200)
			is.Equal(r.Header.Get("Cache-Control"), "")
			is.Equal(r.Header.Get("X-Content-Type-Options"), "nosniff")
		}
	})
}
