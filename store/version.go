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

// BumpVersion advances the named counter in the transaction and returns
// its new value. Concurrent bumps of one counter wait for each other's
// commit (one row), so keep counters per area, not per tenant row.
func (tx *Tx) BumpVersion(ctx context.Context, name string) (int64, error) {
	var v int64
	err := tx.QueryRow(ctx, `INSERT INTO store_versions (name, version) VALUES ($1, 1)
		ON CONFLICT (name) DO UPDATE SET version = store_versions.version + 1
		RETURNING version`, name).Scan(&v)
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
