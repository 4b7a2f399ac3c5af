package entities_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/tenantkit/tenantkit/entities"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// searchTexts are record values for the search tests: non-ASCII letters
// whose case folding differs between engines' tokenizers and Go (German
// ß and ẞ, Turkish İ, final and medial sigma, Cherokee, Georgian), LIKE's
// metacharacters, quotes, and texts short and long.
var searchTexts = []string{
	"Ärger", "ärger-2", "STRAẞE", "straße", "Strasse", "İstanbul", "istanbul", "ΟΔΟΣ", "οδος", "οδοσ",
	"Ꭰꭰ-cherokee", "ᲐᲑᲒ-georgian", "აბგ-mkhedruli", "100%_done", `back\slash`, "a_b%c", `say "hi"`,
	"star*gazer^", "ab", "x.y", "report-2024", "Report 2024 final", "ǅemal", "ǆ", "Ⅻ-roman", "xyzzy",
}

// recordSearchTerms are the terms searched: each text's substrings, in
// its own case and upper-cased, and terms of their own (one spanning two
// values of a record, which no value holds).
func recordSearchTerms() []string {
	terms := []string{"ä", "Ä", "ẞ", "ß", "straße", "STRASSE", "İst", "ist", "İSTANBUL", "i̇st", "οδος", "ΟΔΟΣ",
		"δοσ", "%", "_", `\`, "0%_", "%_d", `\sl`, "a_b", "b%c", "ab", ".y", "nomatch", `"hi"`, "r*g", "^",
		"2024", " 2024 ", "rt 2", "true", "fals", "12.5", "zzy\nplu", "zzy plu", "Umbenannt", "übersicht"}
	for _, n := range searchTexts {
		r := []rune(n)
		for i := 0; i < len(r); i += 2 {
			for _, l := range []int{1, 2, 3, 5} {
				if i+l <= len(r) {
					terms = append(terms, string(r[i:i+l]), strings.ToUpper(string(r[i:i+l])))
				}
			}
		}
	}
	slices.Sort(terms)
	return slices.Compact(terms)
}

// The records list's search finds exactly the records the search's
// predicate selects reading every record (store.Dialect.
// JSONValuesContainFold: one of the values, folded, holds the folded
// term), with the same total, whether or not the engine's search index
// (migration 0008) serves the term: records written before the migration
// and after it, changed, soft-deleted (listed with deleted records too)
// and deleted, of two entities and two tenants, each finding its own;
// and with the total capped, where another tenant's candidates exhaust
// what the index is read for.
func TestRecordSearchIsExact(t *testing.T) {
	t.Parallel()
	storetest.EachFresh(t, func(t *testing.T, db *store.DB, engine string) {
		ctx, sc := storetest.NewScope(t)
		st := entities.NewSQLStore()
		other := store.Scope{TenantID: store.NewID()}
		tx := func(fn func(tx *store.Tx) error) {
			t.Helper()
			if err := db.Tx(ctx, fn); err != nil {
				t.Fatal(err)
			}
		}
		n := 0
		insert := func(tenant, entity string, values map[string]any) *entities.Record {
			n++
			r := &entities.Record{ID: store.NewID(), TenantID: tenant, EntityID: entity, Values: values,
				CreatedAt: db.Now(), UpdatedAt: db.Now()}
			tx(func(tx *store.Tx) error { return st.InsertRecords(ctx, tx, []*entities.Record{r}) })
			return r
		}
		values := func(i int, text string) map[string]any {
			v := map[string]any{"a": text, "b": "plugh", "n": float64(i) + 0.5, "ok": i%2 == 0}
			if i%3 == 0 {
				v["list"] = []any{"Tag-" + text, 12.5}
			}
			if i%5 == 0 {
				v["empty"] = nil
			}
			return v
		}
		// Half of the records before migration 0008, which indexes them.
		var mine []*entities.Record
		for i, text := range searchTexts[:len(searchTexts)/2] {
			mine = append(mine, insert(sc.TenantID, "s.one", values(i, text)))
		}
		if err := db.Migrate(ctx, entities.Migrations); err != nil {
			t.Fatal(err)
		}
		for i, text := range searchTexts[len(searchTexts)/2:] {
			mine = append(mine, insert(sc.TenantID, "s.one", values(i, text)))
		}
		// The other entity and the other tenant hold every text and more,
		// in another case.
		for i, text := range searchTexts {
			insert(sc.TenantID, "s.two", values(i, strings.ToUpper(text)))
			insert(other.TenantID, "s.one", values(i, strings.ToUpper(text)))
			insert(other.TenantID, "s.one", values(i, "other-"+text))
		}
		// Changes (to a text no term of the old one finds, and to one that
		// holds the old one), soft deletes and deletes, of records indexed
		// before and after the migration.
		for i, text := range map[int]string{0: "Umbenannt-Übersicht", len(mine) - 1: "renamed " + searchTexts[len(searchTexts)-1]} {
			tx(func(tx *store.Tx) error {
				_, err := st.UpdateRecord(ctx, tx, sc, "s.one", mine[i].ID, func(r *entities.Record) error {
					r.Values["a"] = text
					delete(r.Values, "list")
					r.UpdatedAt = db.Now()
					return nil
				})
				return err
			})
		}
		for _, r := range []*entities.Record{mine[2], mine[len(mine)-3]} {
			tx(func(tx *store.Tx) error {
				_, err := st.DeleteRecord(ctx, tx, sc, "s.one", r.ID, db.Now())
				return err
			})
		}
		for _, r := range []*entities.Record{mine[4], mine[len(mine)-5]} {
			if _, err := db.Exec(ctx, `DELETE FROM custom_entity_records WHERE tenant_id = $1 AND id = $2`, sc.TenantID, r.ID); err != nil {
				t.Fatal(err)
			}
		}
		if engine == "SQLite" {
			checkSearchIndexSize(t, db)
		}
		// scan lists the ids the search's predicate selects, reading every
		// record of the tenant's entity.
		scan := func(sc store.Scope, entity, term string, withDeleted bool) []string {
			t.Helper()
			live := " AND deleted_at IS NULL"
			if withDeleted {
				live = ""
			}
			ids, err := store.Many(ctx, db, func(s store.Scanner) (string, error) {
				var id string
				return id, s.Scan(&id)
			}, `SELECT id FROM custom_entity_records WHERE tenant_id = $1 AND entity_id = $2`+live+` AND `+
				db.Dialect().JSONValuesContainFold("data", "$3"), sc.TenantID, entity, store.LikeContains(store.FoldCase(term)))
			if err != nil {
				t.Fatal(err)
			}
			return ids
		}
		found := 0
		for _, term := range recordSearchTerms() {
			for _, c := range []struct {
				sc          store.Scope
				entity      string
				withDeleted bool
			}{{sc, "s.one", false}, {sc, "s.one", true}, {sc, "s.two", false}, {other, "s.one", false}} {
				want := scan(c.sc, c.entity, term, c.withDeleted)
				found += len(want)
				l := entities.RecordList{EntityID: c.entity, Search: term, WithDeleted: c.withDeleted, Limit: 1000}
				checkRecordSearch(t, st, db, c.sc, l, want)
			}
		}
		if found == 0 {
			t.Fatal("no term found a record")
		}
		// A text spanning two values is found by no search, and the
		// records changed away from a text, soft-deleted and deleted are
		// not found by it.
		if want := scan(sc, "s.one", "zzy\nplu", true); len(want) != 0 {
			t.Errorf("the scan for a text spanning two values found %d records", len(want))
		}
		for _, i := range []int{0, 2, 4} {
			if slices.Contains(scan(sc, "s.one", searchTexts[i], false), mine[i].ID) {
				t.Errorf("the scan for %q found the record changed or deleted", searchTexts[i])
			}
		}
		// With the total capped at 3, the other tenant's and entity's
		// candidates of a common term exhaust what the index is read for
		// (8) and the records are read as without it: the same answers.
		capped := storetest.WithSearchCap(ctx, 3)
		for _, term := range recordSearchTerms() {
			want := len(scan(sc, "s.one", term, false))
			items, total, err := st.ListRecords(capped, db, sc, entities.RecordList{EntityID: "s.one", Search: term, Limit: 2})
			if err != nil || total != min(want, 4) || len(items) != min(want, 2) {
				t.Errorf("search %q capped at 3: %d records of %d, %v; want %d of %d", term, len(items), total, err,
					min(want, 2), min(want, 4))
			}
		}
	}, storetest.MigrationsBefore(t, entities.Migrations, "0008"))
}

// checkRecordSearch fails t unless the list l of sc lists the records
// want (ids, any order) with their exact total, and a page of one, and
// the page after the first, have that total too.
func checkRecordSearch(t *testing.T, st *entities.SQLStore, db *store.DB, sc store.Scope, l entities.RecordList, want []string) {
	t.Helper()
	items, total, err := st.ListRecords(t.Context(), db, sc, l)
	if err != nil {
		t.Fatalf("search %q: %v", l.Search, err)
	}
	var got []string
	for _, r := range items {
		if r.TenantID != sc.TenantID || r.EntityID != l.EntityID {
			t.Fatalf("search %q found another tenant's or entity's record %v", l.Search, r.Values)
		}
		got = append(got, r.ID)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) || total != len(want) {
		t.Errorf("search %q of %s (deleted too: %v): %d records of %d, want %d", l.Search, l.EntityID, l.WithDeleted,
			len(got), total, len(want))
	}
	for _, page := range []struct{ limit, offset int }{{1, 0}, {1, 1}} {
		l.Limit, l.Offset = page.limit, page.offset
		items, total, err = st.ListRecords(t.Context(), db, sc, l)
		if err != nil || total != len(want) || len(items) != min(1, max(0, len(want)-page.offset)) {
			t.Errorf("search %q, a page of 1 at %d: %d records of %d, %v; want a total of %d", l.Search, page.offset,
				len(items), total, err, len(want))
		}
	}
}

// checkSearchIndexSize fails t unless SQLite's search index holds one key
// and one indexed text per record, none left behind by changes and
// deletes (results would not show a stale entry, the predicate drops it,
// but the index would grow with every change).
func checkSearchIndexSize(t *testing.T, db *store.DB) {
	t.Helper()
	var records, keys, indexed, unkeyed int
	if err := db.QueryRow(t.Context(), `SELECT (SELECT count(*) FROM custom_entity_records),
		(SELECT count(*) FROM record_search_keys), (SELECT count(*) FROM record_search),
		(SELECT count(*) FROM custom_entity_records r WHERE NOT EXISTS (SELECT 1 FROM record_search_keys k
			WHERE k.record_tenant_id = r.tenant_id AND k.record_id = r.id))`).Scan(&records, &keys, &indexed, &unkeyed); err != nil {
		t.Fatal(err)
	}
	if keys != records || indexed != records || unkeyed != 0 {
		t.Errorf("%d records, %d search keys, %d indexed texts, %d records without a key; want one of each per record",
			records, keys, indexed, unkeyed)
	}
}

// On SQLite, the records search index keeps one key and one indexed text
// per record through inserts, changes of the values (one batch update
// among them), soft deletes and deletes.
func TestRecordSearchIndexKeepsOneEntryPerRecord(t *testing.T) {
	t.Parallel()
	db := storetest.SQLite(t, entities.Migrations)
	ctx, sc := storetest.NewScope(t)
	st := entities.NewSQLStore()
	var recs []*entities.Record
	for i := range 20 {
		recs = append(recs, &entities.Record{ID: store.NewID(), TenantID: sc.TenantID, EntityID: "s.one",
			Values: map[string]any{"a": fmt.Sprintf("text %d", i)}, CreatedAt: db.Now(), UpdatedAt: db.Now()})
	}
	if err := db.Tx(ctx, func(tx *store.Tx) error { return st.InsertRecords(ctx, tx, recs) }); err != nil {
		t.Fatal(err)
	}
	checkSearchIndexSize(t, db)
	for i, r := range recs[:10] {
		if err := db.Tx(ctx, func(tx *store.Tx) error {
			if i%2 == 0 {
				_, err := st.DeleteRecord(ctx, tx, sc, "s.one", r.ID, db.Now())
				return err
			}
			_, err := st.UpdateRecord(ctx, tx, sc, "s.one", r.ID, func(r *entities.Record) error {
				r.Values["a"] = "changed"
				return nil
			})
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.Exec(ctx, `UPDATE custom_entity_records SET data = '{"a":"again"}' WHERE tenant_id = $1`, sc.TenantID); err != nil {
		t.Fatal(err)
	}
	checkSearchIndexSize(t, db)
	if _, err := db.Exec(ctx, `DELETE FROM custom_entity_records WHERE tenant_id = $1 AND id IN ($2, $3)`,
		sc.TenantID, recs[0].ID, recs[15].ID); err != nil {
		t.Fatal(err)
	}
	checkSearchIndexSize(t, db)
	for term, want := range map[string]int{"again": 18, "text": 0, "changed": 0} {
		_, total, err := st.ListRecords(ctx, db, sc, entities.RecordList{EntityID: "s.one", Search: term, Limit: 5, WithDeleted: true})
		if err != nil || total != want {
			t.Errorf("search %q: %d, %v; want %d", term, total, err, want)
		}
	}
}

// A search of three characters or more reads its candidates through the
// engine's index: on SQLite, a record missing from record_search is not
// found by such a term (a shorter one reads the records and finds it);
// on PostgreSQL, the list adds the index's condition (a record whose
// custom_entity_record_text does not hold the term is not found), and
// the condition, the tenant's and the entity's are served by
// custom_entity_records_search_idx.
func TestRecordSearchUsesItsIndex(t *testing.T) {
	t.Parallel()
	storetest.EachFresh(t, func(t *testing.T, db *store.DB, engine string) {
		ctx, sc := storetest.NewScope(t)
		st := entities.NewSQLStore()
		if err := db.Tx(ctx, func(tx *store.Tx) error {
			return st.InsertRecords(ctx, tx, []*entities.Record{{ID: store.NewID(), TenantID: sc.TenantID, EntityID: "s.one",
				Values: map[string]any{"title": "Invoice"}, CreatedAt: db.Now(), UpdatedAt: db.Now()}})
		}); err != nil {
			t.Fatal(err)
		}
		list := func(q store.Querier, term string) int {
			t.Helper()
			_, total, err := st.ListRecords(ctx, q, sc, entities.RecordList{EntityID: "s.one", Search: term, Limit: 10})
			if err != nil {
				t.Fatalf("search %q: %v", term, err)
			}
			return total
		}
		for _, term := range []string{"in", "VOICE"} {
			if total := list(db, term); total != 1 {
				t.Fatalf("search %q: %d; want 1", term, total)
			}
		}
		if engine == "PostgreSQL" {
			errRollback := errors.New("rolled back")
			// The index's text made to hold nothing (rolled back): the list
			// reads its candidates through the index's condition.
			err := db.Tx(ctx, func(tx *store.Tx) error {
				if _, err := tx.Exec(ctx, `CREATE OR REPLACE FUNCTION custom_entity_record_text(data jsonb) RETURNS text
					LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $fn$ SELECT '' $fn$`); err != nil {
					return err
				}
				for term, want := range map[string]int{"in": 1, "VOICE": 0} {
					if total := list(tx, term); total != want {
						t.Errorf("search %q with the index's text emptied: %d; want %d", term, total, want)
					}
				}
				return errRollback
			})
			if !errors.Is(err, errRollback) {
				t.Fatal(err)
			}
			// The other indexes dropped and reading the table ruled out, for
			// the planner to have only the search index to weigh; rolled
			// back.
			var plan []string
			err = db.Tx(ctx, func(tx *store.Tx) error {
				for _, stmt := range []string{`DROP INDEX custom_entity_records_list_idx, custom_entity_records_live_created_idx,
					custom_entity_records_live_updated_idx`, `ALTER TABLE custom_entity_records DROP CONSTRAINT custom_entity_records_pkey`,
					`SET LOCAL enable_seqscan = off`} {
					if _, err := tx.Exec(ctx, stmt); err != nil {
						return err
					}
				}
				var err error
				plan, err = store.Many(ctx, tx, func(s store.Scanner) (string, error) {
					var line string
					return line, s.Scan(&line)
				}, `EXPLAIN SELECT 1 FROM custom_entity_records WHERE tenant_id = $1 AND entity_id = $2
					AND custom_entity_record_text(data) LIKE $3`, sc.TenantID, "s.one", store.LikeContains("voice"))
				if err != nil {
					return err
				}
				return errRollback
			})
			if !errors.Is(err, errRollback) || !strings.Contains(strings.Join(plan, "\n"), "custom_entity_records_search_idx") {
				t.Fatalf("the search's plan does not use custom_entity_records_search_idx (%v):\n%s", err, strings.Join(plan, "\n"))
			}
			tenantInIndex := false
			for _, line := range plan {
				tenantInIndex = tenantInIndex || strings.Contains(line, "Index Cond") && strings.Contains(line, "tenant_id")
			}
			if !tenantInIndex {
				t.Fatalf("custom_entity_records_search_idx does not select the tenant:\n%s", strings.Join(plan, "\n"))
			}
			return
		}
		if _, err := db.Exec(ctx, `INSERT INTO record_search (record_search) VALUES ('delete-all')`); err != nil {
			t.Fatal(err)
		}
		for term, want := range map[string]int{"in": 1, "VOICE": 0} {
			if total := list(db, term); total != want {
				t.Errorf("search %q with the index emptied: %d; want %d", term, total, want)
			}
		}
	}, entities.Migrations)
}
