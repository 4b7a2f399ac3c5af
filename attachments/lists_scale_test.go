package attachments_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/tenantkit/tenantkit/attachments"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// TestListLibraryAtScale measures the library's first page (25
// attachments) with its exact total and the tags to filter by, as the
// Service's Library asks the Store for them, as a tenant's attachments
// grow: newest first, by file name, by partition, by one tag, by two
// tags that no attachment has both of, by two tags one of which one
// attachment in 1,000 carries, and by a file-name search (a term in 10% of the names, one in 1%, one in none), on each engine. It is a measurement, not a test, and
// runs only when TENANTKIT_BENCH_LIST_ROWS lists the attachment counts to
// measure at (for example "100000,1000000"); they are inserted straight
// into the tables (storetest.SeedRows: multi-row INSERTs, 1,000 per
// transaction) over two partitions, each with one of four tags (one in 1,000 also "rare"), the kept
// counts recounted as migration 0003 counts them; storetest.GrowAndMeasure
// says how the table grows and what is timed. A search's total counts
// at most store.SearchCap(ctx)+1 matches; the search that matches nothing
// reads every name (10 calls at most), as does the baseline, the unfiltered total
// and tags counted as before the kept counts (20 calls at most).
//
//	TENANTKIT_BENCH_LIST_ROWS=100000,1000000 go test ./attachments -run TestListLibraryAtScale -v -timeout 2h
func TestListLibraryAtScale(t *testing.T) {
	sizes, calls := storetest.ScaleSizes(t)
	storetest.EachFresh(t, func(t *testing.T, db *store.DB, engine string) { scaleListLibrary(t, db, engine, sizes, calls) },
		attachments.Migrations)
}

// TestListLibraryStaysFlat runs TestListLibraryAtScale's cases at two sizes and fails
// when one reads more rows as the table grows (storetest.FlatLists).
func TestListLibraryStaysFlat(t *testing.T) {
	t.Parallel()
	storetest.FlatLists(t, scaleListLibrary, attachments.Migrations)
}

func scaleListLibrary(t *testing.T, db *store.DB, engine string, sizes []int, calls int) {
	ctx := t.Context()
	st := attachments.NewSQLStore()
	base := time.Now().UTC().Add(-time.Hour).Truncate(time.Microsecond)
	partition := func(i int) string { return []string{"docs", "images"}[i%2] }
	tag := func(i int) string { return fmt.Sprint("tag-", i/2%4) }
	// One attachment in 1,000 (all of them of tag-0) also carries "rare".
	const rareEvery = 1000
	tagsJSON := func(i int) string {
		if i%rareEvery == 0 {
			return `["` + tag(i) + `","rare"]`
		}
		return `["` + tag(i) + `"]`
	}
	seed := func(tenant string, from, to int) {
		if from == 0 {
			for _, code := range []string{"docs", "images"} {
				if err := db.Tx(ctx, func(tx *store.Tx) error {
					return st.InsertPartition(ctx, tx, &attachments.Partition{ID: store.NewID(), TenantID: tenant, Code: code,
						Title: code, CreatedAt: base, UpdatedAt: base}, false)
				}); err != nil {
					t.Fatal(err)
				}
			}
		}
		ids := make([]string, to)
		for i := from; i < to; i++ {
			ids[i] = store.NewIDAt(base.Add(time.Duration(i) * time.Millisecond))
		}
		storetest.SeedRows(t, db, "attachments", `id, tenant_id, entity_id, record_id, partition_code, file_name, file_size,
			mime_type, storage_key, tags, assignments, custom_fields, created_at, updated_at`, from, to, func(i int) []any {
			at := base.Add(time.Duration(i) * time.Millisecond)
			return []any{ids[i], tenant, "orders", fmt.Sprint("order-", i), partition(i), fmt.Sprintf("scan-%07d.pdf", i),
				1000 + i%5000, "application/pdf", "k/" + ids[i], tagsJSON(i), "[]", "{}", at, at}
		})
		storetest.SeedRows(t, db, "attachment_tags", "attachment_id, tenant_id, tag", from, to, func(i int) []any {
			return []any{ids[i], tenant, tag(i)}
		})
		storetest.SeedRows(t, db, "attachment_tags", "attachment_id, tenant_id, tag", (from+rareEvery-1)/rareEvery, (to+rareEvery-1)/rareEvery,
			func(j int) []any { return []any{ids[j*rareEvery], tenant, "rare"} })
		err := db.Tx(ctx, func(tx *store.Tx) error {
			for _, q := range []string{`DELETE FROM attachment_counts WHERE tenant_id = $1`,
				`DELETE FROM attachment_tag_counts WHERE tenant_id = $1`,
				`INSERT INTO attachment_counts (tenant_id, organization_id, partition_code, slot, n)
					SELECT tenant_id, COALESCE(organization_id, ''), partition_code, 0, count(*) FROM attachments WHERE tenant_id = $1
					GROUP BY tenant_id, COALESCE(organization_id, ''), partition_code`,
				`INSERT INTO attachment_tag_counts (tenant_id, organization_id, partition_code, tag, slot, n)
					SELECT a.tenant_id, COALESCE(a.organization_id, ''), a.partition_code, t.tag, 0, count(*)
					FROM attachment_tags t JOIN attachments a ON a.id = t.attachment_id WHERE a.tenant_id = $1
					GROUP BY a.tenant_id, COALESCE(a.organization_id, ''), a.partition_code, t.tag`} {
				if _, err := tx.Exec(ctx, q, tenant); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		storetest.Analyze(t, db)
		// As autovacuum does on a live server a while after a bulk
		// load: hint bits set and the visibility map written, so that
		// the timed reads do not write the pages they read.
		storetest.Vacuum(t, db, "attachments", "attachment_tags")
		// The plans of a rare term's page and count (with ExplainEnv set,
		// on PostgreSQL).
		search := `FROM attachments a WHERE a.tenant_id = $1 AND ` + db.Dialect().ContainsFold("a.file_name", "$2")
		for _, term := range []string{"17.pdf", "nomatch"} {
			storetest.Explain(t, db, "page, search "+term, `SELECT a.id `+search+` ORDER BY a.created_at DESC, a.id DESC LIMIT 25`,
				tenant, store.LikeContains(term))
			storetest.Explain(t, db, "count, search "+term, `SELECT `+store.CountCappedExpr(ctx, search), tenant, store.LikeContains(term))
		}
		// Two tags, from the rarest one's rows (as libraryByTags reads them;
		// the page carries the total when the matches cannot be dense, as
		// with "rare").
		byRarest := `FROM attachment_tags r CROSS JOIN attachments a WHERE a.tenant_id = $1 AND r.tenant_id = $1 AND r.tag = $2
			AND a.id = r.attachment_id AND EXISTS (SELECT 1 FROM attachment_tags t WHERE t.attachment_id = a.id AND t.tenant_id = $1 AND t.tag = $3)`
		for _, tags := range [][2]string{{"rare", "tag-0"}, {"tag-1", "tag-2"}} {
			storetest.Explain(t, db, "count, tags "+tags[0]+" and "+tags[1], `SELECT count(*) `+byRarest, tenant, tags[0], tags[1])
			storetest.Explain(t, db, "page, tags "+tags[0]+" and "+tags[1], `SELECT a.id, count(*) OVER () FROM (SELECT a.* `+byRarest+` OFFSET 0) a
				ORDER BY a.created_at DESC, a.id DESC LIMIT 25`, tenant, tags[0], tags[1])
		}
	}
	wantTags := []string{"rare", "tag-0", "tag-1", "tag-2", "tag-3"}
	cases := func(tenant string, rows int) []storetest.ScaleCase {
		sc := store.Scope{TenantID: tenant}
		tagged := 0
		for i := range rows {
			if tag(i) == "tag-1" {
				tagged++
			}
		}
		// What Service.Library asks for: the page with its total, and the
		// tags to filter by.
		listTotal := func(name string, f attachments.LibraryFilter, want, wantTotal, calls int) storetest.ScaleCase {
			f.Limit = 25
			return storetest.ScaleCase{Name: name, Calls: calls, List: func() error {
				items, total, err := st.Library(ctx, db, sc, f)
				if err != nil {
					return err
				}
				tags, err := st.Tags(ctx, db, sc)
				if err == nil && !slices.Equal(tags, wantTags) {
					err = fmt.Errorf("tags %v, want %v", tags, wantTags)
				}
				if err != nil {
					return err
				}
				return storetest.CheckPage(name, len(items), total, min(25, want), wantTotal)
			}}
		}
		twoTagsAsBefore := func(name, tag1, tag2 string, want int) storetest.ScaleCase {
			where := `FROM attachments a WHERE a.tenant_id = $1
				AND EXISTS (SELECT 1 FROM attachment_tags t WHERE t.attachment_id = a.id AND t.tenant_id = $1 AND t.tag = $2)
				AND EXISTS (SELECT 1 FROM attachment_tags t WHERE t.attachment_id = a.id AND t.tenant_id = $1 AND t.tag = $3)`
			return storetest.ScaleCase{Name: name, Calls: 10, List: func() error {
				var total int
				if err := db.QueryRow(ctx, `SELECT count(*) `+where, tenant, tag1, tag2).Scan(&total); err != nil {
					return err
				}
				page, err := store.Many(ctx, db, func(s store.Scanner) (string, error) {
					var id string
					return id, s.Scan(&id)
				}, `SELECT a.id `+where+` ORDER BY a.created_at DESC, a.id DESC LIMIT 25`, tenant, tag1, tag2)
				if err != nil {
					return err
				}
				return storetest.CheckPage(name, len(page), total, min(25, want), want)
			}}
		}
		// grows names why a case's reads grow with the table
		// (storetest.FlatLists leaves it out).
		grows := func(c storetest.ScaleCase, why string) storetest.ScaleCase {
			c.Grows = why
			return c
		}
		list := func(name string, f attachments.LibraryFilter, want, calls int) storetest.ScaleCase {
			return listTotal(name, f, want, want, calls)
		}
		search := func(name, term string, want, calls int) storetest.ScaleCase {
			return listTotal(name, attachments.LibraryFilter{Search: term, SortDesc: true}, want, min(want, store.SearchCap(ctx)+1), calls)
		}
		return []storetest.ScaleCase{
			list("newest first", attachments.LibraryFilter{SortDesc: true}, rows, 0),
			list("by file name", attachments.LibraryFilter{SortField: "fileName"}, rows, 0),
			list("partition", attachments.LibraryFilter{Partition: "images", SortDesc: true}, rows/2, 0),
			list("tag", attachments.LibraryFilter{Tags: []string{"tag-1"}, SortDesc: true}, tagged, 0),
			// Two tags count the attachments that have both: none here
			// (each has one), the worst case, which reads a tag's rows.
			grows(listTotal("two tags, none has both", attachments.LibraryFilter{Tags: []string{"tag-1", "tag-2"}, SortDesc: true}, 0, 0, 10),
				"no attachment has both tags, so every attachment of the rarer one is read (doc.go: several tags)"),
			// One rare tag: the rare tag's attachments (one in 1,000 of the
			// tenant's) are each read for the exact total.
			grows(list("two tags, one rare", attachments.LibraryFilter{Tags: []string{"tag-0", "rare"}, SortDesc: true}, (rows+rareEvery-1)/rareEvery, 0),
				"the rarer tag's attachments, one in 1,000 of the tenant's, are each read for the exact total (doc.go: several tags)"),
			// The baselines: the same two filters as Library read them
			// before it started from the rarest tag, every attachment of
			// the tenant tested for each tag (10 calls at most).
			grows(twoTagsAsBefore("two tags, none has both, as before", "tag-1", "tag-2", 0), "the baseline"),
			grows(twoTagsAsBefore("two tags, one rare, as before", "tag-0", "rare", (rows+rareEvery-1)/rareEvery), "the baseline"),
			// A search counts at most store.SearchCap(ctx)+1 matches: a term
			// in 10% of the names (capped above 100,000 rows), one in
			// 1% (10,000 at 1,000,000: exact), and one in none, which
			// still reads every name of the tenant.
			grows(search("search 10%", "7.PDF", rows/10, 0), "a search's capped total reads its matches up to the cap"),
			grows(search("search 1%", "17.pdf", rows/100, 0), "a search's capped total reads its matches up to the cap"),
			search("search, no match", "nomatch", 0, 10),
			// The dashboards' storage widget (Service.StorageUsage): the
			// kept usage and the kept file count.
			{Name: "storage widget's usage and file count", List: func() error {
				if _, err := st.Usage(ctx, db, tenant); err != nil {
					return err
				}
				n, err := st.CountAttachments(ctx, db, tenant)
				if err != nil {
					return err
				}
				return storetest.CheckPage("storage widget", 0, n, 0, rows)
			}},
			{Name: "total and tags by count(*), as before 0003", Calls: 20, Grows: "the baseline: as before the kept counts", List: func() error {
				var n, tags int
				if err := db.QueryRow(ctx, `SELECT count(*) FROM attachments WHERE tenant_id = $1`, tenant).Scan(&n); err != nil {
					return err
				}
				if err := db.QueryRow(ctx, `SELECT count(*) FROM (SELECT DISTINCT t.tag FROM attachment_tags t
					JOIN attachments a ON a.id = t.attachment_id WHERE a.tenant_id = $1) d`, tenant).Scan(&tags); err != nil {
					return err
				}
				return storetest.CheckPage("count(*)", tags, n, len(wantTags), rows)
			}},
		}
	}
	storetest.GrowAndMeasure(t, db, "attachments library", engine, sizes, calls, seed, cases)
}
