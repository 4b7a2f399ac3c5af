package entities_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/tenantkit/tenantkit/entities"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// upsUpsert runs one batch of UpsertRecordsTx in a transaction of its own.
func upsUpsert(ctx context.Context, db *store.DB, svc *entities.Service, eid string, items []entities.RecordUpsert) ([]entities.UpsertOutcome, error) {
	var out []entities.UpsertOutcome
	err := db.Tx(ctx, func(tx *store.Tx) error {
		var err error
		out, err = svc.UpsertRecordsTx(ctx, tx, eid, items)
		return err
	})
	return out, err
}

// upsEvents returns the tenant's events of typ by record id.
func upsEvents(t *testing.T, db *store.DB, tenantID, typ string) map[string][]recEventData {
	t.Helper()
	evs, err := store.ListEvents(t.Context(), db, store.EventFilter{TenantID: tenantID, Type: typ, Limit: 100000})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]recEventData{}
	for _, ev := range evs {
		var d recEventData
		if err := json.Unmarshal(ev.Data, &d); err != nil {
			t.Fatal(err)
		}
		out[d.ID] = append(out[d.ID], d)
	}
	return out
}

// A re-import of 1000 records in one batch (the data sync's batch size)
// updates each, merging its values (null clearing one); the value counts
// stay exact and every record has one event of each write, carrying its
// values; one invalid item of the 1000 is its own error.
func TestUpsertRecordsReimport(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		svc := must(entities.New(db, entities.Options{}))
		ctx, sc := storetest.NewScope(t)
		eid := recEntityID()
		filterable := map[string]any{"filterable": true}
		recDefineAll(t, svc, ctx, eid, recDef(eid, "category", "text", filterable), recDef(eid, "amount", "integer", filterable),
			recDef(eid, "active", "boolean", filterable), recDef(eid, "title", "text", nil))
		keys := []string{"category", "amount", "active", "title"}
		listed := map[string]bool{"category": true, "amount": true, "active": true}

		const n = 1000
		ids := make([]string, n)
		want := make([]map[string]any, n)
		items := make([]entities.RecordUpsert, n)
		for i := range n {
			ids[i] = store.NewID()
			want[i] = map[string]any{"category": fmt.Sprintf("c%02d", i%17), "amount": float64(i % 7), "active": i%2 == 0,
				"title": fmt.Sprint("Item ", i)}
			items[i] = entities.RecordUpsert{RecordID: ids[i], Values: map[string]any{"category": want[i]["category"],
				"amount": i % 7, "active": i%2 == 0, "title": want[i]["title"]}}
		}
		out, err := upsUpsert(ctx, db, svc, eid, items)
		if err != nil {
			t.Fatal(err)
		}
		for i, o := range out {
			if !o.Created || o.Skipped || o.Err != nil {
				t.Fatalf("import, item %d: %+v, want created", i, o)
			}
		}
		cntCheckTable(t, db, eid, keys, listed)

		// The re-import: values changed, cleared, kept; item 500 invalid.
		for i := range n {
			v := map[string]any{"category": want[i]["category"]}
			switch i % 4 {
			case 0:
				v["amount"] = i%7 + 100
				want[i]["amount"] = float64(i%7 + 100)
			case 1:
				v["cf_amount"] = nil
				delete(want[i], "amount")
			case 2:
				v["active"], v["title"] = nil, "Renamed"
				delete(want[i], "active")
				want[i]["title"] = "Renamed"
			case 3:
				v["category"] = "moved"
				want[i]["category"] = "moved"
			}
			items[i] = entities.RecordUpsert{RecordID: ids[i], Values: v}
		}
		items[500].Values = map[string]any{"amount": "not a number", "category": "never"}
		out, err = upsUpsert(ctx, db, svc, eid, items)
		if err != nil {
			t.Fatal(err)
		}
		for i, o := range out {
			if i == 500 {
				recWantFields(t, o.Err, map[string]string{"cf_amount": "Must be a whole number"})
				continue
			}
			if o.Created || o.Skipped || o.Err != nil {
				t.Fatalf("re-import, item %d: %+v, want updated", i, o)
			}
		}
		want[500] = map[string]any{"category": "c07", "amount": 3.0, "active": true, "title": "Item 500"} // as imported
		cntCheckTable(t, db, eid, keys, listed)

		records, total := recList(t, svc, ctx, entities.RecordQuery{EntityID: eid, All: true})
		if total != n || len(records) != n {
			t.Fatalf("%d records listed, total %d, want %d", len(records), total, n)
		}
		byID := map[string]*entities.Record{}
		for _, r := range records {
			byID[r.ID] = r
		}
		for i, id := range ids {
			r := byID[id]
			if got, exp := recJSON(t, r.Values), recJSON(t, want[i]); got != exp {
				t.Fatalf("record %d holds %s, want %s", i, got, exp)
			}
			if i != 500 && !r.UpdatedAt.After(r.CreatedAt) {
				t.Fatalf("record %d: updatedAt %v, createdAt %v", i, r.UpdatedAt, r.CreatedAt)
			}
		}
		for _, c := range []struct{ key, value string }{
			{"category", "moved"}, {"category", "c03"}, {"amount", "100"}, {"amount", "0"}, {"active", "true"}, {"active", "false"},
		} {
			_, got := recList(t, svc, ctx, entities.RecordQuery{EntityID: eid, Filters: []entities.Filter{cntFilter(c.key, c.value)}})
			exp := 0
			for _, w := range want {
				if v, ok := w[c.key]; ok && fmt.Sprint(v) == c.value {
					exp++
				}
			}
			if got != exp {
				t.Fatalf("%s = %s: total %d, want %d", c.key, c.value, got, exp)
			}
		}

		created := upsEvents(t, db, sc.TenantID, entities.EventRecordCreated)
		updated := upsEvents(t, db, sc.TenantID, entities.EventRecordUpdated)
		if len(created) != n || len(updated) != n-1 {
			t.Fatalf("created events of %d records, updated events of %d, want %d and %d", len(created), len(updated), n, n-1)
		}
		for i, id := range ids {
			if len(created[id]) != 1 {
				t.Fatalf("record %d: %d created events", i, len(created[id]))
			}
			if i == 500 {
				if len(updated[id]) != 0 {
					t.Fatal("the invalid item has an updated event")
				}
				continue
			}
			if len(updated[id]) != 1 {
				t.Fatalf("record %d: %d updated events", i, len(updated[id]))
			}
			d := updated[id][0]
			if d.EntityID != eid || d.TenantID != sc.TenantID || d.OrganizationID != sc.OrganizationID ||
				recJSON(t, d.Values) != recJSON(t, want[i]) {
				t.Fatalf("record %d: updated event %+v, want the values %v", i, d, want[i])
			}
		}
	}, entities.Migrations)
}

// An upsert's events carry exactly what CreateRecord's and UpdateRecord's
// events carry (the record as the data sync's webhooks see it).
func TestUpsertRecordsEventData(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		svc := must(entities.New(db, entities.Options{}))
		ctx, sc := storetest.NewScope(t)
		tenantCtx := store.WithScope(t.Context(), store.Scope{TenantID: sc.TenantID})
		eid := recEntityID()
		recDefineAll(t, svc, tenantCtx, eid, recDef(eid, "name", "text", nil), recDef(eid, "n", "float", nil))
		for _, c := range []struct {
			what string
			ctx  context.Context
		}{{"organization", ctx}, {"tenant", tenantCtx}} {
			id := store.NewID()
			vals := map[string]any{"name": "<a & \"b\">\u2028é", "n": 1e21}
			for _, v := range []map[string]any{vals, {"n": 0.000001}} {
				out, err := upsUpsert(c.ctx, db, svc, eid, []entities.RecordUpsert{{RecordID: id, Values: v}})
				if err != nil || out[0].Err != nil {
					t.Fatalf("%s: %v %+v", c.what, err, out)
				}
			}
			r, err := svc.GetRecord(ctx, eid, id, false)
			if err != nil {
				t.Fatal(err)
			}
			for _, typ := range []string{entities.EventRecordCreated, entities.EventRecordUpdated} {
				evs, err := store.ListEvents(t.Context(), db, store.EventFilter{TenantID: sc.TenantID, Type: typ, Limit: 100})
				if err != nil {
					t.Fatal(err)
				}
				ev := evs[len(evs)-1]
				var got map[string]any
				if err := json.Unmarshal(ev.Data, &got); err != nil {
					t.Fatal(err)
				}
				exp := map[string]any{"id": id, "entityId": eid, "tenantId": sc.TenantID, "organizationId": nil,
					"values": map[string]any{"name": vals["name"], "n": 1e21}, "createdAt": r.CreatedAt.Format("2006-01-02T15:04:05.999999999Z07:00"),
					"updatedAt": r.CreatedAt.Format("2006-01-02T15:04:05.999999999Z07:00")}
				if c.ctx == ctx {
					exp["organizationId"] = sc.OrganizationID
				}
				if typ == entities.EventRecordUpdated {
					exp["values"].(map[string]any)["n"] = 0.000001
					exp["updatedAt"] = r.UpdatedAt.Format("2006-01-02T15:04:05.999999999Z07:00")
				}
				if recJSON(t, got) != recJSON(t, exp) {
					t.Fatalf("%s, %s event:\n%s\nwant\n%s", c.what, typ, recJSON(t, got), recJSON(t, exp))
				}
				if wantOrg, _ := exp["organizationId"].(string); ev.OrganizationID != wantOrg || ev.TenantID != sc.TenantID {
					t.Fatalf("%s, %s event of tenant %q, organization %q", c.what, typ, ev.TenantID, ev.OrganizationID)
				}
			}
		}
	}, entities.Migrations)
}

// A batch one of whose ids a record of another entity holds fails with
// store.ErrConflict and writes nothing, its new records and its updates
// alike.
func TestUpsertRecordsIDOfAnotherEntity(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		svc := must(entities.New(db, entities.Options{}))
		ctx, sc := storetest.NewScope(t)
		eid, other := recEntityID(), recEntityID()
		recDefineAll(t, svc, ctx, eid, recDef(eid, "k", "text", map[string]any{"filterable": true}))
		recDefineAll(t, svc, ctx, other, recDef(other, "k", "text", nil))
		kept := store.NewID()
		if _, err := upsUpsert(ctx, db, svc, eid, []entities.RecordUpsert{{RecordID: kept, Values: map[string]any{"k": "a"}}}); err != nil {
			t.Fatal(err)
		}
		taken := recCreate(t, svc, ctx, other, map[string]any{"k": "other"})
		before := len(upsEvents(t, db, sc.TenantID, entities.EventRecordUpdated))
		fresh := store.NewID()
		_, err := upsUpsert(ctx, db, svc, eid, []entities.RecordUpsert{
			{RecordID: kept, Values: map[string]any{"k": "b"}},
			{RecordID: fresh, Values: map[string]any{"k": "a"}},
			{RecordID: taken.ID, Values: map[string]any{"k": "a"}},
		})
		if !errors.Is(err, store.ErrConflict) || store.PublicMessage(err) == "" {
			t.Fatalf("got %v, want a conflict with a message", err)
		}
		r, err := svc.GetRecord(ctx, eid, kept, false)
		if err != nil || r.Values["k"] != "a" {
			t.Fatalf("the batch's update was written: %v %v", r, err)
		}
		_, err = svc.GetRecord(ctx, eid, fresh, true)
		recWantNotFound(t, err)
		if after := len(upsEvents(t, db, sc.TenantID, entities.EventRecordUpdated)); after != before {
			t.Fatalf("updated events %d, before the batch %d", after, before)
		}
		cntCheckTable(t, db, eid, []string{"k"}, map[string]bool{"k": true})
	}, entities.Migrations)
}

// An upsert updates only records its scope may read: a caller limited to
// org1 gets ErrOutsideScope for the records of org2, live or deleted
// alike (nothing of them written, no event), updates records of no
// organization and its own, and creates new ones in org1. A caller of
// every organization updates the org2 record.
func TestUpsertRecordsOrganizationScope(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		svc := must(entities.New(db, entities.Options{}))
		tenant, o1, o2 := store.NewID(), store.NewID(), store.NewID()
		tenantCtx := store.WithScope(t.Context(), store.Scope{TenantID: tenant})
		in2 := store.WithScope(t.Context(), store.Scope{TenantID: tenant, OrganizationID: o2}) // every organization, acting in org2
		in1 := store.WithScope(t.Context(), store.Scope{TenantID: tenant, OrganizationID: o1, OrganizationIDs: []string{o1}})
		eid := recEntityID()
		recDefineAll(t, svc, tenantCtx, eid, recDef(eid, "k", "text", map[string]any{"filterable": true}))
		upsert := func(ctx context.Context, items ...entities.RecordUpsert) []entities.UpsertOutcome {
			t.Helper()
			out, err := upsUpsert(ctx, db, svc, eid, items)
			if err != nil {
				t.Fatal(err)
			}
			return out
		}
		item := func(id, k string) entities.RecordUpsert {
			return entities.RecordUpsert{RecordID: id, Values: map[string]any{"k": k}}
		}
		org2Live, org2Deleted, noOrg, own, fresh := store.NewID(), store.NewID(), store.NewID(), store.NewID(), store.NewID()
		upsert(in2, item(org2Live, "org2"), item(org2Deleted, "org2 deleted"))
		upsert(tenantCtx, item(noOrg, "shared"))
		upsert(in1, item(own, "mine"))
		if err := svc.DeleteRecord(in2, eid, org2Deleted); err != nil {
			t.Fatal(err)
		}
		updatedBefore := len(upsEvents(t, db, tenant, entities.EventRecordUpdated))

		out := upsert(in1, item(org2Live, "overwritten"), item(org2Deleted, "overwritten"), item(noOrg, "by org1"),
			item(own, "mine again"), item(fresh, "new"))
		for i, want := range []string{"outside", "outside", "updated", "updated", "created"} {
			o := out[i]
			var got string
			switch {
			case o.Err != nil && errors.Is(o.Err, entities.ErrOutsideScope) && !o.Created && !o.Skipped:
				got = "outside"
			case o.Err == nil && o.Created && !o.Skipped:
				got = "created"
			case o.Err == nil && !o.Created && !o.Skipped:
				got = "updated"
			default:
				got = fmt.Sprintf("%+v", o)
			}
			if got != want {
				t.Errorf("item %d: %s, want %s", i, got, want)
			}
		}
		if msg := store.PublicMessage(out[0].Err); msg == "" || !errors.Is(out[0].Err, store.ErrForbidden) {
			t.Errorf("the outside item's error %v: want a forbidden error with a message", out[0].Err)
		}
		for id, want := range map[string]struct{ k, org string }{
			org2Live: {"org2", o2}, org2Deleted: {"org2 deleted", o2}, noOrg: {"by org1", ""}, own: {"mine again", o1}, fresh: {"new", o1},
		} {
			r, err := svc.GetRecord(tenantCtx, eid, id, true)
			if err != nil {
				t.Fatal(err)
			}
			if r.Values["k"] != want.k || r.OrganizationID != want.org {
				t.Errorf("record %s holds %v in organization %q, want %q in %q", id, r.Values["k"], r.OrganizationID, want.k, want.org)
			}
		}
		if r, _ := svc.GetRecord(tenantCtx, eid, org2Deleted, true); r.DeletedAt == nil {
			t.Error("the deleted org2 record was restored")
		}
		updated := upsEvents(t, db, tenant, entities.EventRecordUpdated)
		if n := len(updated) - updatedBefore; n != 2 || len(updated[org2Live]) != 0 || len(updated[org2Deleted]) != 0 {
			t.Errorf("%d records with updated events (org2's: %d, %d), want 2 and none of org2's", n, len(updated[org2Live]), len(updated[org2Deleted]))
		}
		cntCheckTable(t, db, eid, []string{"k"}, map[string]bool{"k": true})

		// A caller of every organization updates the org2 record.
		if out := upsert(in2, item(org2Live, "by the tenant")); out[0].Err != nil || out[0].Created || out[0].Skipped {
			t.Fatalf("the tenant-wide update: %+v", out[0])
		}
		if r, err := svc.GetRecord(tenantCtx, eid, org2Live, false); err != nil || r.Values["k"] != "by the tenant" {
			t.Fatalf("after the tenant-wide update: %v %v", r, err)
		}
	}, entities.Migrations)
}
