package identity

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/tenantkit/tenantkit/store"
)

// keyPrefixLength is how much of a secret is stored in clear to find the
// key ("tk_" and 8 hex digits for generated keys).
const keyPrefixLength = 11

// APIKeyInput creates an API key.
type APIKeyInput struct {
	Name        string `json:"name" jsonschema:"required,minLength=1"`
	Description string `json:"description" jsonschema:"maxLength=1000"`
	// TenantID defaults to the actor's; naming another is for super admins.
	TenantID string `json:"tenantId"`
	// OrganizationID scopes the key; it defaults to the actor's
	// organization when the key is for the actor's tenant.
	OrganizationID string `json:"organizationId"`
	// Roles are role ids or names of the key's tenant.
	Roles []string `json:"roles"`
	// ExpiresAt, when set, must be in the future.
	ExpiresAt *time.Time `json:"expiresAt"`
}

// CreateAPIKey creates an API key and returns it with its secret, which is
// not stored and cannot be shown again. The key's organization must be one
// the actor manages (a caller limited to some organizations creates no
// tenant-level key), and its roles ones the actor may grant (CheckGrant).
func (s *Service) CreateAPIKey(ctx context.Context, actor *Identity, in APIKeyInput) (*APIKey, string, error) {
	for attempt := 1; ; attempt++ {
		secret := generateSecret()
		k, err := s.createAPIKey(ctx, actor, in, secret)
		// A clash of the 32-bit public prefix is rare; draw again.
		if errors.Is(err, errPrefixTaken) && attempt < 5 {
			continue
		}
		return k, secret, err
	}
}

var errPrefixTaken = store.Errorf(store.ErrConflict, "an API key with this prefix already exists")

func generateSecret() string {
	b := make([]byte, 28)
	_, _ = rand.Read(b)
	h := hex.EncodeToString(b)
	return "tk_" + h[:8] + "." + h[8:]
}

func (s *Service) createAPIKey(ctx context.Context, actor *Identity, in APIKeyInput, secret string) (*APIKey, error) {
	tenantID, err := actingTenant(actor, in.TenantID)
	if err != nil {
		return nil, err
	}
	v := &store.ValidationError{}
	name := checkText(v, "name", in.Name, MaxNameLength)
	if utf8.RuneCountInString(in.Description) > MaxDescriptionLength {
		v.Add("description", fmt.Sprintf("must be at most %d characters", MaxDescriptionLength))
	}
	if in.ExpiresAt != nil && !in.ExpiresAt.After(s.db.Now()) {
		v.Add("expiresAt", "must be in the future")
	}
	if err := v.Err(); err != nil {
		return nil, err
	}
	var key *APIKey
	err = s.createTx(ctx, func(tx *store.Tx) error {
		var err error
		key, err = s.createAPIKeyTx(ctx, tx, actor, tenantID, in, name, secret)
		return err
	})
	return key, err
}

// createAPIKeyTx stores a validated key in tx.
func (s *Service) createAPIKeyTx(ctx context.Context, tx *store.Tx, actor *Identity, tenantID string, in APIKeyInput, name, secret string) (*APIKey, error) {
	if _, err := s.store.GetTenant(ctx, tx, tenantID); err != nil {
		return nil, notFoundField(err, "tenantId", "tenant not found")
	}
	orgID := in.OrganizationID
	if orgID == "" && tenantID == actor.TenantID {
		orgID = actor.OrganizationID
	}
	if orgID != "" {
		if _, err := s.store.GetOrganization(ctx, tx, tenantID, orgID); err != nil {
			return nil, notFoundField(err, "organizationId", "organization not found in this tenant")
		}
	}
	if !managesOrganization(actor, orgID) {
		return nil, outOfOrganizationScope("organizationId")
	}
	roles, err := s.resolveRoles(ctx, tx, actor, tenantID, "roles", in.Roles)
	if err != nil {
		return nil, err
	}
	row := &APIKeyRecord{APIKey: APIKey{ID: store.NewID(), TenantID: tenantID, Name: name, KeyPrefix: prefixOf(secret),
		Roles: refs(roles), CreatedAt: tx.Now()}, SecretHash: hashSecret(secret)}
	if orgID != "" {
		row.OrganizationID = &orgID
	}
	if in.Description != "" {
		row.Description = &in.Description
	}
	if in.ExpiresAt != nil {
		t := in.ExpiresAt.UTC().Truncate(time.Microsecond)
		row.ExpiresAt = &t
	}
	if err := s.store.CreateAPIKey(ctx, tx, row); err != nil {
		if isConflict(err) {
			return nil, errPrefixTaken
		}
		return nil, err
	}
	if err := s.store.LinkAPIKeyRoles(ctx, tx, row.ID, roleIDs(roles)); err != nil {
		return nil, err
	}
	_, err = tx.EmitData(ctx, EventAPIKeyCreated, store.Scope{TenantID: tenantID, OrganizationID: orgID}, &row.APIKey)
	return &row.APIKey, err
}

// ListAPIKeys lists the live keys of the actor's tenant (or the named
// one), newest first: for a caller limited to some organizations, the
// tenant-level keys and those of its organizations. Secrets are never
// listed.
func (s *Service) ListAPIKeys(ctx context.Context, actor *Identity, tenantID string, offset, limit int) ([]*APIKey, int, error) {
	tenantID, err := actingTenant(actor, tenantID)
	if err != nil {
		return nil, 0, err
	}
	sc := store.Scope{TenantID: tenantID}
	if !actor.IsSuperAdmin {
		sc.OrganizationIDs = actor.OrganizationIDs
	}
	rows, total, err := s.store.ListAPIKeys(ctx, s.db, sc, offset, limit)
	if err != nil {
		return nil, 0, err
	}
	ids := make([]string, len(rows))
	for i, r := range rows {
		ids[i] = r.ID
	}
	roles, err := s.store.APIKeyRoleRefs(ctx, s.db, ids)
	if err != nil {
		return nil, 0, err
	}
	keys := make([]*APIKey, len(rows))
	for i, r := range rows {
		r.Roles = roles[r.ID]
		if r.Roles == nil {
			r.Roles = []RoleRef{}
		}
		keys[i] = &r.APIKey
	}
	return keys, total, nil
}

// DeleteAPIKey deletes a key of the actor's tenant (a super admin's: any);
// every process refuses it for every request that starts after the
// deletion commits (see the package doc, "Revocation"). A key outside the
// organizations the actor manages is not found; a key whose roles the
// actor could not grant (CheckGrant) is ErrEscalation: nobody revokes a
// credential above its own access.
func (s *Service) DeleteAPIKey(ctx context.Context, actor *Identity, id string) error {
	return s.tx(ctx, func(tx *store.Tx) error {
		tenantID := actor.TenantID
		var err error
		if actor.IsSuperAdmin {
			tenantID, err = s.store.APIKeyTenant(ctx, tx, id)
		}
		var k *APIKeyRecord
		if err == nil {
			k, err = s.store.GetAPIKey(ctx, tx, tenantID, id)
		}
		if err == nil && !managesOrganization(actor, deref(k.OrganizationID)) {
			err = store.ErrNotFound
		}
		if err != nil {
			return notFound(err, "API key not found")
		}
		roles, err := s.store.APIKeyRoles(ctx, tx, id)
		if err != nil {
			return err
		}
		if err := checkRoleGrants(actor, roles); err != nil {
			return escalation("cannot delete a key with access you do not hold: %s", store.PublicMessage(err))
		}
		if err := s.store.DeleteAPIKey(ctx, tx, tenantID, id, tx.Now()); err != nil {
			return notFound(err, "API key not found")
		}
		_, err = tx.EmitData(ctx, EventAPIKeyDeleted, store.Scope{TenantID: tenantID}, map[string]string{"id": id})
		return err
	})
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func prefixOf(secret string) string { return secret[:min(len(secret), keyPrefixLength)] }

// hashSecret is the stored form of an API key secret. Generated secrets
// carry 224 random bits, so a fast hash is enough; comparison is in
// constant time.
func hashSecret(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

func isConflict(err error) bool { return errors.Is(err, store.ErrConflict) }
func isNotFound(err error) bool { return errors.Is(err, store.ErrNotFound) }
