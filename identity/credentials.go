package identity

import (
	"context"
	"time"

	"github.com/tenantkit/tenantkit/internal/vcache"
	"github.com/tenantkit/tenantkit/store"
)

// The credential cache (see the package doc, "Revocation"): verified
// credentials by digest in a vcache.Cache over one version counter, which
// every change that may alter what an existing credential grants bumps in
// its transaction (Service.tx, CredentialsChanged), then waits until
// every live process has acknowledged the new version (acks.go). Before it
// serves a cached identity, a request makes sure the cache is as new as
// the counter: on PostgreSQL, while the process's lease holds, the
// acknowledgements guarantee it; otherwise it reads the counter
// (vcache.Cache.Sync), one single-row query, shared by concurrent
// requests. On SQLite, whose database one process owns, a change made
// through this process has already dropped the cache when it committed,
// and the cache reads the counter every credentialsCheck for the changes
// of other processes.

// credentialsCounter is the store version counter of what credentials
// grant.
const credentialsCounter = "identity.credentials"

// credentialsCheck is how often the cache reads the counter without being
// asked (vcache's check interval): on PostgreSQL every request reads it
// anyway; on SQLite it is how soon another process's change is seen.
const credentialsCheck = 250 * time.Millisecond

// CredentialsChanged records, in tx, a change to identity data that may
// alter what existing credentials grant, made outside the Service's
// methods: a user soft-deleted or given other roles directly in the
// database, a change in a host's own Store. Once tx commits, and before
// the store's Tx returns, the commit is acknowledged by every live process
// (on PostgreSQL: see the package doc, "Revocation"; milliseconds while the
// processes' listeners are up, up to a second for one whose listener is
// down, 5 s for one cut off from the database), so every
// process (every Service on the database) honours it for every request
// that starts after Tx returns, as it does the Service's own changes,
// which call it themselves. Without it, such a change reaches a process that has the
// credential cached within Options.CacheTTL.
func (s *Service) CredentialsChanged(ctx context.Context, tx *store.Tx) error {
	var v int64
	var err error
	if s.creds != nil {
		v, err = s.creds.Changed(ctx, tx)
	} else {
		v, err = tx.BumpVersion(ctx, credentialsCounter) // for the caches of other Services
	}
	if err != nil || !s.db.Dialect().Notifies() {
		return err
	}
	// After the commit (and after the cache's own hook, registered
	// first), wait for every live process to acknowledge v.
	tx.AfterCommit(func() {
		if err := vcache.AwaitAcks(ctx, s.db, serversTable, s.acks, v); err != nil {
			s.logger.ErrorContext(ctx, "identity: waiting for processes to acknowledge a revocation failed", "version", v, "err", err)
		}
	})
	return nil
}

// fromCache returns the cached identity of credential ck (ok), after
// making sure the cache honours every revocation that returned before
// this call, through any process: the lease, or a read of the counter. A cached credential past its own expiry is ErrUnauthenticated
// (ok, with the error); one remembered longer than Options.CacheTTL is
// dropped and reported missing, to be verified again. An error reading
// the counter is returned (ok): the cache may be stale, and the request
// fails rather than trust it.
func (s *Service) fromCache(ctx context.Context, ck cacheKey) (id *Identity, ok bool, err error) {
	if s.creds == nil {
		return nil, false, nil
	}
	if s.acks == nil || !s.acks.Trusted() {
		if err := s.creds.Sync(ctx); err != nil {
			return nil, true, err
		}
	}
	c, hit := s.creds.Peek(ctx, ck)
	if !hit {
		return nil, false, nil
	}
	now := s.db.Now()
	if !now.Before(c.until) {
		s.creds.Delete(ck)
		return nil, false, nil
	}
	if expired(c.id, now) {
		s.creds.Delete(ck) // refused from now on: no need to keep it
		return nil, true, ErrUnauthenticated
	}
	return c.id, true, nil
}

// verify runs load, which verifies credential ck against the database,
// and remembers the identity it returns: through the cache, in a read
// transaction that reads the counter first (so that an identity loaded
// while a change commits is not remembered past it), or straight on the
// database when the cache is off.
func (s *Service) verify(ctx context.Context, ck cacheKey, load func(q store.Querier) (*Identity, error)) (*Identity, error) {
	if s.creds == nil {
		return load(s.db)
	}
	c, err := s.creds.Get(ctx, ck, func(tx *store.Tx) (*cached, error) {
		id, err := load(tx)
		if err != nil {
			return nil, err
		}
		id.keepValues() // before it is shared: every request reuses them
		return &cached{id: id, until: s.db.Now().Add(s.cfg.CacheTTL)}, nil
	})
	if err != nil {
		return nil, err
	}
	if expired(c.id, s.db.Now()) { // (cached by a concurrent request a while ago)
		return nil, ErrUnauthenticated
	}
	return c.id, nil
}

// expired reports whether id's credential has expired at now.
func expired(id *Identity, now time.Time) bool {
	return !id.expiresAt.IsZero() && !id.expiresAt.After(now)
}
