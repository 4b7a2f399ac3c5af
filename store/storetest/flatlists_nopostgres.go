//go:build tenantkit_nopostgres

package storetest

import (
	"testing"

	"github.com/tenantkit/tenantkit/store"
)

// FlatLists needs PostgreSQL, which this build leaves out: it skips.
func FlatLists(t *testing.T, _ func(t *testing.T, db *store.DB, engine string, sizes []int, calls int), _ ...store.Migrations) {
	t.Skip("FlatLists needs PostgreSQL (built with tenantkit_nopostgres)")
}

// guardFlat finds no database of FlatLists' in this build.
func guardFlat(*testing.T, *store.DB, string, []int, func(string, int, int), func(string, int) []ScaleCase) bool {
	return false
}

// FlatCheck finds no database of FlatLists' in this build.
func FlatCheck(*testing.T, *store.DB, string, []int, []func() error, ...string) bool { return false }

// FlatLeftOut finds no database of FlatLists' in this build.
func FlatLeftOut(*testing.T, *store.DB, string, string) bool { return false }
