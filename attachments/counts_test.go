package attachments_test

import (
	"slices"
	"testing"

	"github.com/tenantkit/tenantkit/attachments"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// The library's totals, available tags and the tenant's file count come
// from kept counts that follow inserts, tag changes and deletes, per
// partition, tag and organization, as counting the attachments would.
func TestLibraryCountsFollowWrites(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx, sc := storetest.NewScope(t)
		st := attachments.NewSQLStore()
		tn := sc.TenantID
		tx := func(fn func(tx *store.Tx) error) {
			t.Helper()
			if err := db.Tx(ctx, fn); err != nil {
				t.Fatal(err)
			}
		}
		for _, code := range []string{"docs", "images"} {
			tx(func(tx *store.Tx) error {
				return st.InsertPartition(ctx, tx, &attachments.Partition{ID: store.NewID(), TenantID: tn, Code: code, Title: code,
					CreatedAt: db.Now(), UpdatedAt: db.Now()}, false)
			})
		}
		var files []*attachments.Attachment
		for i, spec := range []struct {
			org, partition string
			tags           []string
		}{
			{"", "docs", []string{"red", "blue", "red"}},
			{"", "images", []string{"red"}},
			{"o1", "docs", []string{"green"}},
			{"", "docs", nil},
		} {
			a := &attachments.Attachment{ID: store.NewID(), TenantID: tn, OrganizationID: spec.org, EntityID: "e", RecordID: "r",
				FileName: "f.txt", FileSize: int64(i + 1), MimeType: "text/plain", PartitionCode: spec.partition, StorageKey: "k",
				Tags: spec.tags, CreatedAt: db.Now(), UpdatedAt: db.Now()}
			tx(func(tx *store.Tx) error { return st.InsertAttachment(ctx, tx, a) })
			files = append(files, a)
		}
		files[1].Tags = []string{"blue", "yellow"}
		tx(func(tx *store.Tx) error { return st.UpdateAttachment(ctx, tx, files[1]) })
		tx(func(tx *store.Tx) error { return st.DeleteAttachment(ctx, tx, tn, files[0].ID) })
		blind := store.Scope{TenantID: tn, OrganizationIDs: []string{}}
		for _, c := range []struct {
			scope store.Scope
			f     attachments.LibraryFilter
			want  int
		}{
			{sc, attachments.LibraryFilter{}, 3},
			{sc, attachments.LibraryFilter{Partition: "docs"}, 2},
			{sc, attachments.LibraryFilter{Tags: []string{"red"}}, 0},
			{sc, attachments.LibraryFilter{Tags: []string{"blue"}}, 1},
			{sc, attachments.LibraryFilter{Tags: []string{"blue"}, Partition: "docs"}, 0},
			{sc, attachments.LibraryFilter{Tags: []string{"blue", "yellow"}}, 1},
			{sc, attachments.LibraryFilter{Tags: []string{"green"}}, 1},
			{blind, attachments.LibraryFilter{}, 2},
			{blind, attachments.LibraryFilter{Tags: []string{"green"}}, 0},
		} {
			c.f.Limit = 10
			items, total, err := st.Library(ctx, db, c.scope, c.f)
			if err != nil {
				t.Fatal(err)
			}
			if total != c.want || len(items) != c.want {
				t.Errorf("%+v in %v: %d rows of %d, want %d", c.f, c.scope.OrganizationIDs, len(items), total, c.want)
			}
		}
		for _, c := range []struct {
			scope store.Scope
			want  []string
		}{{sc, []string{"blue", "green", "yellow"}}, {blind, []string{"blue", "yellow"}}} {
			tags, err := st.Tags(ctx, db, c.scope)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(tags, c.want) {
				t.Errorf("tags in %v: %v, want %v", c.scope.OrganizationIDs, tags, c.want)
			}
		}
		if n, err := st.CountAttachments(ctx, db, tn); err != nil || n != 3 {
			t.Errorf("CountAttachments: %d, %v; want 3", n, err)
		}
	}, attachments.Migrations)
}
