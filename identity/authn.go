package identity

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"slices"
	"strings"

	"github.com/golang-jwt/jwt/v5"

	"github.com/tenantkit/tenantkit/jobs"
	"github.com/tenantkit/tenantkit/store"
)

// Credential is the secret a caller presents, and how it was presented.
type Credential struct {
	// Secret is an API key secret or a session token; "" is no credential.
	Secret string
	// Bearer is true for a secret sent as a bearer token, which may be a
	// session token or an API key; otherwise the secret is an API key.
	Bearer bool
}

// Selection is what a caller selected on earlier calls (over HTTP, the
// SelectedTenantCookie and SelectedOrganizationCookie). An invalid
// selection is ignored.
type Selection struct {
	// TenantID switches a super admin to another live tenant; ignored for
	// everyone else.
	TenantID string
	// OrganizationID switches the active organization to another live one
	// of the (selected) tenant that the caller may access.
	OrganizationID string
}

// Authenticate verifies a credential (AuthenticateToken for a bearer
// secret shaped like a session token, AuthenticateKey otherwise) and
// applies the selection. It returns (nil, nil) for no credential and
// ErrUnauthenticated for one that is not valid.
func (s *Service) Authenticate(ctx context.Context, cred Credential, sel Selection) (*Identity, error) {
	if cred.Secret == "" {
		return nil, nil
	}
	var id *Identity
	var err error
	if cred.Bearer && looksLikeJWT(cred.Secret) {
		id, err = s.AuthenticateToken(ctx, cred.Secret)
	} else {
		id, err = s.AuthenticateKey(ctx, cred.Secret)
	}
	if err != nil {
		return nil, err
	}
	return s.applySelection(ctx, sel, id)
}

func looksLikeJWT(s string) bool { return strings.Count(s, ".") == 2 && strings.HasPrefix(s, "eyJ") }

// AuthenticateKey verifies an API key secret. Unknown, deleted and expired
// keys, and keys of deleted tenants or organizations, are
// ErrUnauthenticated.
func (s *Service) AuthenticateKey(ctx context.Context, secret string) (*Identity, error) {
	ck := keyOf('k', secret)
	if id, ok, err := s.fromCache(ctx, ck); ok {
		return id, err
	}
	prefix := prefixOf(secret)
	if !store.Storable(prefix) {
		// No stored prefix has NUL or broken UTF-8 (PostgreSQL would
		// refuse the lookup itself).
		return nil, ErrUnauthenticated
	}
	return s.verify(ctx, ck, func(q store.Querier) (*Identity, error) { return s.keyIdentity(ctx, q, ck, prefix) })
}

// keyIdentity verifies the API key whose secret has digest ck and prefix
// against the database.
func (s *Service) keyIdentity(ctx context.Context, q store.Querier, ck cacheKey, prefix string) (*Identity, error) {
	hash := hex.EncodeToString(ck.sum[:]) // hashSecret(secret), the stored form
	k, live, err := s.store.APIKeyByPrefix(ctx, q, prefix)
	if isNotFound(err) {
		return nil, ErrUnauthenticated
	}
	if err != nil {
		return nil, err
	}
	if subtle.ConstantTimeCompare([]byte(k.SecretHash), []byte(hash)) != 1 || !live {
		return nil, ErrUnauthenticated
	}
	if k.ExpiresAt != nil && !k.ExpiresAt.After(s.db.Now()) {
		return nil, ErrUnauthenticated
	}
	roles, err := s.store.APIKeyRoles(ctx, q, k.ID)
	if err != nil {
		return nil, err
	}
	id := identityFromRoles(roles)
	id.TenantID, id.APIKeyID, id.keyActor = k.TenantID, k.ID, keyActorPrefix+k.ID
	if k.OrganizationID != nil {
		id.OrganizationID = *k.OrganizationID
	}
	if k.ExpiresAt != nil {
		id.expiresAt = *k.ExpiresAt
	}
	return id, nil
}

// identityFromRoles merges roles: features are the union, super admin if
// any role is, and readable organizations the union of the restrictions
// (nil when any role allows all).
func identityFromRoles(roles []*Role) *Identity {
	id := &Identity{Roles: []string{}, RoleIDs: []string{}, Features: []string{}, OrganizationIDs: []string{}}
	for _, r := range roles {
		id.Roles = append(id.Roles, r.Name)
		id.RoleIDs = append(id.RoleIDs, r.ID)
		for _, f := range r.Features {
			if !slices.Contains(id.Features, f) {
				id.Features = append(id.Features, f)
			}
		}
		id.IsSuperAdmin = id.IsSuperAdmin || r.IsSuperAdmin
		if r.Organizations == nil || id.IsSuperAdmin {
			id.OrganizationIDs = nil
		} else if id.OrganizationIDs != nil {
			id.OrganizationIDs = append(id.OrganizationIDs, r.Organizations...)
		}
	}
	return id
}

// sessionClaims is the payload of a session token.
type sessionClaims struct {
	TenantID string `json:"tenantId"`
	OrgID    string `json:"orgId"`
	// PasswordVersion is the time of the user's last password change (Unix
	// microseconds); a token from before a change no longer matches.
	PasswordVersion int64 `json:"pv"`
	jwt.RegisteredClaims
}

// AuthenticateToken verifies a session token from Login. Tokens expire
// after Options.SessionTTL and stop working when the user's password
// changes, the token is logged out (Logout) or the user, tenant or
// organization is deleted.
func (s *Service) AuthenticateToken(ctx context.Context, token string) (*Identity, error) {
	ck := keyOf('t', token)
	if id, ok, err := s.fromCache(ctx, ck); ok {
		return id, err
	}
	claims, err := s.parseToken(token)
	if err != nil {
		return nil, err
	}
	return s.verify(ctx, ck, func(q store.Querier) (*Identity, error) { return s.tokenIdentity(ctx, q, claims) })
}

// tokenIdentity checks a signed session token's claims against the
// database: its user, password version, tenant and organization.
func (s *Service) tokenIdentity(ctx context.Context, q store.Querier, claims *sessionClaims) (*Identity, error) {
	u, err := s.store.GetUser(ctx, q, claims.TenantID, claims.Subject)
	if isNotFound(err) {
		return nil, ErrUnauthenticated
	}
	if err != nil {
		return nil, err
	}
	if claims.PasswordVersion != u.PasswordChangedAt.UnixMicro() || u.TenantID != claims.TenantID {
		return nil, ErrUnauthenticated
	}
	if revoked, err := s.store.SessionRevoked(ctx, q, claims.ID); err != nil {
		return nil, err
	} else if revoked {
		return nil, ErrUnauthenticated
	}
	if t, err := s.store.GetTenant(ctx, q, u.TenantID); err != nil || !t.IsActive {
		return nil, ErrUnauthenticated
	}
	if _, err := s.store.GetOrganization(ctx, q, u.TenantID, claims.OrgID); err != nil {
		return nil, ErrUnauthenticated
	}
	roles, err := s.store.UserRoles(ctx, q, u.ID)
	if err != nil {
		return nil, err
	}
	id := identityFromRoles(roles)
	id.TenantID, id.OrganizationID, id.UserID = u.TenantID, claims.OrgID, u.ID
	id.expiresAt = claims.ExpiresAt.Time
	return id, nil
}

// Login checks an email and password and returns a session token. With
// several accounts under one email (in different tenants) the tenant must
// be named. Every failure is ErrInvalidLogin, in about the same time, so
// the answer never tells whether the account exists.
func (s *Service) Login(ctx context.Context, email, password, tenantID string) (string, *Identity, error) {
	var users []*UserRecord
	if email = normalizeEmail(email); store.Storable(email) && store.Storable(tenantID) {
		// (Text no account can have is simply no account, answered in the
		// same time as any other failure.)
		var err error
		if users, err = s.store.UsersByEmail(ctx, s.db, email, tenantID, 2); err != nil {
			return "", nil, err
		}
	}
	hash := dummyHash
	if len(users) == 1 {
		hash = users[0].PasswordHash
	}
	ok, err := verifyPassword(hash, password)
	if err != nil {
		return "", nil, err
	}
	if !ok || len(users) != 1 {
		return "", nil, ErrInvalidLogin
	}
	u := users[0]
	now := s.db.Now()
	if err := s.recordLogin(ctx, u, now); err != nil {
		return "", nil, err
	}
	claims := sessionClaims{TenantID: u.TenantID, OrgID: u.OrganizationID, PasswordVersion: u.PasswordChangedAt.UnixMicro(), RegisteredClaims: jwt.RegisteredClaims{
		Subject:   u.ID,
		IssuedAt:  jwt.NewNumericDate(now),
		ExpiresAt: jwt.NewNumericDate(now.Add(s.cfg.SessionTTL)),
		ID:        store.NewID(),
	}}
	token, err := jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString(s.cfg.SecretKey)
	if err != nil {
		return "", nil, err
	}
	id, err := s.AuthenticateToken(ctx, token)
	return token, id, err
}

// RequestPasswordReset sends a reset token to every account with the email
// through the Mailer: from a background job once RegisterJobs has run,
// otherwise now. It reports success whether or not an account exists.
func (s *Service) RequestPasswordReset(ctx context.Context, email string) error {
	email = normalizeEmail(email)
	if !store.Storable(email) {
		// No account has such an email (and PostgreSQL could not store
		// it in the job): the same answer as for any unknown address.
		return nil
	}
	if s.jobs != nil {
		_, err := s.jobs.Enqueue(ctx, resetArgs{Email: email}, nil)
		return err
	}
	return s.sendResets(ctx, email)
}

// resetArgs is the job that mails reset tokens for an email.
type resetArgs struct {
	Email string `json:"email"`
}

// Kind keeps the name from before the package moved, so that jobs queued
// then still run.
func (resetArgs) Kind() string { return "auth.password_reset" }

func (s *Service) workReset(ctx context.Context, job *jobs.Job[resetArgs]) error {
	return s.sendResets(ctx, job.Args.Email)
}

// sendResets creates a token for each account with the email and mails it.
// A mailer failure is logged, not retried: a retry would mail a second
// token.
func (s *Service) sendResets(ctx context.Context, email string) error {
	users, err := s.store.UsersByEmail(ctx, s.db, email, "", 2)
	if err != nil {
		return err
	}
	for _, u := range users {
		token := randomToken()
		err := s.db.Tx(ctx, func(tx *store.Tx) error {
			return s.store.CreatePasswordReset(ctx, tx, &PasswordReset{TokenHash: hashSecret(token), UserID: u.ID,
				ExpiresAt: tx.Now().Add(s.cfg.ResetTTL), CreatedAt: tx.Now()})
		})
		if err != nil {
			return err
		}
		if err := s.cfg.Mailer.SendPasswordReset(ctx, u.Email, token); err != nil {
			s.logger.ErrorContext(ctx, "identity: sending password reset failed", "err", err)
		}
	}
	return nil
}

// ConfirmPasswordReset sets a new password with a token from
// RequestPasswordReset. A token works once; the user's sessions end.
func (s *Service) ConfirmPasswordReset(ctx context.Context, token, password string) error {
	v := &store.ValidationError{}
	if token == "" {
		v.Add("token", "is required")
	}
	checkPassword(v, "password", password)
	if err := v.Err(); err != nil {
		return err
	}
	hash, err := hashPassword(password)
	if err != nil {
		return err
	}
	return s.tx(ctx, func(tx *store.Tx) error {
		u, err := s.store.ConsumePasswordReset(ctx, tx, hashSecret(token), tx.Now())
		if isNotFound(err) {
			return ErrInvalidResetToken
		}
		if err != nil {
			return err
		}
		if err := s.store.SetUserPassword(ctx, tx, u.TenantID, u.ID, hash, tx.Now()); err != nil {
			return err
		}
		_, err = tx.EmitData(ctx, EventUserPasswordReset, store.Scope{TenantID: u.TenantID, OrganizationID: u.OrganizationID},
			map[string]string{"id": u.ID})
		return err
	})
}

func randomToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// applySelection honours a selection: the active organization (one the
// identity may access, in its tenant) and, for super admins, the tenant.
// An invalid selection is ignored.
func (s *Service) applySelection(ctx context.Context, sel Selection, id *Identity) (*Identity, error) {
	tenantID, orgID := id.TenantID, id.OrganizationID
	if !store.Storable(sel.TenantID) || !store.Storable(sel.OrganizationID) {
		return id, nil // no tenant or organization has such an id
	}
	if id.IsSuperAdmin && sel.TenantID != "" && sel.TenantID != tenantID {
		if _, err := s.store.GetTenant(ctx, s.db, sel.TenantID); err == nil {
			tenantID, orgID = sel.TenantID, ""
		} else if !isNotFound(err) {
			return nil, err
		}
	}
	if sel.OrganizationID != "" && sel.OrganizationID != orgID &&
		(id.IsSuperAdmin || id.Scope().AllowsOrganization(sel.OrganizationID)) {
		if _, err := s.store.GetOrganization(ctx, s.db, tenantID, sel.OrganizationID); err == nil {
			orgID = sel.OrganizationID
		} else if !isNotFound(err) {
			return nil, err
		}
	}
	if tenantID == id.TenantID && orgID == id.OrganizationID {
		return id, nil
	}
	cp := *id
	cp.TenantID, cp.OrganizationID = tenantID, orgID
	return &cp, nil
}
