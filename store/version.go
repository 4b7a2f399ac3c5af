package store

import (
	"context"
	"errors"
)

// Version counters are the one freshness mechanism of cached data: an area
// that caches definitions (toggles, rules, custom fields) names a counter,
// bumps it in every transaction that changes them, and has its caches read
// it to notice other processes' changes (see internal/vcache). Counters
// live in store_versions, one row each, created on the first bump; an
// unknown counter reads 0. They only grow.
//
// On PostgreSQL a bump also notifies the counter's new version, delivered
// to every process's listener when the transaction commits (never when it
// rolls back): see DB.WatchVersions.

const (
	bumpVersionSQL = `INSERT INTO store_versions (name, version) VALUES ($1, 1)
		ON CONFLICT (name) DO UPDATE SET version = store_versions.version + 1
		RETURNING version`
	// bumpVersionNotifySQL is bumpVersionSQL that also queues the
	// notification "name:version" on channel $2, in the same statement
	// (no extra round trip).
	bumpVersionNotifySQL = `WITH b AS (INSERT INTO store_versions (name, version) VALUES ($1, 1)
		ON CONFLICT (name) DO UPDATE SET version = store_versions.version + 1
		RETURNING version)
		SELECT b.version FROM b, pg_notify($2, $1::text || ':' || b.version)`
)

// BumpVersion advances the named counter in the transaction and returns
// its new value. Concurrent bumps of one counter wait for each other's
// commit (one row), so keep counters per area, not per tenant row. On
// PostgreSQL the bump notifies the other processes at commit (and the
// commit of a transaction that notifies takes PostgreSQL's notification
// queue lock, one such commit at a time database-wide: counters are for
// changes of definitions, not of every row).
func (tx *Tx) BumpVersion(ctx context.Context, name string) (int64, error) {
	var v int64
	var err error
	if tx.db.dialect.Notifies() {
		err = tx.QueryRow(ctx, bumpVersionNotifySQL, name, versionChannel(tx.db.schema)).Scan(&v)
	} else {
		err = tx.QueryRow(ctx, bumpVersionSQL, name).Scan(&v)
	}
	return v, err
}

// ReadVersion reads the named counter (0 before its first bump).
func ReadVersion(ctx context.Context, q Querier, name string) (int64, error) {
	var v int64
	err := q.QueryRow(ctx, `SELECT version FROM store_versions WHERE name = $1`, name).Scan(&v)
	if errors.Is(err, ErrNotFound) {
		return 0, nil
	}
	return v, err
}
