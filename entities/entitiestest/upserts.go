package entitiestest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"
	"testing"

	"github.com/tenantkit/tenantkit/entities"
	"github.com/tenantkit/tenantkit/store"
)

// upsert runs one batch of UpsertRecordsTx in a transaction of its own,
// as the data sync area runs one with its run's bookkeeping.
func upsert(ctx context.Context, svc *entities.Service, db *store.DB, entityID string, items []entities.RecordUpsert) ([]entities.UpsertOutcome, error) {
	var out []entities.UpsertOutcome
	err := db.Tx(ctx, func(tx *store.Tx) error {
		var err error
		out, err = svc.UpsertRecordsTx(ctx, tx, entityID, items)
		return err
	})
	return out, err
}

// eventsByRecord counts the tenant's events of typ by record id, and
// returns the values of the last of each.
func eventsByRecord(t *testing.T, db *store.DB, tenantID, typ string) (map[string]int, map[string]map[string]any) {
	t.Helper()
	evs, err := store.ListEvents(t.Context(), db, store.EventFilter{TenantID: tenantID, Type: typ, Limit: 10000})
	must(t, err)
	n, values := map[string]int{}, map[string]map[string]any{}
	for _, ev := range evs {
		var d struct {
			ID     string         `json:"id"`
			Values map[string]any `json:"values"`
		}
		must(t, json.Unmarshal(ev.Data, &d))
		n[d.ID]++
		values[d.ID] = d.Values
	}
	return n, values
}

// wantValues fails unless the record id of entityID holds want.
func wantValues(t *testing.T, svc *entities.Service, ctx context.Context, entityID, id string, want map[string]any) {
	t.Helper()
	r, err := svc.GetRecord(ctx, entityID, id, true)
	must(t, err)
	got, _ := json.Marshal(r.Values)
	exp, _ := json.Marshal(want)
	if string(got) != string(exp) {
		t.Fatalf("record %s holds %s, want %s", id, got, exp)
	}
}

// wantCounted checks, for each value of key, that the filtered list's
// total (from kept value counts where a Store keeps them) is the number
// of records it lists and the model's number.
func wantCounted(t *testing.T, svc *entities.Service, ctx context.Context, what, entityID, key string, model map[string]int) {
	t.Helper()
	for v, want := range model {
		ids, total := list(t, svc, ctx, entities.RecordQuery{EntityID: entityID, Filters: eq(key, v), All: true})
		if total != len(ids) || total != want {
			t.Fatalf("%s: %s = %s: total %d, %d records listed, want %d", what, key, v, total, len(ids), want)
		}
	}
	ids, total := list(t, svc, ctx, entities.RecordQuery{EntityID: entityID, All: true})
	if total != len(ids) {
		t.Fatalf("%s: unfiltered total %d, %d records listed", what, total, len(ids))
	}
}

// Upserts: a batch creates its new ids in the caller's organization and
// updates the live records of the others (values merged, null clearing
// one) that the caller's scope may read, those of the tenant's other
// organizations failing with ErrOutsideScope (left alone, no event); it
// skips deleted records and an id given twice;
// an item failing validation gets its error and the others are written;
// every written record has one event; the counted totals follow; an id
// held by a record of another entity fails the batch, which writes
// nothing.
func testUpserts(t *testing.T, svc *entities.Service, db *store.DB) {
	tn := newTenant()
	org1, org2 := tn.in(t, tn.org1), tn.in(t, tn.org2)
	ent, other := newEntityID(), newEntityID()
	define(t, svc, tn.all(t), ent, "color", "text", map[string]any{"filterable": true})
	define(t, svc, tn.all(t), ent, "n", "integer", map[string]any{"filterable": true})
	define(t, svc, tn.all(t), ent, "name", "text", map[string]any{"validation": []any{map[string]any{"rule": "required"}}})
	define(t, svc, tn.all(t), other, "name", "text", nil)
	colors := []string{"red", "green", "blue"}

	// 1. Every item new (ids in upper case are the same ids).
	const n = 30
	ids := make([]string, n)
	model := make([]map[string]any, n)
	items := make([]entities.RecordUpsert, n)
	for i := range n {
		ids[i] = store.NewID()
		model[i] = map[string]any{"color": colors[i%3], "n": float64(i % 4), "name": fmt.Sprint("r", i)}
		items[i] = entities.RecordUpsert{RecordID: strings.ToUpper(ids[i]), Values: maps.Clone(model[i])}
	}
	out, err := upsert(org1, svc, db, ent, items)
	must(t, err)
	for i, o := range out {
		if !o.Created || o.Skipped || o.Err != nil {
			t.Fatalf("first batch, item %d: %+v, want created", i, o)
		}
	}
	counts := func(key string, live func(i int) bool) map[string]int {
		m := map[string]int{}
		for i, vals := range model {
			if live(i) {
				if v, ok := vals[key]; ok {
					m[fmt.Sprint(v)]++
				}
			}
		}
		return m
	}
	always := func(int) bool { return true }
	wantCounted(t, svc, org1, "created", ent, "color", counts("color", always))
	wantCounted(t, svc, org1, "created", ent, "n", counts("n", always))
	wantCounted(t, svc, org2, "created, another organization", ent, "color", map[string]int{"red": 0})

	// 2. Again, changed: every record updated (colors moved, n cleared or
	// kept, name kept), with a deleted record, an id twice, a record of
	// no organization, a record of another organization (outside org1's
	// scope), invalid items and new ones.
	must(t, svc.DeleteRecord(org1, ent, ids[0]))
	tenantOwn := create(t, svc, tn.all(t), ent, map[string]any{"color": "red", "name": "tenant's"})
	elsewhere := create(t, svc, org2, ent, map[string]any{"color": "red", "n": 1, "name": "org2's"})
	fresh, missingName, twice := store.NewID(), store.NewID(), store.NewID()
	bad := map[int]string{}
	items = items[:0]
	for i := range n {
		v := map[string]any{"color": colors[(i+1)%3]}
		if i%2 == 0 {
			v["cf_n"] = nil
		}
		if i == 7 {
			v["name"] = nil // clears a required field
			bad[i] = "cf_name"
		}
		items = append(items, entities.RecordUpsert{RecordID: ids[i], Values: v})
	}
	items = append(items,
		entities.RecordUpsert{RecordID: ids[5], Values: map[string]any{"color": "again"}},           // n: twice, skipped
		entities.RecordUpsert{RecordID: "not-a-uuid", Values: map[string]any{"name": "x"}},          // n+1
		entities.RecordUpsert{RecordID: twice, Values: map[string]any{"n": "many", "name": "t"}},    // n+2: not a number
		entities.RecordUpsert{RecordID: twice, Values: map[string]any{"n": 2, "name": "second"}},    // n+3: the first valid one
		entities.RecordUpsert{RecordID: missingName, Values: map[string]any{"color": "red"}},        // n+4: new, no name
		entities.RecordUpsert{RecordID: fresh, Values: map[string]any{"color": "red", "name": "f"}}, // n+5
		entities.RecordUpsert{RecordID: elsewhere.ID, Values: map[string]any{"n": 3}},               // n+6: org2's
		entities.RecordUpsert{RecordID: tenantOwn.ID, Values: map[string]any{"color": nil}},         // n+7
		entities.RecordUpsert{RecordID: ids[9], Values: map[string]any{"unknown": 1}},               // n+8: twice, invalid
	)
	bad[n+1], bad[n+2], bad[n+4], bad[n+8] = "recordId", "cf_n", "cf_name", "cf_unknown"
	out, err = upsert(org1, svc, db, ent, items)
	must(t, err)
	for i, o := range out {
		switch {
		case bad[i] != "":
			var ve *store.ValidationError
			if !errors.As(o.Err, &ve) || ve.Fields[bad[i]] == "" || o.Created || o.Skipped {
				t.Fatalf("second batch, item %d: %+v, want a validation error of %s", i, o, bad[i])
			}
		case i == n+6:
			if !errors.Is(o.Err, entities.ErrOutsideScope) || o.Created || o.Skipped {
				t.Fatalf("second batch, item %d (a record of org2): %+v, want ErrOutsideScope", i, o)
			}
		case i == 0 || i == n: // deleted; the same id twice
			if !o.Skipped || o.Created || o.Err != nil {
				t.Fatalf("second batch, item %d: %+v, want skipped", i, o)
			}
		case i == n+3 || i == n+5:
			if !o.Created || o.Skipped || o.Err != nil {
				t.Fatalf("second batch, item %d: %+v, want created", i, o)
			}
		default:
			if o.Created || o.Skipped || o.Err != nil {
				t.Fatalf("second batch, item %d: %+v, want updated", i, o)
			}
		}
	}
	for i := 1; i < n; i++ {
		if i != 7 {
			model[i]["color"] = colors[(i+1)%3]
			if i%2 == 0 {
				delete(model[i], "n")
			}
		}
		wantValues(t, svc, tn.all(t), ent, ids[i], model[i])
	}
	wantValues(t, svc, tn.all(t), ent, ids[0], map[string]any{"color": "red", "n": 0.0, "name": "r0"}) // deleted, untouched
	wantValues(t, svc, tn.all(t), ent, twice, map[string]any{"n": 2.0, "name": "second"})
	wantValues(t, svc, tn.all(t), ent, fresh, map[string]any{"color": "red", "name": "f"})
	wantValues(t, svc, tn.all(t), ent, elsewhere.ID, map[string]any{"color": "red", "n": 1.0, "name": "org2's"}) // untouched
	wantValues(t, svc, tn.all(t), ent, tenantOwn.ID, map[string]any{"name": "tenant's"})
	_, err = svc.GetRecord(tn.all(t), ent, missingName, true)
	wantNotFound(t, "the new item without its required field", err)
	r, err := svc.GetRecord(tn.all(t), ent, elsewhere.ID, false)
	must(t, err)
	if r.OrganizationID != tn.org2 {
		t.Fatalf("org2's record, refused to an import in org1, moved to organization %q", r.OrganizationID)
	}
	r, err = svc.GetRecord(tn.all(t), ent, twice, false)
	must(t, err)
	if r.OrganizationID != tn.org1 {
		t.Fatalf("a record created by an import in org1 is in organization %q", r.OrganizationID)
	}

	// Counted totals: the model's records, with the others.
	live := func(i int) bool { return i != 0 }
	wantColor := counts("color", live)
	wantColor["red"] += 2 // fresh, elsewhere
	wantN := counts("n", live)
	wantN["2"]++ // twice
	wantN["1"]++ // elsewhere, untouched
	wantCounted(t, svc, tn.all(t), "updated", ent, "color", wantColor)
	wantCounted(t, svc, tn.all(t), "updated", ent, "n", wantN)
	wantCounted(t, svc, org2, "updated, org2", ent, "color", map[string]int{"red": 1, "green": 0})

	// One event per written record, with its values.
	createdEvs, _ := eventsByRecord(t, db, tn.id, entities.EventRecordCreated)
	updatedEvs, updatedVals := eventsByRecord(t, db, tn.id, entities.EventRecordUpdated)
	for i := range n {
		if createdEvs[ids[i]] != 1 {
			t.Fatalf("record %d: %d created events, want 1", i, createdEvs[ids[i]])
		}
		want := 1
		if i == 0 || i == 7 {
			want = 0
		}
		if updatedEvs[ids[i]] != want {
			t.Fatalf("record %d: %d updated events, want %d", i, updatedEvs[ids[i]], want)
		}
		if want == 1 {
			got, _ := json.Marshal(updatedVals[ids[i]])
			exp, _ := json.Marshal(model[i])
			if string(got) != string(exp) {
				t.Fatalf("record %d: updated event's values %s, want %s", i, got, exp)
			}
		}
	}
	for _, id := range []string{twice, fresh} {
		if createdEvs[id] != 1 || updatedEvs[id] != 0 {
			t.Fatalf("new record %s: %d created and %d updated events, want 1 and 0", id, createdEvs[id], updatedEvs[id])
		}
	}
	if createdEvs[missingName] != 0 || updatedEvs[elsewhere.ID] != 0 || updatedEvs[tenantOwn.ID] != 1 {
		t.Fatalf("events: %d for the failed item, %d and %d for the other organization's and the tenant's records",
			createdEvs[missingName], updatedEvs[elsewhere.ID], updatedEvs[tenantOwn.ID])
	}

	// 3. An id held by a record of another entity (live or deleted) fails
	// the batch, and nothing of it is written; an item with that id that
	// fails validation is only that item's error.
	taken := create(t, svc, org1, other, map[string]any{"name": "other"})
	gone := create(t, svc, org1, other, map[string]any{"name": "other, deleted"})
	must(t, svc.DeleteRecord(org1, other, gone.ID))
	for _, id := range []string{taken.ID, gone.ID} {
		newID := store.NewID()
		_, err = upsert(org1, svc, db, ent, []entities.RecordUpsert{
			{RecordID: newID, Values: map[string]any{"color": "red", "name": "n"}},
			{RecordID: ids[1], Values: map[string]any{"color": "red"}},
			{RecordID: id, Values: map[string]any{"color": "red", "name": "n"}},
		})
		if !errors.Is(err, store.ErrConflict) {
			t.Fatalf("a batch with an id of another entity's record: %v, want a conflict", err)
		}
		_, err = svc.GetRecord(tn.all(t), ent, newID, true)
		wantNotFound(t, "the new item of the failed batch", err)
	}
	wantValues(t, svc, tn.all(t), ent, ids[1], model[1])
	wantValues(t, svc, tn.all(t), other, taken.ID, map[string]any{"name": "other"})
	wantCounted(t, svc, tn.all(t), "after the failed batches", ent, "color", wantColor)
	out, err = upsert(org1, svc, db, ent, []entities.RecordUpsert{
		{RecordID: taken.ID, Values: map[string]any{"color": "red"}}, // no name: invalid
		{RecordID: ids[1], Values: map[string]any{"name": "renamed"}},
	})
	must(t, err)
	if out[0].Err == nil || out[1].Err != nil || out[1].Created {
		t.Fatalf("an invalid item with another entity's id: %+v", out)
	}
}

// Concurrent batch upserts and single updates of the same records apply
// one after the other: each record holds one of the values written, and
// the counted totals are exact.
func testConcurrentUpserts(t *testing.T, svc *entities.Service, db *store.DB) {
	tn := newTenant()
	ctx := tn.all(t)
	ent := newEntityID()
	define(t, svc, ctx, ent, "k", "integer", map[string]any{"filterable": true})
	define(t, svc, ctx, ent, "tag", "text", map[string]any{"filterable": true})
	const records = 20
	ids := make([]string, records)
	items := make([]entities.RecordUpsert, records)
	for i := range ids {
		ids[i] = store.NewID()
		items[i] = entities.RecordUpsert{RecordID: ids[i], Values: map[string]any{"k": 0, "tag": "start"}}
	}
	_, err := upsert(ctx, svc, db, ent, items)
	must(t, err)
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for g := range 4 {
		wg.Go(func() {
			for round := range 2 {
				batch := make([]entities.RecordUpsert, records)
				for i := range batch {
					// Every other batch clears tag, so that the counts of
					// both keys move.
					vals := map[string]any{"k": 1 + g}
					if round == 1 {
						vals["tag"] = nil
					}
					batch[i] = entities.RecordUpsert{RecordID: ids[(i+g*5)%records], Values: vals}
				}
				if _, err := upsert(ctx, svc, db, ent, batch); err != nil {
					errs <- err
				}
			}
		})
		wg.Go(func() {
			for _, id := range ids {
				_, err := svc.UpdateRecord(ctx, entities.RecordInput{EntityID: ent, RecordID: id,
					Values: map[string]any{"k": 10 + g, "tag": fmt.Sprint("u", g)}})
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		must(t, err)
	}
	byK, byTag := map[string]int{}, map[string]int{}
	for _, id := range ids {
		r, err := svc.GetRecord(ctx, ent, id, false)
		must(t, err)
		byK[fmt.Sprint(r.Values["k"])]++
		if tag, ok := r.Values["tag"]; ok {
			byTag[tag.(string)]++
		}
	}
	for _, v := range []string{"0", "1", "2", "3", "4", "10", "11", "12", "13"} {
		byK[v] += 0
	}
	for _, v := range []string{"start", "u0", "u1", "u2", "u3"} {
		byTag[v] += 0
	}
	wantCounted(t, svc, ctx, "after concurrent upserts and updates", ent, "k", byK)
	wantCounted(t, svc, ctx, "after concurrent upserts and updates", ent, "tag", byTag)
	_, total := list(t, svc, ctx, entities.RecordQuery{EntityID: ent})
	wantTotal(t, "every record", total, records)
}
