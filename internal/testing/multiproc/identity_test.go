package multiproc_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/tenantkit/tenantkit/internal/testing/multiproc"
)

// TestRevokedAcrossServers: a credential revoked through server A is
// refused by server B's first request after the change commits, although
// B had it cached (it served the request just before), over HTTP, on
// PostgreSQL. An API key deleted through A: B's next record write is 401
// (0 accepted in 100 tries), and so are 100 more requests. A feature
// removed from the key's role through A: B's next record write is 403 (0
// accepted in 100 tries), and given back it is accepted again.
func TestRevokedAcrossServers(t *testing.T) {
	c := multiproc.Start(t, multiproc.Options{})
	a, b := c.Servers[0], c.Servers[1]
	tn := c.NewTenant(t, "Revoke "+multiproc.RandomHex(3))
	eid := "mp.rv_" + multiproc.RandomHex(4)
	writes := []string{"entities.records.manage", "entities.definitions.manage"}
	role := a.Do(t, "POST", "/api/auth/roles", c.SuperKey, map[string]string{"name": "writer", "tenantId": tn.ID}).
		Expect(t, 201).JSON(t)["id"].(string)
	setFeatures := func(features []string) {
		a.Do(t, "PUT", "/api/auth/roles/acl", c.SuperKey, map[string]any{"roleId": role, "features": features}).Expect(t, 200)
	}
	setFeatures(writes)
	newKey := func() (id, secret string) {
		body := map[string]any{"name": "key", "tenantId": tn.ID, "organizationId": tn.OrgID, "roles": []string{role}}
		k := a.Do(t, "POST", "/api/api_keys/keys", c.SuperKey, body).Expect(t, 201).JSON(t)
		return k["id"].(string), k["secret"].(string)
	}
	_, key := newKey()
	a.Do(t, "POST", "/api/entities/definitions", key, map[string]any{"entityId": eid, "key": "note", "kind": "text"}).Expect(t, 200)
	write := func(key string, i int) *multiproc.Response {
		return b.Do(t, "POST", "/api/entities/records", key, map[string]any{"entityId": eid, "values": map[string]any{"note": fmt.Sprint(i)}})
	}

	var accepted staleCount
	start := time.Now()
	for i := range tries {
		id, secret := newKey()
		write(secret, i).Expect(t, 200) // B caches the key
		a.Do(t, "DELETE", "/api/api_keys/keys?id="+id, c.SuperKey, nil).Expect(t, 200)
		if r := write(secret, i); r.Status != 401 {
			accepted.add("try %d: %d %s", i, r.Status, r.Body)
		}
	}
	t.Logf("key deletion: %d tries in %v", tries, time.Since(start).Round(time.Millisecond))
	accepted.check(t, "a key deleted through A accepted by B's next request")

	id, secret := newKey()
	b.Do(t, "GET", "/api/auth/me", secret, nil).Expect(t, 200)
	a.Do(t, "DELETE", "/api/api_keys/keys?id="+id, c.SuperKey, nil).Expect(t, 200)
	var after staleCount
	for i := range tries {
		if r := b.Do(t, "GET", "/api/auth/me", secret, nil); r.Status != 401 {
			after.add("request %d: %d %s", i, r.Status, r.Body)
		}
	}
	after.check(t, "requests through B after a key's deletion through A accepted")

	var stale staleCount
	start = time.Now()
	for i := range tries {
		write(key, i).Expect(t, 200) // B caches the key with its features
		setFeatures([]string{"entities.definitions.manage"})
		if r := write(key, i); r.Status != 403 {
			stale.add("try %d (removed): %d %s", i, r.Status, r.Body)
		}
		setFeatures(writes)
	}
	t.Logf("feature removal: %d tries in %v", tries, time.Since(start).Round(time.Millisecond))
	stale.check(t, "a feature removed through A honoured by B's next request")
}

// sessionTries is how often the session revocations are tried: each try
// creates a user or signs in (an Argon2id hash), so fewer than tries.
const sessionTries = 20

// TestSessionsEndedAcrossServers: a session token cached by server B
// (it served the request just before) is refused by B's first request
// after the user is deleted through A (0 accepted in 20 tries), and after
// the token is logged out through A (0 accepted in 20 tries), while the
// user's other session keeps working on B.
func TestSessionsEndedAcrossServers(t *testing.T) {
	c := multiproc.Start(t, multiproc.Options{})
	a, b := c.Servers[0], c.Servers[1]
	tn := c.NewTenant(t, "Sessions "+multiproc.RandomHex(3))
	form := http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}
	newUser := func() (id, email string) {
		email = "mp-" + multiproc.RandomHex(6) + "@sessions.test"
		id = a.Do(t, "POST", "/api/auth/users", c.SuperKey, map[string]any{"email": email, "password": "sessions-password",
			"organizationId": tn.OrgID}).Expect(t, 201).JSON(t)["id"].(string)
		return id, email
	}
	login := func(s *multiproc.Server, email string) http.Header {
		tok := s.DoWith(t, "POST", "/api/login", "", "email="+multiproc.Query(email)+"&password=sessions-password", form).
			Expect(t, 200).JSON(t)["token"].(string)
		return http.Header{"Authorization": {"Bearer " + tok}}
	}
	me := func(s *multiproc.Server, session http.Header) int {
		return s.DoWith(t, "GET", "/api/auth/me", "", nil, session).Status
	}

	deleted := staleCount{of: sessionTries}
	for i := range sessionTries {
		id, email := newUser()
		session := login(a, email)
		if st := me(b, session); st != 200 { // B caches the session
			t.Fatalf("try %d: B answered %d before the deletion", i, st)
		}
		a.Do(t, "DELETE", "/api/auth/users?id="+id, c.SuperKey, nil).Expect(t, 200)
		if st := me(b, session); st != 401 {
			deleted.add("try %d: %d", i, st)
		}
	}
	deleted.check(t, "a session of a user deleted through A accepted by B's next request")

	_, email := newUser()
	other := login(b, email)
	loggedOut := staleCount{of: sessionTries}
	for i := range sessionTries {
		session := login(a, email)
		if st := me(b, session); st != 200 {
			t.Fatalf("try %d: B answered %d before the logout", i, st)
		}
		a.DoWith(t, "POST", "/api/logout", "", nil, session).Expect(t, 200)
		if st := me(b, session); st != 401 {
			loggedOut.add("try %d: %d", i, st)
		}
	}
	loggedOut.check(t, "a session logged out through A accepted by B's next request")
	if st := me(b, other); st != 200 {
		t.Fatalf("the user's other session: %d after the logouts, want 200", st)
	}
}
