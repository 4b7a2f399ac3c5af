package attachments_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/tenantkit/tenantkit/attachments"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// searchNames are file names for the name-search tests: non-ASCII
// letters whose case folding differs between engines' tokenizers and Go
// (German ß and ẞ, Turkish İ, final and medial sigma, Cherokee,
// Georgian), LIKE's metacharacters, quotes, and names short and long.
var searchNames = []string{
	"Ärger.pdf", "ärger-2.PDF", "STRAẞE.txt", "straße.txt", "Strasse.txt", "İstanbul.png", "istanbul.png",
	"ΟΔΟΣ.doc", "οδος.doc", "οδοσ.doc", "Ꭰꭰ-cherokee.txt", "ᲐᲑᲒ-georgian.txt", "აბგ-mkhedruli.txt",
	"100%_done.pdf", `back\slash.pdf`, "a_b%c.txt", `say "hi".txt`, "star*gazer^.txt", "ab", "x.y",
	"report-2024.PDF", "Report 2024 final.pdf", "ǅemal.txt", "ǆ.txt", "Ⅻ-roman.txt",
}

// searchTerms are the terms searched: each name's substrings, in its own
// case and upper-cased, and terms of their own.
func searchTerms() []string {
	terms := []string{"ä", "Ä", "ẞ", "ß", "straße", "STRASSE", "strasse", "İst", "ist", "İSTANBUL", "i̇st", "οδος",
		"ΟΔΟΣ", "δοσ", "δος", "%", "_", `\`, "0%_", "%_d", `\sl`, "a_b", "b%c", "x", "ab", ".y", "pdf", ".PDF",
		"nomatch", `"hi"`, `y "h`, "r*g", "^.t", "ꭰꭰ-", "ᲐᲑ", "აბგ", "ǆem", "ⅻ-r", "2024", " 2024 ", "rt 2"}
	for _, n := range searchNames {
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

// The library's file-name search finds exactly the attachments whose
// case-folded name holds the case-folded term (store.FoldCase), with the
// same total, whether or not an index serves the term (SQLite's trigram
// index serves terms of three characters or more, PostgreSQL's pg_trgm
// index those with a trigram): names written before migration 0004 and
// after it, renamed and deleted ones, and never another tenant's.
func TestLibrarySearchIsExact(t *testing.T) {
	t.Parallel()
	storetest.EachFresh(t, func(t *testing.T, db *store.DB, _ string) {
		ctx, sc := storetest.NewScope(t)
		st := attachments.NewSQLStore()
		other := store.Scope{TenantID: store.NewID()}
		tx := func(fn func(tx *store.Tx) error) {
			t.Helper()
			if err := db.Tx(ctx, fn); err != nil {
				t.Fatal(err)
			}
		}
		names := map[string]string{} // sc's attachments: id → file name
		insert := func(tenant, name string) *attachments.Attachment {
			a := &attachments.Attachment{ID: store.NewID(), TenantID: tenant, EntityID: "e", RecordID: "r", FileName: name,
				FileSize: 1, MimeType: "text/plain", PartitionCode: "docs", StorageKey: "k", CreatedAt: db.Now(), UpdatedAt: db.Now()}
			tx(func(tx *store.Tx) error { return st.InsertAttachment(ctx, tx, a) })
			if tenant == sc.TenantID {
				names[a.ID] = name
			}
			return a
		}
		for _, tenant := range []string{sc.TenantID, other.TenantID} {
			tx(func(tx *store.Tx) error {
				return st.InsertPartition(ctx, tx, &attachments.Partition{ID: store.NewID(), TenantID: tenant, Code: "docs",
					Title: "docs", CreatedAt: db.Now(), UpdatedAt: db.Now()}, false)
			})
		}
		// Half of the names before migration 0004, which indexes them.
		var mine []*attachments.Attachment
		for _, n := range searchNames[:len(searchNames)/2] {
			mine = append(mine, insert(sc.TenantID, n))
		}
		if err := db.Migrate(ctx, attachments.Migrations); err != nil {
			t.Fatal(err)
		}
		for _, n := range searchNames[len(searchNames)/2:] {
			mine = append(mine, insert(sc.TenantID, n))
		}
		// The other tenant holds every name and more, in another case.
		for _, n := range searchNames {
			insert(other.TenantID, strings.ToUpper(n))
			insert(other.TenantID, "other-"+n)
		}
		// Renames (to a name no term of the old one finds, and to a name
		// that holds the old one) and deletes, of names indexed before and
		// after the migration.
		for i, name := range map[int]string{0: "Umbenannt-Übersicht.pdf", len(mine) - 1: "renamed " + mine[len(mine)-1].FileName} {
			a := mine[i]
			a.FileName = name
			tx(func(tx *store.Tx) error { return st.UpdateAttachment(ctx, tx, a) })
			names[a.ID] = name
		}
		for _, a := range []*attachments.Attachment{mine[2], mine[len(mine)-3]} {
			tx(func(tx *store.Tx) error { return st.DeleteAttachment(ctx, tx, sc.TenantID, a.ID) })
			delete(names, a.ID)
		}
		if db.Dialect().Name() == "sqlite" {
			// The index forgets what is deleted and renamed: one key and
			// one indexed name per attachment, none left behind (results
			// would not show a stale entry, the predicate drops it, but
			// the index would grow with every delete and rename).
			var attachmentsN, keys, indexed int
			if err := db.QueryRow(ctx, `SELECT (SELECT count(*) FROM attachments), (SELECT count(*) FROM attachment_name_keys),
				(SELECT count(*) FROM attachment_names)`).Scan(&attachmentsN, &keys, &indexed); err != nil {
				t.Fatal(err)
			}
			if keys != attachmentsN || indexed != attachmentsN {
				t.Errorf("%d attachments, %d name keys, %d indexed names; want one of each per attachment", attachmentsN, keys, indexed)
			}
		}
		terms := append(searchTerms(), "Umbenannt", "übersicht", "renamed", "ÄRGER", mine[2].FileName, mine[len(mine)-3].FileName)
		for _, term := range terms {
			var want []string
			for id, name := range names {
				if strings.Contains(store.FoldCase(name), store.FoldCase(term)) {
					want = append(want, id)
				}
			}
			checkSearch(t, st, db, sc, term, want, true)
		}
		// With the total capped at 3, the other tenant's candidates of a
		// common term exhaust what the index is read for (8) and the names
		// are read as without it: the same answers.
		capped := storetest.WithSearchCap(ctx, 3)
		for _, term := range terms {
			want := 0
			for _, name := range names {
				if strings.Contains(store.FoldCase(name), store.FoldCase(term)) {
					want++
				}
			}
			items, total, err := st.Library(capped, db, sc, attachments.LibraryFilter{Search: term, Limit: 2})
			if err != nil || total != min(want, 4) || len(items) != min(want, 2) {
				t.Errorf("search %q capped at 3: %d attachments of %d, %v; want %d of %d", term, len(items), total, err,
					min(want, 2), min(want, 4))
			}
		}
		// The terms searched in the other tenant find its rows only.
		items, total, err := st.Library(ctx, db, other, attachments.LibraryFilter{Search: "Umbenannt", Limit: 100})
		if err != nil || total != 0 || len(items) != 0 {
			t.Errorf("the other tenant's search for a name of this tenant: %d rows of %d, %v", len(items), total, err)
		}
	}, storetest.MigrationsBefore(t, attachments.Migrations, "0004"))
}

// checkSearch fails t unless the library of sc searched for term lists
// the attachments want (ids, any order) with their exact total, and a
// page of one also has that total.
func checkSearch(t *testing.T, st *attachments.SQLStore, db *store.DB, sc store.Scope, term string, want []string, pageOfOne bool) {
	t.Helper()
	items, total, err := st.Library(t.Context(), db, sc, attachments.LibraryFilter{Search: term, Limit: 1000})
	if err != nil {
		t.Fatalf("search %q: %v", term, err)
	}
	var got []string
	for _, a := range items {
		if a.TenantID != sc.TenantID {
			t.Fatalf("search %q found another tenant's %q", term, a.FileName)
		}
		got = append(got, a.ID)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) || total != len(want) {
		t.Errorf("search %q: %d attachments of %d, want %d", term, len(got), total, len(want))
	}
	if !pageOfOne {
		return
	}
	items, total, err = st.Library(t.Context(), db, sc, attachments.LibraryFilter{Search: term, Limit: 1})
	if err != nil || total != len(want) || len(items) != min(1, len(want)) {
		t.Errorf("search %q, a page of 1: %d attachments of %d, %v; want a total of %d", term, len(items), total, err, len(want))
	}
}

// Every letter that Go's lower-casing (store.FoldCase, tk_fold on
// SQLite) changes is found by a search for it (which folds it), whatever
// an engine's index makes of it: SQLite's trigram tokenizer folds 391 of
// them (İ, Cherokee, Georgian Mtavruli, …) otherwise than Go, which is
// why its index holds the names folded by tk_fold.
func TestLibrarySearchFoldsEveryLetter(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx, sc := storetest.NewScope(t)
		st := attachments.NewSQLStore()
		tenant := sc.TenantID
		var letters []rune
		for c := rune(0); c <= unicode.MaxRune; c++ {
			if utf8.ValidRune(c) && unicode.ToLower(c) != c {
				letters = append(letters, c)
			}
		}
		if err := db.Tx(ctx, func(tx *store.Tx) error {
			if err := st.InsertPartition(ctx, tx, &attachments.Partition{ID: store.NewID(), TenantID: tenant, Code: "docs",
				Title: "docs", CreatedAt: db.Now(), UpdatedAt: db.Now()}, false); err != nil {
				return err
			}
			for _, c := range letters {
				if err := st.InsertAttachment(ctx, tx, &attachments.Attachment{ID: fmt.Sprintf("%x", c), TenantID: tenant,
					EntityID: "e", RecordID: "r", FileName: fmt.Sprintf("<%c>", c), FileSize: 1, MimeType: "text/plain",
					PartitionCode: "docs", StorageKey: "k", CreatedAt: db.Now(), UpdatedAt: db.Now()}); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		for _, c := range letters {
			term := fmt.Sprintf("<%c>", c)
			var want []string
			for _, d := range letters {
				if strings.Contains(store.FoldCase(fmt.Sprintf("<%c>", d)), store.FoldCase(term)) {
					want = append(want, fmt.Sprintf("%x", d))
				}
			}
			checkSearch(t, st, db, sc, term, want, false)
		}
	}, attachments.Migrations)
}

// A search of three characters or more reads its candidates from the
// engine's index: on SQLite, a name missing from attachment_names is not
// found by such a term (a shorter one reads the names and finds it); on
// PostgreSQL, the search's predicate, the tenant's and the name's, can
// be served by attachments_name_search_idx (the index's expression is
// the one Dialect.ContainsFold writes).
func TestLibrarySearchUsesItsIndex(t *testing.T) {
	t.Parallel()
	storetest.EachFresh(t, func(t *testing.T, db *store.DB, engine string) {
		ctx, sc := storetest.NewScope(t)
		st := attachments.NewSQLStore()
		if err := db.Tx(ctx, func(tx *store.Tx) error {
			if err := st.InsertPartition(ctx, tx, &attachments.Partition{ID: store.NewID(), TenantID: sc.TenantID, Code: "docs",
				Title: "docs", CreatedAt: db.Now(), UpdatedAt: db.Now()}, false); err != nil {
				return err
			}
			return st.InsertAttachment(ctx, tx, &attachments.Attachment{ID: store.NewID(), TenantID: sc.TenantID,
				EntityID: "e", RecordID: "r", FileName: "Invoice.pdf", FileSize: 1, MimeType: "application/pdf",
				PartitionCode: "docs", StorageKey: "k", CreatedAt: db.Now(), UpdatedAt: db.Now()})
		}); err != nil {
			t.Fatal(err)
		}
		for _, term := range []string{"in", "VOICE"} {
			if _, total, err := st.Library(ctx, db, sc, attachments.LibraryFilter{Search: term, Limit: 10}); err != nil || total != 1 {
				t.Fatalf("search %q: %d, %v; want 1", term, total, err)
			}
		}
		if engine == "PostgreSQL" {
			// The other indexes dropped and reading the table ruled out,
			// for the planner to have only the search index to weigh
			// against reading a whole other index; rolled back.
			var plan []string
			errRollback := errors.New("rolled back")
			err := db.Tx(ctx, func(tx *store.Tx) error {
				for _, stmt := range []string{`DROP INDEX attachments_library_idx, attachments_partition_idx,
					attachments_name_idx, attachments_size_idx`, `SET LOCAL enable_seqscan = off`} {
					if _, err := tx.Exec(ctx, stmt); err != nil {
						return err
					}
				}
				var err error
				plan, err = store.Many(ctx, tx, func(s store.Scanner) (string, error) {
					var line string
					return line, s.Scan(&line)
				}, `EXPLAIN SELECT 1 FROM attachments a WHERE a.tenant_id = $1 AND `+db.Dialect().ContainsFold("a.file_name", "$2"),
					sc.TenantID, store.LikeContains("VOICE"))
				if err != nil {
					return err
				}
				return errRollback
			})
			if !errors.Is(err, errRollback) || !strings.Contains(strings.Join(plan, "\n"), "attachments_name_search_idx") {
				t.Fatalf("the search's plan does not use attachments_name_search_idx (%v):\n%s", err, strings.Join(plan, "\n"))
			}
			// The index selects the tenant's rows too (btree_gin), so
			// another tenant's names holding the term are not read.
			tenantInIndex := false
			for _, line := range plan {
				tenantInIndex = tenantInIndex || strings.Contains(line, "Index Cond") && strings.Contains(line, "tenant_id")
			}
			if !tenantInIndex {
				t.Fatalf("attachments_name_search_idx does not select the tenant:\n%s", strings.Join(plan, "\n"))
			}
			return
		}
		if _, err := db.Exec(ctx, `INSERT INTO attachment_names (attachment_names) VALUES ('delete-all')`); err != nil {
			t.Fatal(err)
		}
		for term, want := range map[string]int{"in": 1, "VOICE": 0} {
			if _, total, err := st.Library(ctx, db, sc, attachments.LibraryFilter{Search: term, Limit: 10}); err != nil || total != want {
				t.Errorf("search %q with the index emptied: %d, %v; want %d", term, total, err, want)
			}
		}
	}, attachments.Migrations)
}

// On SQLite, the file-name search finds what it found before the
// attachments table's rowids were renumbered, as VACUUM may do (its
// primary key is TEXT, not a rowid; SQLite 3.54 keeps them, but a dump
// and restore or a rebuild of the table does not): attachments deleted
// from the middle, the database vacuumed and the rowids made consecutive
// again, then attachments written, renamed and deleted after it. Every
// search still finds exactly the attachments whose folded name holds the
// term.
func TestLibrarySearchSurvivesVacuum(t *testing.T) {
	t.Parallel()
	db := storetest.SQLite(t, attachments.Migrations)
	ctx, sc := storetest.NewScope(t)
	st := attachments.NewSQLStore()
	tx := func(fn func(tx *store.Tx) error) {
		t.Helper()
		if err := db.Tx(ctx, fn); err != nil {
			t.Fatal(err)
		}
	}
	tx(func(tx *store.Tx) error {
		return st.InsertPartition(ctx, tx, &attachments.Partition{ID: store.NewID(), TenantID: sc.TenantID, Code: "docs",
			Title: "docs", CreatedAt: db.Now(), UpdatedAt: db.Now()}, false)
	})
	names := map[string]string{} // id → file name
	insert := func(name string) *attachments.Attachment {
		a := &attachments.Attachment{ID: store.NewID(), TenantID: sc.TenantID, EntityID: "e", RecordID: "r", FileName: name,
			FileSize: 1, MimeType: "text/plain", PartitionCode: "docs", StorageKey: "k", CreatedAt: db.Now(), UpdatedAt: db.Now()}
		tx(func(tx *store.Tx) error { return st.InsertAttachment(ctx, tx, a) })
		names[a.ID] = name
		return a
	}
	var all []*attachments.Attachment
	for i := range 60 {
		all = append(all, insert(fmt.Sprintf("file-%03d %s", i, searchNames[i%len(searchNames)])))
	}
	for _, a := range all[10:40] {
		tx(func(tx *store.Tx) error { return st.DeleteAttachment(ctx, tx, sc.TenantID, a.ID) })
		delete(names, a.ID)
	}
	if _, err := db.Exec(ctx, `VACUUM`); err != nil {
		t.Fatal(err)
	}
	// The rowids renumbered 1, 2, … in their order, as a VACUUM that
	// copies the rows without them does; no trigger of the table fires.
	tx(func(tx *store.Tx) error {
		ids, err := store.Many(ctx, tx, func(s store.Scanner) (string, error) {
			var id string
			return id, s.Scan(&id)
		}, `SELECT id FROM attachments ORDER BY rowid`)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE attachments SET rowid = -rowid`); err != nil {
			return err
		}
		for i, id := range ids {
			if _, err := tx.Exec(ctx, `UPDATE attachments SET rowid = $1 WHERE id = $2`, i+1, id); err != nil {
				return err
			}
		}
		return nil
	})
	insert("after-vacuum Quittung.pdf")
	renamed := all[50]
	renamed.FileName = "renamed after vacuum.txt"
	tx(func(tx *store.Tx) error { return st.UpdateAttachment(ctx, tx, renamed) })
	names[renamed.ID] = renamed.FileName
	tx(func(tx *store.Tx) error { return st.DeleteAttachment(ctx, tx, sc.TenantID, all[55].ID) })
	delete(names, all[55].ID)
	for _, term := range append(searchTerms(), "after-vacuum", "QUITTUNG", "renamed after", "file-0", "file-04", "file-05") {
		var want []string
		for id, name := range names {
			if strings.Contains(store.FoldCase(name), store.FoldCase(term)) {
				want = append(want, id)
			}
		}
		checkSearch(t, st, db, sc, term, want, true)
	}
}
