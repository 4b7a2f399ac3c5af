package attachments_test

import (
	"cmp"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/tenantkit/tenantkit/attachments"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// The library filtered by several tags (each required) gives the page and
// the total that filtering every attachment would, whichever way it reads
// them (from the rarest tag's rows, with the total in the page's
// statement or counted first, or in the page's order when matches are
// dense): in every order and direction, at offsets before and past the
// end, with a partition, for scopes of one organization, several and
// none, beside another tenant carrying the same tags.
func TestLibraryByTags(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx, sc := storetest.NewScope(t)
		st := attachments.NewSQLStore()
		o1, o2 := store.NewID(), store.NewID()
		base := db.Now().Add(-time.Hour)
		var files []*attachments.Attachment
		for _, tenant := range []string{sc.TenantID, store.NewID()} {
			err := db.Tx(ctx, func(tx *store.Tx) error {
				for _, code := range []string{"docs", "images"} {
					if err := st.InsertPartition(ctx, tx, &attachments.Partition{ID: store.NewID(), TenantID: tenant, Code: code,
						Title: code, CreatedAt: base, UpdatedAt: base}, false); err != nil {
						return err
					}
				}
				for i := range 60 {
					var tags []string
					for _, tg := range []struct {
						tag   string
						every int
					}{{"a", 3}, {"b", 2}, {"c", 5}} {
						if i%tg.every != 0 {
							tags = append(tags, tg.tag)
						}
					}
					if i%29 == 0 {
						tags = append(tags, "rare")
					}
					// even and odd: common, none has both; even and mid:
					// common, three have both (counted before the page).
					tags = append(tags, []string{"even", "odd"}[i%2])
					if i%2 == 1 || i < 6 {
						tags = append(tags, "mid")
					}
					at := base.Add(time.Duration(i*7%60) * time.Second)
					a := &attachments.Attachment{ID: store.NewID(), TenantID: tenant, OrganizationID: []string{"", o1, o2}[i%3],
						EntityID: "e", RecordID: "r", FileName: fmt.Sprintf("f-%02d.txt", i%17), FileSize: int64(i % 7),
						MimeType: "text/plain", PartitionCode: []string{"docs", "images"}[i%2], StorageKey: "k", Tags: tags,
						CreatedAt: at, UpdatedAt: at}
					if err := st.InsertAttachment(ctx, tx, a); err != nil {
						return err
					}
					if tenant == sc.TenantID {
						files = append(files, a)
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		scopes := map[string]store.Scope{
			"all":             sc,
			"o1":              {TenantID: sc.TenantID, OrganizationID: o1, OrganizationIDs: []string{o1}},
			"o1 and o2":       {TenantID: sc.TenantID, OrganizationID: o1, OrganizationIDs: []string{o1, o2}},
			"no organization": {TenantID: sc.TenantID, OrganizationIDs: []string{}},
		}
		reads := func(s store.Scope, a *attachments.Attachment) bool {
			return s.OrganizationIDs == nil || a.OrganizationID == "" || slices.Contains(s.OrganizationIDs, a.OrganizationID)
		}
		sortKey := map[string]func(a, b *attachments.Attachment) int{
			"":          func(a, b *attachments.Attachment) int { return a.CreatedAt.Compare(b.CreatedAt) },
			"fileName":  func(a, b *attachments.Attachment) int { return cmp.Compare(a.FileName, b.FileName) },
			"fileSize":  func(a, b *attachments.Attachment) int { return cmp.Compare(a.FileSize, b.FileSize) },
			"createdAt": func(a, b *attachments.Attachment) int { return a.CreatedAt.Compare(b.CreatedAt) },
		}
		checked := 0
		for name, s := range scopes {
			for _, tags := range [][]string{{"a", "b"}, {"b", "rare"}, {"rare", "a", "c"}, {"a", "b", "c"}, {"a", "missing"}, {"b", "b", "c"}, {"even", "odd"}, {"even", "mid"}} {
				for _, partition := range []string{"", "images"} {
					var want []*attachments.Attachment
					for _, a := range files {
						has := true
						for _, tg := range tags {
							has = has && slices.Contains(a.Tags, tg)
						}
						if has && reads(s, a) && (partition == "" || a.PartitionCode == partition) {
							want = append(want, a)
						}
					}
					for field, key := range sortKey {
						for _, desc := range []bool{false, true} {
							sorted := slices.Clone(want)
							slices.SortFunc(sorted, func(a, b *attachments.Attachment) int {
								c := cmp.Or(key(a, b), cmp.Compare(a.ID, b.ID))
								if desc {
									return -c
								}
								return c
							})
							for _, page := range []struct{ offset, limit int }{{0, 5}, {0, 25}, {3, 4}, {4, 1}, {40, 25}} {
								f := attachments.LibraryFilter{Tags: tags, Partition: partition, SortField: field, SortDesc: desc,
									Limit: page.limit, Offset: page.offset}
								items, total, err := st.Library(ctx, db, s, f)
								if err != nil {
									t.Fatalf("%s %+v: %v", name, f, err)
								}
								wantPage := sorted[min(page.offset, len(sorted)):min(page.offset+page.limit, len(sorted))]
								if total != len(want) || !slices.Equal(ids(items), ids(wantPage)) {
									t.Errorf("%s %+v: %v of %d, want %v of %d", name, f, ids(items), total, ids(wantPage), len(want))
								}
								checked++
							}
						}
					}
				}
			}
		}
		t.Logf("%d pages checked", checked)
	}, attachments.Migrations)
}

func ids(list []*attachments.Attachment) []string {
	out := make([]string, len(list))
	for i, a := range list {
		out[i] = a.ID
	}
	return out
}
