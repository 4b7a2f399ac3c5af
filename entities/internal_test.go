package entities

import (
	"crypto/rand"
	"encoding/hex"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

func def(tenantID, orgID, label string, updated time.Time) *Definition {
	return &Definition{ID: store.NewID(), EntityID: "a.b", Key: "k", Kind: "text", ConfigJSON: map[string]any{"label": label},
		IsActive: true, TenantID: tenantID, OrganizationID: orgID, Scope: scopeName(tenantID, orgID), UpdatedAt: updated}
}

// winners: the most specific scope wins whatever the times; within one
// scope (a tie) the newest wins, whatever the order of the rows;
// inactive rows are candidates only for managers; tombstones are
// candidates.
func TestWinners(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	pick := func(includeInactive bool, rows ...*Definition) string {
		w := winners(rows, includeInactive)["a.b\x00k"]
		if w == nil {
			return "<none>"
		}
		return w.ConfigJSON["label"].(string)
	}
	global := def("", "", "global", t0.Add(3*time.Hour))
	tenant := def("T", "", "tenant", t0.Add(2*time.Hour))
	org := def("T", "O", "org", t0)
	is.Equal(pick(false, global, tenant, org), "org")
	is.Equal(pick(false, org, tenant, global), "org")
	is.Equal(pick(false, global, tenant), "tenant")
	is.Equal(pick(false, tenant, global), "tenant")
	is.Equal(pick(false, global), "global")

	// Ties by newest updatedAt, in either order.
	older, newer := def("T", "O", "older", t0), def("T", "O", "newer", t0.Add(time.Microsecond))
	is.Equal(pick(false, older, newer), "newer")
	is.Equal(pick(false, newer, older), "newer")
	olderT, newerT := def("T", "", "older", t0), def("T", "", "newer", t0.Add(time.Second))
	is.Equal(pick(false, newerT, olderT, global), "newer")
	is.Equal(pick(false, global, olderT, newerT), "newer")

	// Inactive: not a candidate, except for managers.
	off := def("T", "O", "org off", t0.Add(5*time.Hour))
	off.IsActive = false
	is.Equal(pick(false, tenant, off), "tenant")
	is.Equal(pick(true, tenant, off), "org off")
	is.Equal(pick(false, off), "<none>")

	// A tombstone (deleted, so inactive) is a candidate and wins like any.
	now := t0
	tomb := def("T", "O", "tomb", t0)
	tomb.IsActive, tomb.DeletedAt = false, &now
	is.Equal(pick(false, tenant, tomb, global), "tomb")
	is.Equal(pick(true, tomb, tenant), "tomb")

	// Different keys and entities do not compete.
	other := def("", "", "other", t0)
	other.Key = "k2"
	is.Equal(len(winners([]*Definition{org, other}, false)), 2)
	otherEnt := def("", "", "other entity", t0)
	otherEnt.EntityID = "a.c"
	is.Equal(len(winners([]*Definition{org, otherEnt}, false)), 2)
}

// A tombstone-only row (what deleting a wider scope's key at a narrower
// scope writes) hides the key at that scope only, is listed in Manage's
// deletedKeys, and restore removes the row. Written directly here so that
// the restore side is tested apart from DeleteDefinition.
func TestTombstoneOnlyRowRestore(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		svc := must(New(db, Options{}))
		orgCtx, sc := storetest.NewScope(t)
		tenantCtx := store.WithScope(t.Context(), store.Scope{TenantID: sc.TenantID})
		var b [6]byte
		_, _ = rand.Read(b[:])
		ent := "test.i_" + hex.EncodeToString(b[:])

		_, err := svc.Define(tenantCtx, DefinitionInput{EntityID: ent, Key: "color", Kind: "text"})
		is.NoErr(err)
		is.NoErr(db.Tx(t.Context(), func(tx *store.Tx) error {
			now := tx.Now()
			d := &Definition{ID: store.NewID(), EntityID: ent, Key: "color", Kind: "text", ConfigJSON: map[string]any{},
				TenantID: sc.TenantID, OrganizationID: sc.OrganizationID, CreatedAt: now, UpdatedAt: now, DeletedAt: &now,
				TombstoneOnly: true}
			if err := svc.store.InsertDefinition(t.Context(), tx, d); err != nil {
				return err
			}
			_, err := svc.changed(t.Context(), tx)
			return err
		}))
		defs, err := svc.Definitions(orgCtx, ent)
		is.NoErr(err)
		is.Equal(len(defs), 0) // hidden for the org
		defs, err = svc.Definitions(tenantCtx, ent)
		is.NoErr(err)
		is.Equal(len(defs), 1) // not for the tenant
		items, deleted, err := svc.Manage(orgCtx, ent)
		is.NoErr(err)
		is.Equal(len(items), 0)
		is.Equal(deleted, []string{"color"})

		_, err = svc.DeleteDefinition(orgCtx, ent, "color")
		is.True(err == ErrNotFound) // already deleted here

		is.NoErr(svc.RestoreDefinition(orgCtx, ent, "color"))
		var n int
		is.NoErr(db.QueryRow(t.Context(), `SELECT COUNT(*) FROM custom_field_definitions WHERE entity_id = $1`, ent).Scan(&n))
		is.Equal(n, 1) // the tombstone-only row is gone
		defs, err = svc.Definitions(orgCtx, ent)
		is.NoErr(err)
		is.Equal(len(defs), 1)
		is.Equal(defs[0].Scope, ScopeTenant)
		_, deleted, err = svc.Manage(orgCtx, ent)
		is.NoErr(err)
		is.Equal(len(deleted), 0)
		is.True(svc.RestoreDefinition(orgCtx, ent, "color") == ErrNotFound)
	}, Migrations)
}
