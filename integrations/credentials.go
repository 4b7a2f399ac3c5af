package integrations

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/tenantkit/tenantkit/internal/vcache"
	"github.com/tenantkit/tenantkit/store"
)

// Mask stands in for a stored secret in every read. A write that sends it
// back for a secret field keeps the stored value, so a form can send what
// it was shown.
const Mask = "••••••••"

// Limits of credential values.
const (
	MaxValueLength = 20_000
)

// Credentials returns the integration's credential schema and the
// caller's tenant's credentials, secret fields masked ({} when none are
// stored). An unknown id is ErrNotFound.
func (s *Service) Credentials(ctx context.Context, id string) ([]Field, map[string]any, error) {
	sc, err := store.ScopeFrom(ctx)
	if err != nil {
		return nil, nil, err
	}
	d, ok := s.Definition(id)
	if !ok {
		return nil, nil, ErrNotFound
	}
	schema := s.schema(d)
	values, _, err := s.values(ctx, s.db, sc.TenantID, id)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return nil, nil, err
	}
	masked := map[string]any{}
	for k, v := range values {
		if f, ok := fieldOf(schema, k); ok && f.Type == FieldSecret {
			v = Mask
		}
		masked[k] = v
	}
	if schema == nil {
		schema = []Field{}
	}
	return schema, masked, nil
}

// Values returns a tenant's credentials of the integration in clear, for
// the code that calls the provider (never for a response); store.ErrNotFound
// when none are stored. Every change that returned (SetCredentials)
// before the call, through any process, is honoured (doc.go, "Credentials
// acknowledged": on PostgreSQL no read while this process's lease holds,
// otherwise one read of the version counter shared by concurrent callers;
// on SQLite nothing); the values are opened once per change, not once
// per call. The map is the caller's.
func (s *Service) Values(ctx context.Context, tenantID, id string) (map[string]any, error) {
	if s.acks == nil || !s.acks.Trusted() {
		if err := s.creds.Sync(ctx); err != nil {
			return nil, err
		}
	}
	c, err := s.creds.Get(ctx, credentialsKey{tenantID, id}, func(tx *store.Tx) (cachedCredentials, error) {
		v, _, err := s.values(ctx, tx, tenantID, id)
		if errors.Is(err, store.ErrNotFound) {
			return cachedCredentials{}, nil
		}
		return cachedCredentials{values: v, found: true}, err
	})
	if err != nil {
		return nil, err
	}
	if !c.found {
		return nil, store.ErrNotFound
	}
	return maps.Clone(c.values), nil
}

// Tenants' credentials in clear are cached (Values, for every provider
// call) under a version counter that SetCredentials bumps; the cache
// reads it every credentialsCheck for other processes' changes (and
// PostgreSQL notifies them at once), and Values syncs before each use
// unless the process's lease holds (doc.go, "Credentials acknowledged";
// the processes beat in serversTable).
const (
	credentialsCounter   = "integrations.credentials"
	serversTable         = "integration_servers"
	credentialsCheck     = 250 * time.Millisecond
	maxCachedCredentials = 10000
)

// credentialsKey is a tenant's integration.
type credentialsKey struct{ tenantID, integrationID string }

// cachedCredentials is a tenant's credentials of an integration in
// clear; found is false when none are stored.
type cachedCredentials struct {
	values map[string]any
	found  bool
}

func (s *Service) values(ctx context.Context, q store.Querier, tenantID, id string) (map[string]any, time.Time, error) {
	sealed, at, err := s.store.GetCredentials(ctx, q, tenantID, id)
	if err != nil {
		return nil, at, err
	}
	plain, err := s.box.Open(sealed)
	if err != nil {
		return nil, at, fmt.Errorf("integrations: credentials of %s cannot be opened (was the secret key changed?): %w", id, err)
	}
	values := map[string]any{}
	return values, at, json.Unmarshal([]byte(plain), &values)
}

// SetCredentials replaces the caller's tenant's credentials of the
// integration with values, checked against its schema: an unknown key, a
// value of the wrong type (strings for text, secret, select and url, a
// boolean for boolean), a select value not among its options, a url that
// is not absolute http(s), or a required field missing (or null) is a
// store.ValidationError naming the key. A secret sent as Mask keeps the
// stored value. The credentials are stored sealed with the Kit's key; the
// event names the keys only. On PostgreSQL it returns once every live
// process has acknowledged the change (doc.go, "Credentials
// acknowledged"), so that every Values call that starts afterwards, on
// any process, uses the new credentials.
func (s *Service) SetCredentials(ctx context.Context, id string, values map[string]any) error {
	sc, err := store.ScopeFrom(ctx)
	if err != nil {
		return err
	}
	d, ok := s.Definition(id)
	if !ok {
		return ErrNotFound
	}
	schema := s.schema(d)
	return s.db.Tx(ctx, func(tx *store.Tx) error {
		old, _, err := s.values(ctx, tx, sc.TenantID, id)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
		clean, err := checkValues(schema, values, old)
		if err != nil {
			return err
		}
		plain, err := json.Marshal(clean)
		if err != nil {
			return err
		}
		if err := s.store.PutCredentials(ctx, tx, sc.TenantID, id, s.box.Seal(string(plain)), tx.Now()); err != nil {
			return err
		}
		v, err := s.creds.Changed(ctx, tx)
		if err != nil {
			return err
		}
		if s.db.Dialect().Notifies() {
			// After the commit (and the cache's own hook, registered
			// first), wait for every live process to acknowledge v.
			tx.AfterCommit(func() {
				if err := vcache.AwaitAcks(ctx, s.db, serversTable, s.acks, v); err != nil {
					s.db.Logger().ErrorContext(ctx, "integrations: waiting for processes to acknowledge a credentials change failed",
						"version", v, "err", err)
				}
			})
		}
		_, err = tx.EmitData(ctx, EventCredentialsUpdated, sc, map[string]any{
			"integrationId": id, "keys": slices.Sorted(maps.Keys(clean))})
		return err
	})
}

func fieldOf(schema []Field, key string) (Field, bool) {
	i := slices.IndexFunc(schema, func(f Field) bool { return f.Key == key })
	if i < 0 {
		return Field{}, false
	}
	return schema[i], true
}

// checkValues validates values against schema and returns what to store:
// nulls dropped, masked secrets replaced by the stored ones.
func checkValues(schema []Field, values, old map[string]any) (map[string]any, error) {
	v := &store.ValidationError{}
	clean := map[string]any{}
	for _, key := range slices.Sorted(maps.Keys(values)) {
		val := values[key]
		f, ok := fieldOf(schema, key)
		if !ok {
			v.Add("credentials."+truncateKey(key), "is not a credential of this integration")
			continue
		}
		if val == nil {
			continue
		}
		if msg := checkValue(f, val); msg != "" {
			v.Add("credentials."+key, msg)
			continue
		}
		if f.Type == FieldSecret && val == Mask {
			if prev, ok := old[key]; ok {
				clean[key] = prev
			}
			continue
		}
		clean[key] = val
	}
	for _, f := range schema {
		if _, ok := clean[f.Key]; f.Required && !ok && v.Fields["credentials."+f.Key] == "" {
			v.Add("credentials."+f.Key, "is required")
		}
	}
	return clean, v.Err()
}

// checkValue returns what is wrong with a value of field f, "" when
// nothing.
func checkValue(f Field, val any) string {
	if f.Type == FieldBoolean {
		if _, ok := val.(bool); !ok {
			return "must be a boolean"
		}
		return ""
	}
	s, ok := val.(string)
	switch {
	case !ok:
		return "must be a string"
	case !utf8.ValidString(s) || store.HasNUL(s):
		return "must be valid UTF-8 text without NUL characters"
	case len(s) > MaxValueLength:
		return fmt.Sprintf("must be at most %d bytes", MaxValueLength)
	case f.Type == FieldSelect && !slices.ContainsFunc(f.Options, func(o Option) bool { return o.Value == s }):
		return "must be one of the field's options"
	case f.Type == FieldURL:
		u, err := url.Parse(s)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return "must be an absolute http or https URL"
		}
	}
	return ""
}

func truncateKey(k string) string {
	if r := []rune(k); len(r) > 64 {
		return string(r[:64]) + "…"
	}
	if !utf8.ValidString(k) || store.HasNUL(k) {
		return fmt.Sprintf("%q", k)
	}
	return k
}
