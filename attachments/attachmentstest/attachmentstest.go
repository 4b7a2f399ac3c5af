// Package attachmentstest is the conformance suite for attachments.Store
// implementations: Run checks every behaviour the attachments Service
// relies on from its Store, as documented on attachments.Store and
// LibraryFilter: partitions per tenant (codes unique within a tenant,
// InsertPartition's ignoreConflict, oldest first, what an update
// replaces, a partition in use that cannot be removed), attachments
// (round trip, tags and links rewritten by an update, removal, content,
// Existing across tenants and batches), the library (case-insensitive
// search with non-ASCII letters and literal wildcards, partition and tag
// filters, every sort both ways with the id tiebreak, paging and totals),
// the distinct sorted tags, the usage counter and its quota (also under
// concurrent transactions), the count of a tenant's attachments (every
// organization's, no other tenant's), tenant and organization scoping of
// every read and write (the organization cases are store/storetest's
// OrgScopes grid), and that every method runs on the Querier it is given.
//
// The SQL store runs it on SQLite and PostgreSQL
// (attachments/sqlstore_test.go); a host that plugs in its own Store runs
// it against that:
//
//	func TestMyStore(t *testing.T) {
//		attachmentstest.Run(t, func(t *testing.T) (*store.DB, attachments.Store) {
//			return openMigratedDatabase(t), mystore.New()
//		})
//	}
//
// newStore is called once per subtest. It may return the same database
// each time: every subtest works in tenants of its own (fresh random
// ids). Subtests run in parallel. Writes go through a *store.Tx of the
// database, as the Service makes them.
package attachmentstest

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/tenantkit/tenantkit/attachments"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// Run runs the suite. newStore is called once per subtest, with that
// subtest's t, and returns the database and the Store to test on it.
func Run(t *testing.T, newStore func(t *testing.T) (*store.DB, attachments.Store)) {
	t.Helper()
	for _, c := range []struct {
		name string
		test func(*testing.T, *fixture)
	}{
		{"Partitions", testPartitions},
		{"PartitionsPerTenant", testPartitionsPerTenant},
		{"PartitionInUse", testPartitionInUse},
		{"AttachmentRoundTrip", testAttachmentRoundTrip},
		{"AttachmentTenantScoped", testAttachmentTenantScoped},
		{"OrganizationScoped", testOrganizationScoped},
		{"ListLinked", testListLinked},
		{"LibrarySearch", testLibrarySearch},
		{"LibrarySearchTotalCapped", testLibrarySearchCapped},
		{"LibrarySort", testLibrarySort},
		{"LibraryPaging", testLibraryPaging},
		{"Tags", testTags},
		{"UpdateAttachment", testUpdateAttachment},
		{"DeleteAttachment", testDeleteAttachment},
		{"SetContent", testSetContent},
		{"Existing", testExisting},
		{"Usage", testUsage},
		{"UsageConcurrent", testUsageConcurrent},
		{"CountAttachments", testCountAttachments},
		{"UsesTheQuerier", testUsesTheQuerier},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			db, st := newStore(t)
			if db == nil || st == nil {
				t.Fatal("newStore returned a nil database or Store")
			}
			c.test(t, &fixture{t: t, is: is.New(t), ctx: t.Context(), db: db, st: st, tenant: store.NewID(),
				clock: time.Date(2031, 5, 6, 7, 8, 9, 0, time.UTC)})
		})
	}
}

// fixture is one subtest's store, database, tenant and clock.
type fixture struct {
	t      *testing.T
	is     *is.I
	ctx    context.Context
	db     *store.DB
	st     attachments.Store
	tenant string // the subtest's own tenant
	clock  time.Time
	mu     sync.Mutex
}

// tick returns a new timestamp, a second after the last (UTC,
// microseconds, as the Service's transactions give).
func (f *fixture) tick() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.clock = f.clock.Add(time.Second)
	return f.clock
}

// tx runs fn in a write transaction of the database.
func (f *fixture) tx(fn func(tx *store.Tx) error) error { return f.db.Tx(f.ctx, fn) }

func (f *fixture) must(err error, what string) {
	f.t.Helper()
	if err != nil {
		f.t.Fatalf("%s: %v", what, err)
	}
}

// wantErr fails unless err wraps kind.
func (f *fixture) wantErr(err, kind error, what string) {
	f.t.Helper()
	if !errors.Is(err, kind) {
		f.t.Errorf("%s: error %v, want one wrapping %v", what, err, kind)
	}
}

func (f *fixture) equal(what string, got, want any) {
	f.t.Helper()
	if !reflect.DeepEqual(got, want) {
		f.t.Errorf("%s:\n got %v\nwant %v", what, got, want)
	}
}

// whole is the scope of every organization of tenant.
func whole(tenant string) store.Scope { return store.Scope{TenantID: tenant} }

// newPartition is a partition of tenant, not yet stored.
func (f *fixture) newPartition(tenant, code string) *attachments.Partition {
	now := f.tick()
	return &attachments.Partition{ID: store.NewID(), TenantID: tenant, Code: code, Title: "Partition " + code,
		Description: "About " + code, RequiresOcr: true, CreatedAt: now, UpdatedAt: now}
}

func (f *fixture) insertPartition(p *attachments.Partition, ignoreConflict bool) error {
	return f.tx(func(tx *store.Tx) error { return f.st.InsertPartition(f.ctx, tx, p, ignoreConflict) })
}

// partition stores a partition of tenant (after edit, if any).
func (f *fixture) partition(tenant, code string, edit func(*attachments.Partition)) *attachments.Partition {
	f.t.Helper()
	p := f.newPartition(tenant, code)
	if edit != nil {
		edit(p)
	}
	f.must(f.insertPartition(p, false), "InsertPartition "+code)
	return p
}

// newAttachment is an attachment of tenant in partition code, uploaded
// to the record orders/<random>, not yet stored.
func (f *fixture) newAttachment(tenant, code, fileName string) *attachments.Attachment {
	now := f.tick()
	id, record := store.NewID(), store.NewID()
	return &attachments.Attachment{ID: id, TenantID: tenant, EntityID: "orders", RecordID: record,
		FileName: fileName, FileSize: 100, MimeType: "text/plain; charset=utf-8", PartitionCode: code,
		Assignments: []attachments.Assignment{{Type: "orders", ID: record}}, CustomFields: map[string]any{},
		CreatedAt: now, UpdatedAt: now, StorageKey: tenant + "/" + id + "/original"}
}

// attachment stores an attachment of tenant in partition code (after
// edit, if any).
func (f *fixture) attachment(tenant, code, fileName string, edit func(*attachments.Attachment)) *attachments.Attachment {
	f.t.Helper()
	a := f.newAttachment(tenant, code, fileName)
	if edit != nil {
		edit(a)
	}
	f.must(f.tx(func(tx *store.Tx) error { return f.st.InsertAttachment(f.ctx, tx, a) }), "InsertAttachment "+fileName)
	return a
}

func (f *fixture) update(a *attachments.Attachment) error {
	return f.tx(func(tx *store.Tx) error { return f.st.UpdateAttachment(f.ctx, tx, a) })
}

func (f *fixture) deleteAttachment(tenant, id string) error {
	return f.tx(func(tx *store.Tx) error { return f.st.DeleteAttachment(f.ctx, tx, tenant, id) })
}

func (f *fixture) setContent(tenant, id string, content *string) error {
	return f.tx(func(tx *store.Tx) error { return f.st.SetContent(f.ctx, tx, tenant, id, content) })
}

func (f *fixture) addUsage(tenant string, delta, quota int64) (ok bool, err error) {
	err = f.tx(func(tx *store.Tx) error {
		ok, err = f.st.AddUsage(f.ctx, tx, tenant, delta, quota)
		return err
	})
	return ok, err
}

func (f *fixture) usage(tenant string) int64 {
	f.t.Helper()
	n, err := f.st.Usage(f.ctx, f.db, tenant)
	f.must(err, "Usage")
	return n
}

// get reads an attachment in sc, failing the test on an error.
func (f *fixture) get(sc store.Scope, id string) *attachments.Attachment {
	f.t.Helper()
	a, err := f.st.GetAttachment(f.ctx, f.db, sc, id)
	f.must(err, "GetAttachment")
	return a
}

// linked returns the file names ListLinked gives in sc.
func (f *fixture) linked(sc store.Scope, typ, id string) []string {
	f.t.Helper()
	list, err := f.st.ListLinked(f.ctx, f.db, sc, typ, id)
	f.must(err, "ListLinked")
	return names(list)
}

// library returns the file names of a library page in sc, and the total.
func (f *fixture) library(sc store.Scope, fl attachments.LibraryFilter) ([]string, int) {
	f.t.Helper()
	if fl.Limit == 0 {
		fl.Limit = 100
	}
	list, total, err := f.st.Library(f.ctx, f.db, sc, fl)
	f.must(err, fmt.Sprintf("Library %+v", fl))
	return names(list), total
}

func (f *fixture) tags(sc store.Scope) []string {
	f.t.Helper()
	tags, err := f.st.Tags(f.ctx, f.db, sc)
	f.must(err, "Tags")
	return orEmpty(tags)
}

func names(list []*attachments.Attachment) []string {
	out := make([]string, len(list))
	for i, a := range list {
		out[i] = a.FileName
	}
	return out
}

func ids(list []*attachments.Attachment) []string {
	out := make([]string, len(list))
	for i, a := range list {
		out[i] = a.ID
	}
	return out
}

func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// sameAttachment reports how got differs from want, or "". Empty and nil
// lists and maps are alike.
func sameAttachment(got, want *attachments.Attachment) string {
	if got == nil {
		return "nil"
	}
	var diffs []string
	diff := func(field string, g, w any) { diffs = append(diffs, fmt.Sprintf("%s: got %v, want %v", field, g, w)) }
	if got.ID != want.ID {
		diff("ID", got.ID, want.ID)
	}
	if got.TenantID != want.TenantID {
		diff("TenantID", got.TenantID, want.TenantID)
	}
	if got.OrganizationID != want.OrganizationID {
		diff("OrganizationID", got.OrganizationID, want.OrganizationID)
	}
	if got.EntityID != want.EntityID || got.RecordID != want.RecordID {
		diff("EntityID/RecordID", got.EntityID+"/"+got.RecordID, want.EntityID+"/"+want.RecordID)
	}
	if got.FileName != want.FileName {
		diff("FileName", got.FileName, want.FileName)
	}
	if got.FileSize != want.FileSize {
		diff("FileSize", got.FileSize, want.FileSize)
	}
	if got.MimeType != want.MimeType {
		diff("MimeType", got.MimeType, want.MimeType)
	}
	if got.PartitionCode != want.PartitionCode {
		diff("PartitionCode", got.PartitionCode, want.PartitionCode)
	}
	if got.StorageKey != want.StorageKey {
		diff("StorageKey", got.StorageKey, want.StorageKey)
	}
	if (got.Content == nil) != (want.Content == nil) || got.Content != nil && *got.Content != *want.Content {
		diff("Content", deref(got.Content), deref(want.Content))
	}
	if !slices.Equal(orEmpty(got.Tags), orEmpty(want.Tags)) {
		diff("Tags", got.Tags, want.Tags)
	}
	if len(got.Assignments) != 0 || len(want.Assignments) != 0 {
		if !slices.Equal(got.Assignments, want.Assignments) {
			diff("Assignments", got.Assignments, want.Assignments)
		}
	}
	if len(got.CustomFields) != 0 || len(want.CustomFields) != 0 {
		if !reflect.DeepEqual(got.CustomFields, want.CustomFields) {
			diff("CustomFields", got.CustomFields, want.CustomFields)
		}
	}
	if !got.CreatedAt.Equal(want.CreatedAt) {
		diff("CreatedAt", got.CreatedAt, want.CreatedAt)
	}
	if !got.UpdatedAt.Equal(want.UpdatedAt) {
		diff("UpdatedAt", got.UpdatedAt, want.UpdatedAt)
	}
	return strings.Join(diffs, "; ")
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return fmt.Sprintf("%q", *s)
}

// samePartition reports how got differs from want, or "".
func samePartition(got, want *attachments.Partition) string {
	if got == nil {
		return "nil"
	}
	if got.ID != want.ID || got.TenantID != want.TenantID || got.Code != want.Code || got.Title != want.Title ||
		got.Description != want.Description || got.IsPublic != want.IsPublic || got.RequiresOcr != want.RequiresOcr ||
		!got.CreatedAt.Equal(want.CreatedAt) || !got.UpdatedAt.Equal(want.UpdatedAt) {
		return fmt.Sprintf("%+v, want %+v", *got, *want)
	}
	return ""
}

func codes(list []*attachments.Partition) []string {
	out := make([]string, len(list))
	for i, p := range list {
		out[i] = p.Code
	}
	return out
}

func (f *fixture) partitionCodes(tenant string) []string {
	f.t.Helper()
	list, err := f.st.ListPartitions(f.ctx, f.db, tenant)
	f.must(err, "ListPartitions")
	return codes(list)
}

// ---- Partitions

func testPartitions(t *testing.T, f *fixture) {
	ctx := f.ctx
	gamma := f.newPartition(f.tenant, "gamma")
	beta := f.newPartition(f.tenant, "beta")
	alpha := f.newPartition(f.tenant, "alpha")
	alpha.IsPublic, alpha.RequiresOcr = true, false
	// Stored in another order than their age: the list is by age.
	for _, p := range []*attachments.Partition{alpha, gamma, beta} {
		f.must(f.insertPartition(p, false), "InsertPartition "+p.Code)
	}
	f.equal("ListPartitions, oldest first", f.partitionCodes(f.tenant), []string{"gamma", "beta", "alpha"})

	got, err := f.st.GetPartition(ctx, f.db, f.tenant, alpha.ID)
	f.must(err, "GetPartition")
	if d := samePartition(got, alpha); d != "" {
		t.Errorf("GetPartition: %s", d)
	}
	got, err = f.st.GetPartitionByCode(ctx, f.db, f.tenant, "beta")
	f.must(err, "GetPartitionByCode")
	if d := samePartition(got, beta); d != "" {
		t.Errorf("GetPartitionByCode: %s", d)
	}
	list, err := f.st.ListPartitions(ctx, f.db, f.tenant)
	f.must(err, "ListPartitions")
	for i, want := range []*attachments.Partition{gamma, beta, alpha} {
		if d := samePartition(list[i], want); d != "" {
			t.Errorf("ListPartitions[%d]: %s", i, d)
		}
	}
	_, err = f.st.GetPartition(ctx, f.db, f.tenant, store.NewID())
	f.wantErr(err, store.ErrNotFound, "GetPartition of a missing id")
	_, err = f.st.GetPartitionByCode(ctx, f.db, f.tenant, "delta")
	f.wantErr(err, store.ErrNotFound, "GetPartitionByCode of a missing code")

	// A taken code: a conflict, or nothing at all with ignoreConflict.
	again := f.newPartition(f.tenant, "alpha")
	again.Title = "Second alpha"
	f.wantErr(f.insertPartition(again, false), store.ErrConflict, "InsertPartition of a taken code")
	f.must(f.insertPartition(again, true), "InsertPartition of a taken code with ignoreConflict")
	got, err = f.st.GetPartitionByCode(ctx, f.db, f.tenant, "alpha")
	f.must(err, "GetPartitionByCode after ignoreConflict")
	if d := samePartition(got, alpha); d != "" {
		t.Errorf("ignoreConflict changed the partition: %s", d)
	}
	_, err = f.st.GetPartition(ctx, f.db, f.tenant, again.ID)
	f.wantErr(err, store.ErrNotFound, "GetPartition of the ignored insert's id")
	f.equal("ListPartitions after the conflicts", f.partitionCodes(f.tenant), []string{"gamma", "beta", "alpha"})

	// ignoreConflict on a free code inserts.
	delta := f.newPartition(f.tenant, "delta")
	f.must(f.insertPartition(delta, true), "InsertPartition of a free code with ignoreConflict")
	got, err = f.st.GetPartitionByCode(ctx, f.db, f.tenant, "delta")
	f.must(err, "GetPartitionByCode of the ignoreConflict insert")
	if d := samePartition(got, delta); d != "" {
		t.Errorf("ignoreConflict insert: %s", d)
	}

	// An update replaces title, description, the flags and updatedAt.
	upd := *alpha
	upd.Title, upd.Description, upd.IsPublic, upd.RequiresOcr, upd.UpdatedAt = "Alpha v2", "", false, true, f.tick()
	f.must(f.tx(func(tx *store.Tx) error { return f.st.UpdatePartition(ctx, tx, &upd) }), "UpdatePartition")
	got, err = f.st.GetPartition(ctx, f.db, f.tenant, alpha.ID)
	f.must(err, "GetPartition after the update")
	if d := samePartition(got, &upd); d != "" {
		t.Errorf("UpdatePartition: %s", d)
	}
	missing := f.newPartition(f.tenant, "zeta")
	f.wantErr(f.tx(func(tx *store.Tx) error { return f.st.UpdatePartition(ctx, tx, missing) }), store.ErrNotFound,
		"UpdatePartition of a missing id")

	f.must(f.tx(func(tx *store.Tx) error { return f.st.DeletePartition(ctx, tx, f.tenant, gamma.ID) }), "DeletePartition")
	_, err = f.st.GetPartition(ctx, f.db, f.tenant, gamma.ID)
	f.wantErr(err, store.ErrNotFound, "GetPartition of a deleted partition")
	f.equal("ListPartitions after the delete", f.partitionCodes(f.tenant), []string{"beta", "alpha", "delta"})
	f.wantErr(f.tx(func(tx *store.Tx) error { return f.st.DeletePartition(ctx, tx, f.tenant, gamma.ID) }), store.ErrNotFound,
		"DeletePartition again")
	// Its code is free again.
	f.partition(f.tenant, "gamma", nil)
}

func testPartitionsPerTenant(t *testing.T, f *fixture) {
	ctx := f.ctx
	a, b := f.tenant, store.NewID()
	aShared := f.partition(a, "shared", nil)
	aOwn := f.partition(a, "onlyA", nil)
	bShared := f.partition(b, "shared", func(p *attachments.Partition) { p.Title = "B's" })
	f.equal("A's partitions", f.partitionCodes(a), []string{"shared", "onlyA"})
	f.equal("B's partitions", f.partitionCodes(b), []string{"shared"})
	f.equal("a third tenant's partitions", f.partitionCodes(store.NewID()), []string{})

	got, err := f.st.GetPartitionByCode(ctx, f.db, b, "shared")
	f.must(err, "B's GetPartitionByCode")
	if d := samePartition(got, bShared); d != "" {
		t.Errorf("B's shared partition: %s", d)
	}
	_, err = f.st.GetPartitionByCode(ctx, f.db, b, "onlyA")
	f.wantErr(err, store.ErrNotFound, "GetPartitionByCode of A's code for B")
	_, err = f.st.GetPartition(ctx, f.db, b, aOwn.ID)
	f.wantErr(err, store.ErrNotFound, "GetPartition of A's id for B")

	hijack := *aShared
	hijack.TenantID, hijack.Title, hijack.IsPublic = b, "hijacked", true
	f.wantErr(f.tx(func(tx *store.Tx) error { return f.st.UpdatePartition(ctx, tx, &hijack) }), store.ErrNotFound,
		"UpdatePartition of A's id naming B")
	f.wantErr(f.tx(func(tx *store.Tx) error { return f.st.DeletePartition(ctx, tx, b, aOwn.ID) }), store.ErrNotFound,
		"DeletePartition of A's id naming B")
	for _, p := range []*attachments.Partition{aShared, aOwn} {
		got, err := f.st.GetPartition(ctx, f.db, a, p.ID)
		f.must(err, "A's GetPartition after B's writes")
		if d := samePartition(got, p); d != "" {
			t.Errorf("A's partition after B's writes: %s", d)
		}
	}
	got, err = f.st.GetPartition(ctx, f.db, b, bShared.ID)
	f.must(err, "B's GetPartition")
	if d := samePartition(got, bShared); d != "" {
		t.Errorf("B's partition after the hijack: %s", d)
	}

	// ignoreConflict looks at the tenant's own codes only.
	bOwn := f.newPartition(b, "onlyA")
	f.must(f.insertPartition(bOwn, true), "B's InsertPartition of A's code with ignoreConflict")
	got, err = f.st.GetPartitionByCode(ctx, f.db, b, "onlyA")
	f.must(err, "B's GetPartitionByCode after its insert")
	if d := samePartition(got, bOwn); d != "" {
		t.Errorf("B's own onlyA: %s", d)
	}
}

func testPartitionInUse(t *testing.T, f *fixture) {
	ctx := f.ctx
	busy := f.partition(f.tenant, "busy", nil)
	a := f.attachment(f.tenant, "busy", "in-use.txt", nil)
	del := func(tenant, id string) error {
		return f.tx(func(tx *store.Tx) error { return f.st.DeletePartition(ctx, tx, tenant, id) })
	}
	f.wantErr(del(f.tenant, busy.ID), store.ErrConflict, "DeletePartition of a partition in use")
	if _, err := f.st.GetPartition(ctx, f.db, f.tenant, busy.ID); err != nil {
		t.Errorf("the partition in use is gone after the refused delete: %v", err)
	}
	f.get(whole(f.tenant), a.ID)

	// Another tenant's partition of the same code is not in use.
	other := store.NewID()
	otherBusy := f.partition(other, "busy", nil)
	f.must(del(other, otherBusy.ID), "another tenant's DeletePartition of the same code")

	f.must(f.deleteAttachment(f.tenant, a.ID), "DeleteAttachment")
	f.must(del(f.tenant, busy.ID), "DeletePartition once its attachment is deleted")
	_, err := f.st.GetPartition(ctx, f.db, f.tenant, busy.ID)
	f.wantErr(err, store.ErrNotFound, "GetPartition after the delete")
}

// ---- Attachments

func testAttachmentRoundTrip(t *testing.T, f *fixture) {
	ctx := f.ctx
	docs := f.partition(f.tenant, "docs", func(p *attachments.Partition) { p.IsPublic = true })
	f.partition(f.tenant, "other", nil)
	text := "Grüße, world"
	full := f.attachment(f.tenant, "docs", "Report Q1.pdf", func(a *attachments.Attachment) {
		a.OrganizationID = store.NewID()
		a.FileSize, a.MimeType, a.Content = 123456789012, "application/pdf", &text
		a.Tags = []string{"zeta", "alpha", "Ümlaut"}
		a.Assignments = append(a.Assignments, attachments.Assignment{Type: "notes", ID: "N-1", Href: "/notes/N-1", Label: "Note one"})
		a.CustomFields = map[string]any{"color": "red", "count": float64(3), "ok": true,
			"nested": map[string]any{"x": "y"}, "list": []any{"a", float64(2)}}
		a.UpdatedAt = a.CreatedAt.Add(90 * time.Minute)
	})
	bare := f.attachment(f.tenant, "other", "bare.bin", func(a *attachments.Attachment) {
		a.Tags, a.Assignments, a.CustomFields = nil, nil, nil
	})

	for _, want := range []*attachments.Attachment{full, bare} {
		got, err := f.st.GetAttachment(ctx, f.db, whole(f.tenant), want.ID)
		f.must(err, "GetAttachment "+want.FileName)
		if d := sameAttachment(got, want); d != "" {
			t.Errorf("GetAttachment %s: %s", want.FileName, d)
		}
		got, p, err := f.st.GetAnyAttachment(ctx, f.db, want.ID)
		f.must(err, "GetAnyAttachment "+want.FileName)
		if d := sameAttachment(got, want); d != "" {
			t.Errorf("GetAnyAttachment %s: %s", want.FileName, d)
		}
		if p == nil {
			t.Errorf("GetAnyAttachment %s: no partition", want.FileName)
		} else if p.Code != want.PartitionCode || p.TenantID != f.tenant {
			t.Errorf("GetAnyAttachment %s: partition %s of %s, want %s of %s", want.FileName, p.Code, p.TenantID, want.PartitionCode, f.tenant)
		}
	}
	_, p, err := f.st.GetAnyAttachment(ctx, f.db, full.ID)
	f.must(err, "GetAnyAttachment")
	if p != nil && (p.ID != docs.ID || !p.IsPublic || !p.RequiresOcr) {
		t.Errorf("GetAnyAttachment's partition: %+v, want id %s, public, requiring OCR", *p, docs.ID)
	}

	_, err = f.st.GetAttachment(ctx, f.db, whole(f.tenant), store.NewID())
	f.wantErr(err, store.ErrNotFound, "GetAttachment of a missing id")
	_, _, err = f.st.GetAnyAttachment(ctx, f.db, store.NewID())
	f.wantErr(err, store.ErrNotFound, "GetAnyAttachment of a missing id")

	dup := f.newAttachment(f.tenant, "docs", "dup.txt")
	dup.ID = full.ID
	f.wantErr(f.tx(func(tx *store.Tx) error { return f.st.InsertAttachment(ctx, tx, dup) }), store.ErrConflict,
		"InsertAttachment of a taken id")
	f.equal("the attachment after a clashing insert", f.get(whole(f.tenant), full.ID).FileName, "Report Q1.pdf")
}

func testAttachmentTenantScoped(t *testing.T, f *fixture) {
	ctx := f.ctx
	a, b := f.tenant, store.NewID()
	f.partition(a, "docs", nil)
	f.partition(b, "docs", nil)
	record := store.NewID()
	link := func(x *attachments.Attachment) {
		x.RecordID = record
		x.Assignments = []attachments.Assignment{{Type: "orders", ID: record}}
		x.Tags = []string{"shared", "tag-of-" + x.FileName}
	}
	org := store.NewID()
	att := f.attachment(a, "docs", "a-file.txt", func(x *attachments.Attachment) { link(x); x.OrganizationID = org })
	f.attachment(b, "docs", "b-file.txt", link)

	_, err := f.st.GetAttachment(ctx, f.db, whole(b), att.ID)
	f.wantErr(err, store.ErrNotFound, "GetAttachment of A's attachment in B's scope")
	sb := store.Scope{TenantID: b, OrganizationID: org, OrganizationIDs: []string{org}}
	_, err = f.st.GetAttachment(ctx, f.db, sb, att.ID)
	f.wantErr(err, store.ErrNotFound, "GetAttachment of A's attachment in B's scope with an organization")
	f.equal("B's ListLinked", f.linked(whole(b), "orders", record), []string{"b-file.txt"})
	f.equal("A's ListLinked", f.linked(whole(a), "orders", record), []string{"a-file.txt"})
	got, total := f.library(whole(b), attachments.LibraryFilter{})
	f.equal("B's Library", got, []string{"b-file.txt"})
	f.equal("B's Library total", total, 1)
	got, total = f.library(whole(b), attachments.LibraryFilter{Search: "file", Tags: []string{"shared"}, Partition: "docs"})
	f.equal("B's filtered Library", got, []string{"b-file.txt"})
	f.equal("B's filtered Library total", total, 1)
	got, _ = f.library(whole(b), attachments.LibraryFilter{Tags: []string{"tag-of-a-file.txt"}})
	f.equal("B's Library by A's tag", got, []string{})
	f.equal("B's Tags", f.tags(whole(b)), []string{"shared", "tag-of-b-file.txt"})
	f.equal("A's Tags", f.tags(whole(a)), []string{"shared", "tag-of-a-file.txt"})

	// Writes naming B do not reach A's attachment.
	hijack := *att
	hijack.TenantID, hijack.RecordID, hijack.Tags = b, "stolen", []string{"stolen"}
	hijack.Assignments = []attachments.Assignment{{Type: "orders", ID: "stolen"}}
	f.wantErr(f.update(&hijack), store.ErrNotFound, "UpdateAttachment of A's attachment naming B")
	f.wantErr(f.deleteAttachment(b, att.ID), store.ErrNotFound, "DeleteAttachment of A's attachment naming B")
	stolen := "stolen"
	f.wantErr(f.setContent(b, att.ID, &stolen), store.ErrNotFound, "SetContent of A's attachment naming B")
	if d := sameAttachment(f.get(whole(a), att.ID), att); d != "" {
		t.Errorf("A's attachment after B's writes: %s", d)
	}
	f.equal("A's ListLinked after B's writes", f.linked(whole(a), "orders", record), []string{"a-file.txt"})
	f.equal("ListLinked of the hijack's record", f.linked(whole(b), "orders", "stolen"), []string{})
	f.equal("A's Tags after B's writes", f.tags(whole(a)), []string{"shared", "tag-of-a-file.txt"})

	// Usage is per tenant.
	ok, err := f.addUsage(a, 700, 1000)
	f.must(err, "A's AddUsage")
	f.is.True(ok) // A's first AddUsage within its quota
	ok, err = f.addUsage(b, 700, 1000)
	f.must(err, "B's AddUsage")
	f.is.True(ok) // B's AddUsage is not limited by A's usage
	f.equal("A's usage", f.usage(a), int64(700))
	f.equal("B's usage", f.usage(b), int64(700))
}

func testOrganizationScoped(t *testing.T, f *fixture) {
	o1, o2 := store.NewID(), store.NewID()
	f.partition(f.tenant, "docs", nil)
	record := store.NewID()
	link := func(org, tag string) func(*attachments.Attachment) {
		return func(x *attachments.Attachment) {
			x.OrganizationID, x.RecordID, x.Tags = org, record, []string{tag}
			x.Assignments = []attachments.Assignment{{Type: "orders", ID: record}}
		}
	}
	tenantWide := f.attachment(f.tenant, "docs", "tenant-wide.txt", link("", "tenanttag"))
	ofO1 := f.attachment(f.tenant, "docs", "of-o1.txt", link(o1, "o1tag"))

	grid := storetest.NewOrgScopes(f.tenant, o1, o2)
	check := func(see bool) func(t *testing.T, ctx context.Context) {
		return func(t *testing.T, ctx context.Context) {
			sc, err := store.ScopeFrom(ctx)
			if err != nil {
				t.Fatal(err)
			}
			_, err = f.st.GetAttachment(ctx, f.db, sc, ofO1.ID)
			if see != (err == nil) {
				t.Errorf("GetAttachment of o1's attachment: %v (see: %v)", err, see)
			}
			if !see && !errors.Is(err, store.ErrNotFound) {
				t.Errorf("GetAttachment of o1's attachment: %v, want ErrNotFound", err)
			}
			if _, err := f.st.GetAttachment(ctx, f.db, sc, tenantWide.ID); err != nil {
				t.Errorf("the tenant's attachment (no organization) is hidden: %v", err)
			}
			want, wantTags := []string{"tenant-wide.txt"}, []string{"tenanttag"}
			if see {
				want, wantTags = []string{"of-o1.txt", "tenant-wide.txt"}, []string{"o1tag", "tenanttag"}
			}
			list, err := f.st.ListLinked(ctx, f.db, sc, "orders", record)
			if err != nil {
				t.Fatalf("ListLinked: %v", err)
			}
			if got := names(list); !slices.Equal(got, want) {
				t.Errorf("ListLinked: %v, want %v", got, want)
			}
			page, total, err := f.st.Library(ctx, f.db, sc, attachments.LibraryFilter{SortField: "fileName", Limit: 10})
			if err != nil {
				t.Fatalf("Library: %v", err)
			}
			if got := names(page); !slices.Equal(got, want) || total != len(want) {
				t.Errorf("Library: %v (total %d), want %v", got, total, want)
			}
			page, total, err = f.st.Library(ctx, f.db, sc, attachments.LibraryFilter{Tags: []string{"o1tag"}, Limit: 10})
			if err != nil {
				t.Fatalf("Library by tag: %v", err)
			}
			if see != (total == 1 && len(page) == 1) {
				t.Errorf("Library by o1's tag: %v (total %d), see: %v", names(page), total, see)
			}
			tags, err := f.st.Tags(ctx, f.db, sc)
			if err != nil {
				t.Fatalf("Tags: %v", err)
			}
			if !slices.Equal(orEmpty(tags), wantTags) {
				t.Errorf("Tags: %v, want %v", tags, wantTags)
			}
		}
	}
	grid.RunBlind(t, check(false))
	grid.RunSeeing(t, check(true))
}

func testListLinked(t *testing.T, f *fixture) {
	f.partition(f.tenant, "docs", nil)
	record := store.NewID()
	base := f.tick()
	at := func(name string, seconds int, extra ...attachments.Assignment) *attachments.Attachment {
		return f.attachment(f.tenant, "docs", name, func(a *attachments.Attachment) {
			a.CreatedAt, a.UpdatedAt = base.Add(time.Duration(seconds)*time.Second), base
			a.Assignments = append(a.Assignments, extra...)
		})
	}
	on := attachments.Assignment{Type: "orders", ID: record}
	first := at("first.txt", 1, on)
	third := at("third.txt", 3, on)
	second := at("second.txt", 2, on)
	tieA := at("tie-a.txt", 4, on)
	tieB := at("tie-b.txt", 4, on)
	at("other-record.txt", 5, attachments.Assignment{Type: "orders", ID: store.NewID()})
	at("other-type.txt", 6, attachments.Assignment{Type: "invoices", ID: record})
	at("record-as-type.txt", 7, attachments.Assignment{Type: record, ID: "orders"})

	// Newest first; the two of the same instant by id, descending.
	ties := []*attachments.Attachment{tieA, tieB}
	slices.SortFunc(ties, func(x, y *attachments.Attachment) int { return strings.Compare(y.ID, x.ID) })
	want := []string{ties[0].FileName, ties[1].FileName, third.FileName, second.FileName, first.FileName}
	f.equal("ListLinked orders/record", f.linked(whole(f.tenant), "orders", record), want)
	f.equal("ListLinked of the uploads' own records", f.linked(whole(f.tenant), "orders", first.RecordID), []string{"first.txt"})
	f.equal("ListLinked of a record with none", f.linked(whole(f.tenant), "orders", store.NewID()), []string{})
	f.equal("ListLinked invoices/record", f.linked(whole(f.tenant), "invoices", record), []string{"other-type.txt"})
}

func testLibrarySearch(t *testing.T, f *fixture) {
	f.partition(f.tenant, "docs", nil)
	f.partition(f.tenant, "media", nil)
	add := func(name, code string, tags ...string) {
		f.attachment(f.tenant, code, name, func(a *attachments.Attachment) { a.Tags = tags })
	}
	add("Ärger Übersicht.pdf", "docs", "red", "blue")
	add("notes.txt", "media", "red")
	add("100%_done.txt", "docs", "blue")
	add("100xydone.txt", "docs")
	add("ÜBERSICHT-2.TXT", "media", "red", "blue", "green")
	add(`back\slash.txt`, "media")

	for _, c := range []struct {
		name string
		f    attachments.LibraryFilter
		want []string
	}{
		{"everything", attachments.LibraryFilter{}, []string{"100%_done.txt", "100xydone.txt", "notes.txt", `back\slash.txt`,
			"ÜBERSICHT-2.TXT", "Ärger Übersicht.pdf"}},
		{"search, non-ASCII lower for upper", attachments.LibraryFilter{Search: "übersicht"}, []string{"ÜBERSICHT-2.TXT", "Ärger Übersicht.pdf"}},
		{"search, non-ASCII upper for lower", attachments.LibraryFilter{Search: "ÄRGER"}, []string{"Ärger Übersicht.pdf"}},
		{"search, ASCII", attachments.LibraryFilter{Search: "NOTES"}, []string{"notes.txt"}},
		{"search, inside the name", attachments.LibraryFilter{Search: "ersicht-2.t"}, []string{"ÜBERSICHT-2.TXT"}},
		{"search, % and _ are literal", attachments.LibraryFilter{Search: "0%_d"}, []string{"100%_done.txt"}},
		{"search, _ is literal", attachments.LibraryFilter{Search: "0_"}, []string{}},
		{"search, backslash is literal", attachments.LibraryFilter{Search: `k\s`}, []string{`back\slash.txt`}},
		{"search, no match", attachments.LibraryFilter{Search: "xyz"}, []string{}},
		{"partition", attachments.LibraryFilter{Partition: "docs"}, []string{"100%_done.txt", "100xydone.txt", "Ärger Übersicht.pdf"}},
		{"unknown partition", attachments.LibraryFilter{Partition: "nope"}, []string{}},
		{"one tag", attachments.LibraryFilter{Tags: []string{"red"}}, []string{"notes.txt", "ÜBERSICHT-2.TXT", "Ärger Übersicht.pdf"}},
		{"two tags, both required", attachments.LibraryFilter{Tags: []string{"red", "blue"}}, []string{"ÜBERSICHT-2.TXT", "Ärger Übersicht.pdf"}},
		{"three tags", attachments.LibraryFilter{Tags: []string{"green", "red", "blue"}}, []string{"ÜBERSICHT-2.TXT"}},
		{"a repeated tag", attachments.LibraryFilter{Tags: []string{"red", "red"}}, []string{"notes.txt", "ÜBERSICHT-2.TXT", "Ärger Übersicht.pdf"}},
		{"an unknown tag", attachments.LibraryFilter{Tags: []string{"red", "nope"}}, []string{}},
		{"tags and partition", attachments.LibraryFilter{Tags: []string{"red", "blue"}, Partition: "media"}, []string{"ÜBERSICHT-2.TXT"}},
		{"search and tag", attachments.LibraryFilter{Search: "übersicht", Tags: []string{"green"}}, []string{"ÜBERSICHT-2.TXT"}},
	} {
		got, total := f.library(whole(f.tenant), c.f)
		// Compared as sets: the order of non-ASCII names is the
		// collation's.
		slices.Sort(got)
		slices.Sort(c.want)
		f.equal("Library, "+c.name, got, c.want)
		f.equal("Library total, "+c.name, total, len(c.want))
	}
}

// sorted returns the names of list ordered by key, ties by id, both in
// the direction given.
func sorted[K cmp.Ordered](list []*attachments.Attachment, key func(*attachments.Attachment) K, desc bool) []string {
	s := slices.Clone(list)
	slices.SortFunc(s, func(x, y *attachments.Attachment) int {
		c := cmp.Or(cmp.Compare(key(x), key(y)), strings.Compare(x.ID, y.ID))
		if desc {
			return -c
		}
		return c
	})
	return ids(s)
}

func (f *fixture) sortSet() []*attachments.Attachment {
	f.t.Helper()
	f.partition(f.tenant, "docs", nil)
	base := f.tick()
	var list []*attachments.Attachment
	for _, s := range []struct {
		name    string
		size    int64
		seconds int
	}{
		// Each sort has a tie, and each order differs from the others
		// and from the order of insertion.
		{"delta.txt", 300, 20},
		{"alpha.txt", 100, 50},
		{"charlie.txt", 200, 10},
		{"alpha.txt", 300, 40},
		{"bravo.txt", 50, 40},
		{"echo.txt", 7000, 30},
	} {
		list = append(list, f.attachment(f.tenant, "docs", s.name, func(a *attachments.Attachment) {
			a.FileSize = s.size
			a.CreatedAt = base.Add(time.Duration(s.seconds) * time.Second)
			a.UpdatedAt = a.CreatedAt
		}))
	}
	return list
}

func testLibrarySort(t *testing.T, f *fixture) {
	list := f.sortSet()
	byName := func(a *attachments.Attachment) string { return a.FileName }
	bySize := func(a *attachments.Attachment) int64 { return a.FileSize }
	byCreated := func(a *attachments.Attachment) int64 { return a.CreatedAt.UnixMicro() }
	for _, c := range []struct {
		field string
		desc  bool
		want  []string
	}{
		{"fileName", false, sorted(list, byName, false)},
		{"fileName", true, sorted(list, byName, true)},
		{"fileSize", false, sorted(list, bySize, false)},
		{"fileSize", true, sorted(list, bySize, true)},
		{"createdAt", false, sorted(list, byCreated, false)},
		{"createdAt", true, sorted(list, byCreated, true)},
		{"", false, sorted(list, byCreated, false)},
		{"", true, sorted(list, byCreated, true)},
	} {
		page, total, err := f.st.Library(f.ctx, f.db, whole(f.tenant), attachments.LibraryFilter{SortField: c.field, SortDesc: c.desc, Limit: 100})
		f.must(err, "Library")
		f.equal(fmt.Sprintf("Library by %q (desc %v), ids", c.field, c.desc), ids(page), c.want)
		f.equal("Library total", total, len(list))
	}
}

func testLibraryPaging(t *testing.T, f *fixture) {
	list := f.sortSet()
	for _, desc := range []bool{false, true} {
		want := sorted(list, func(a *attachments.Attachment) int64 { return a.FileSize }, desc)
		var got []string
		for offset := 0; offset < len(list)+2; offset += 4 {
			page, total, err := f.st.Library(f.ctx, f.db, whole(f.tenant), attachments.LibraryFilter{SortField: "fileSize", SortDesc: desc,
				Limit: 4, Offset: offset})
			f.must(err, "Library page")
			f.equal(fmt.Sprintf("total of the page at %d", offset), total, len(list))
			if len(page) > 4 {
				t.Errorf("a page of limit 4 has %d items", len(page))
			}
			got = append(got, ids(page)...)
		}
		f.equal(fmt.Sprintf("pages of 4 (desc %v) joined", desc), got, want)
		page, total, err := f.st.Library(f.ctx, f.db, whole(f.tenant), attachments.LibraryFilter{SortField: "fileSize", SortDesc: desc,
			Limit: 2, Offset: 1})
		f.must(err, "Library page")
		f.equal("page limit 2 offset 1", ids(page), want[1:3])
		f.equal("its total", total, len(list))
		page, total, err = f.st.Library(f.ctx, f.db, whole(f.tenant), attachments.LibraryFilter{SortField: "fileSize", SortDesc: desc,
			Limit: 5, Offset: 100})
		f.must(err, "Library page past the end")
		f.equal("a page past the end", len(page), 0)
		f.equal("its total", total, len(list))
	}
	_, total, err := f.st.Library(f.ctx, f.db, whole(f.tenant), attachments.LibraryFilter{Search: "alpha", Limit: 1})
	f.must(err, "Library page")
	f.equal("total of a filtered page of 1", total, 2)
}

func testTags(t *testing.T, f *fixture) {
	f.partition(f.tenant, "docs", nil)
	f.equal("Tags of a tenant with none", f.tags(whole(f.tenant)), []string{})
	f.attachment(f.tenant, "docs", "one.txt", func(a *attachments.Attachment) { a.Tags = []string{"mango", "apple", "zebra"} })
	f.attachment(f.tenant, "docs", "two.txt", func(a *attachments.Attachment) { a.Tags = []string{"apple", "banana"} })
	f.attachment(f.tenant, "docs", "none.txt", nil)
	other := store.NewID()
	f.partition(other, "docs", nil)
	f.attachment(other, "docs", "theirs.txt", func(a *attachments.Attachment) { a.Tags = []string{"cherry", "apple"} })
	f.equal("Tags, distinct and in order", f.tags(whole(f.tenant)), []string{"apple", "banana", "mango", "zebra"})
	f.equal("the other tenant's Tags", f.tags(whole(other)), []string{"apple", "cherry"})
}

func testUpdateAttachment(t *testing.T, f *fixture) {
	f.partition(f.tenant, "docs", nil)
	r1, r2, n1, n2 := store.NewID(), store.NewID(), store.NewID(), store.NewID()
	a := f.attachment(f.tenant, "docs", "doc.txt", func(a *attachments.Attachment) {
		a.RecordID = r1
		a.Tags = []string{"old", "keep"}
		a.Assignments = []attachments.Assignment{{Type: "orders", ID: r1}, {Type: "notes", ID: n1}}
		a.CustomFields = map[string]any{"a": "1", "b": "2"}
	})
	neighbour := f.attachment(f.tenant, "docs", "neighbour.txt", func(x *attachments.Attachment) {
		x.Tags = []string{"old"}
		x.Assignments = append(x.Assignments, attachments.Assignment{Type: "notes", ID: n1})
	})

	want := *a
	want.EntityID, want.RecordID = "invoices", r2
	want.Tags = []string{"keep", "new"}
	want.Assignments = []attachments.Assignment{{Type: "invoices", ID: r2, Href: "/invoices/" + r2, Label: "Invoice"}, {Type: "notes", ID: n2}}
	want.CustomFields = map[string]any{"a": "1", "c": float64(3)}
	want.FileName = "renamed.txt"
	want.UpdatedAt = f.tick()
	in := want
	// What an update does not replace stays, whatever the input says.
	in.FileSize, in.MimeType, in.PartitionCode, in.CreatedAt = 1, "image/png", "nope", f.tick()
	f.must(f.update(&in), "UpdateAttachment")
	if d := sameAttachment(f.get(whole(f.tenant), a.ID), &want); d != "" {
		t.Errorf("after UpdateAttachment: %s", d)
	}

	sc := whole(f.tenant)
	f.equal("ListLinked of the old record", f.linked(sc, "orders", r1), []string{})
	f.equal("ListLinked of the old note", f.linked(sc, "notes", n1), []string{"neighbour.txt"})
	f.equal("ListLinked of the new record", f.linked(sc, "invoices", r2), []string{"renamed.txt"})
	f.equal("ListLinked of the new note", f.linked(sc, "notes", n2), []string{"renamed.txt"})
	got, _ := f.library(sc, attachments.LibraryFilter{Tags: []string{"old"}})
	f.equal("Library by the removed tag", got, []string{"neighbour.txt"})
	got, _ = f.library(sc, attachments.LibraryFilter{Tags: []string{"new", "keep"}})
	f.equal("Library by the new tags", got, []string{"renamed.txt"})
	got, _ = f.library(sc, attachments.LibraryFilter{Search: "RENAMED"})
	f.equal("Library searching the new name", got, []string{"renamed.txt"})
	got, _ = f.library(sc, attachments.LibraryFilter{Search: "doc.txt"})
	f.equal("Library searching the old name", got, []string{})
	f.equal("Tags after the update", f.tags(sc), []string{"keep", "new", "old"})

	// Clearing tags and links leaves none behind.
	clear := want
	clear.Tags, clear.Assignments, clear.UpdatedAt = []string{}, []attachments.Assignment{}, f.tick()
	f.must(f.update(&clear), "UpdateAttachment clearing tags and assignments")
	f.equal("Tags after clearing", f.tags(sc), []string{"old"})
	f.equal("ListLinked after clearing", f.linked(sc, "invoices", r2), []string{})
	if d := sameAttachment(f.get(sc, neighbour.ID), neighbour); d != "" {
		t.Errorf("the neighbour after the updates: %s", d)
	}

	missing := f.newAttachment(f.tenant, "docs", "missing.txt")
	f.wantErr(f.update(missing), store.ErrNotFound, "UpdateAttachment of a missing id")
	_, err := f.st.GetAttachment(f.ctx, f.db, sc, missing.ID)
	f.wantErr(err, store.ErrNotFound, "GetAttachment after updating a missing id")
	f.equal("ListLinked of the missing one's record", f.linked(sc, "orders", missing.RecordID), []string{})
}

func testDeleteAttachment(t *testing.T, f *fixture) {
	ctx := f.ctx
	f.partition(f.tenant, "docs", nil)
	record := store.NewID()
	link := func(tag string) func(*attachments.Attachment) {
		return func(a *attachments.Attachment) {
			a.Tags = []string{tag, "common"}
			a.Assignments = append(a.Assignments, attachments.Assignment{Type: "orders", ID: record})
		}
	}
	gone := f.attachment(f.tenant, "docs", "gone.txt", link("gonetag"))
	kept := f.attachment(f.tenant, "docs", "kept.txt", link("kepttag"))
	f.must(f.deleteAttachment(f.tenant, gone.ID), "DeleteAttachment")

	sc := whole(f.tenant)
	_, err := f.st.GetAttachment(ctx, f.db, sc, gone.ID)
	f.wantErr(err, store.ErrNotFound, "GetAttachment of a deleted attachment")
	_, _, err = f.st.GetAnyAttachment(ctx, f.db, gone.ID)
	f.wantErr(err, store.ErrNotFound, "GetAnyAttachment of a deleted attachment")
	f.equal("ListLinked after the delete", f.linked(sc, "orders", record), []string{"kept.txt"})
	f.equal("ListLinked of its own record", f.linked(sc, "orders", gone.RecordID), []string{})
	got, total := f.library(sc, attachments.LibraryFilter{})
	f.equal("Library after the delete", got, []string{"kept.txt"})
	f.equal("Library total after the delete", total, 1)
	got, _ = f.library(sc, attachments.LibraryFilter{Tags: []string{"gonetag"}})
	f.equal("Library by its tag", got, []string{})
	f.equal("Tags after the delete", f.tags(sc), []string{"common", "kepttag"})
	found, err := f.st.Existing(ctx, f.db, []string{gone.ID, kept.ID})
	f.must(err, "Existing")
	f.equal("Existing after the delete", found[gone.ID], false)
	f.equal("Existing of the kept one", found[kept.ID], true)
	f.wantErr(f.deleteAttachment(f.tenant, gone.ID), store.ErrNotFound, "DeleteAttachment again")
	if d := sameAttachment(f.get(sc, kept.ID), kept); d != "" {
		t.Errorf("the kept attachment: %s", d)
	}

	// Its id can be used again (no leftovers of its tags or links).
	again := f.attachment(f.tenant, "docs", "again.txt", func(a *attachments.Attachment) { a.ID = gone.ID })
	if d := sameAttachment(f.get(sc, gone.ID), again); d != "" {
		t.Errorf("an attachment reusing a deleted id: %s", d)
	}
	f.equal("Tags with the id reused", f.tags(sc), []string{"common", "kepttag"})
}

func testSetContent(t *testing.T, f *fixture) {
	f.partition(f.tenant, "docs", nil)
	a := f.attachment(f.tenant, "docs", "text.txt", nil)
	b := f.attachment(f.tenant, "docs", "other.txt", nil)
	sc := whole(f.tenant)
	f.is.True(f.get(sc, a.ID).Content == nil) // a new attachment has no content
	text := "Zeile eins\nGrüße ✓"
	f.must(f.setContent(f.tenant, a.ID, &text), "SetContent")
	got := f.get(sc, a.ID)
	f.equal("content", deref(got.Content), deref(&text))
	f.is.True(f.get(sc, b.ID).Content == nil) // SetContent changed another attachment
	want := *a
	want.Content = &text
	if d := sameAttachment(got, &want); d != "" {
		t.Errorf("after SetContent: %s", d)
	}
	empty := ""
	f.must(f.setContent(f.tenant, a.ID, &empty), "SetContent empty")
	f.equal("empty content", deref(f.get(sc, a.ID).Content), `""`)
	f.must(f.setContent(f.tenant, a.ID, nil), "SetContent nil")
	f.is.True(f.get(sc, a.ID).Content == nil) // SetContent nil clears the content

	f.wantErr(f.setContent(f.tenant, store.NewID(), &text), store.ErrNotFound, "SetContent of a missing id")
	other := store.NewID()
	f.wantErr(f.setContent(other, a.ID, &text), store.ErrNotFound, "SetContent naming another tenant")
	f.is.True(f.get(sc, a.ID).Content == nil) // another tenant's SetContent reached the attachment
}

func testExisting(t *testing.T, f *fixture) {
	f.partition(f.tenant, "docs", nil)
	other := store.NewID()
	f.partition(other, "docs", nil)
	mine := f.attachment(f.tenant, "docs", "mine.txt", nil)
	late := f.attachment(f.tenant, "docs", "late.txt", nil)
	theirs := f.attachment(other, "docs", "theirs.txt", nil)

	found, err := f.st.Existing(f.ctx, f.db, nil)
	f.must(err, "Existing of no ids")
	f.equal("Existing of no ids", len(found), 0)

	// Many ids, the existing ones spread over them (a store may ask in
	// batches).
	list := make([]string, 1500)
	for i := range list {
		list[i] = store.NewID()
	}
	list[3], list[777], list[1499] = mine.ID, theirs.ID, late.ID
	found, err = f.st.Existing(f.ctx, f.db, list)
	f.must(err, "Existing")
	var got []string
	for id, ok := range found {
		if ok {
			got = append(got, id)
		}
	}
	slices.Sort(got)
	want := []string{mine.ID, late.ID, theirs.ID}
	slices.Sort(want)
	f.equal("Existing of 1500 ids, three of them attachments (of two tenants)", got, want)
}

func testUsage(t *testing.T, f *fixture) {
	f.equal("Usage of a tenant with none", f.usage(f.tenant), int64(0))
	step := func(delta, quota int64, wantOK bool, wantUsage int64) {
		t.Helper()
		ok, err := f.addUsage(f.tenant, delta, quota)
		f.must(err, fmt.Sprintf("AddUsage(%d, quota %d)", delta, quota))
		if ok != wantOK {
			t.Errorf("AddUsage(%d, quota %d): ok %v, want %v", delta, quota, ok, wantOK)
		}
		f.equal(fmt.Sprintf("Usage after AddUsage(%d, quota %d)", delta, quota), f.usage(f.tenant), wantUsage)
	}
	step(150, 100, false, 0) // a tenant's first addition over the quota
	step(40, 100, true, 40)
	step(61, 100, false, 40)
	step(60, 100, true, 100) // up to the quota exactly
	step(1, 100, false, 100)
	step(-30, 100, true, 70)   // removals always apply
	step(-10, 0, true, 60)     // even under a lower quota
	step(5000, -1, true, 5060) // a negative quota is none
	step(1, 1000, false, 5060) // over the quota already: no addition
	step(-5060, 1000, true, 0)
	step(0, 0, true, 0)
	f.equal("another tenant's Usage", f.usage(store.NewID()), int64(0))
}

func testUsageConcurrent(t *testing.T, f *fixture) {
	const quota, delta, workers = 1000, 300, 10
	var wg sync.WaitGroup
	start := make(chan struct{})
	var mu sync.Mutex
	okCount := 0
	var errs []error
	for range workers {
		wg.Go(func() {
			<-start
			var ok bool
			err := f.db.Tx(f.ctx, func(tx *store.Tx) error {
				var err error
				ok, err = f.st.AddUsage(f.ctx, tx, f.tenant, delta, quota)
				return err
			})
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
			} else if ok {
				okCount++
			}
		})
	}
	close(start)
	wg.Wait()
	if len(errs) > 0 {
		t.Errorf("concurrent AddUsage: %d errors, first %v", len(errs), errs[0])
	}
	if okCount > quota/delta {
		t.Errorf("%d concurrent additions of %d passed a quota of %d", okCount, delta, quota)
	}
	f.equal("concurrent additions that succeed", okCount, quota/delta)
	f.equal("Usage after the concurrent additions", f.usage(f.tenant), int64(okCount*delta))
}

// errRollback ends a transaction the test rolls back.
var errRollback = errors.New("roll back")

func testUsesTheQuerier(t *testing.T, f *fixture) {
	ctx := f.ctx
	p := f.newPartition(f.tenant, "docs")
	a := f.newAttachment(f.tenant, "docs", "rolled-back.txt")
	a.Tags = []string{"rolledback"}
	err := f.tx(func(tx *store.Tx) error {
		if err := f.st.InsertPartition(ctx, tx, p, false); err != nil {
			return err
		}
		if err := f.st.InsertAttachment(ctx, tx, a); err != nil {
			return err
		}
		text := "text"
		if err := f.st.SetContent(ctx, tx, f.tenant, a.ID, &text); err != nil {
			return err
		}
		if ok, err := f.st.AddUsage(ctx, tx, f.tenant, 10, 100); err != nil || !ok {
			return fmt.Errorf("AddUsage in the transaction: %v, %v", ok, err)
		}
		// Reads through the transaction see its writes.
		if _, err := f.st.GetPartitionByCode(ctx, tx, f.tenant, "docs"); err != nil {
			return fmt.Errorf("GetPartitionByCode in the transaction: %w", err)
		}
		got, err := f.st.GetAttachment(ctx, tx, whole(f.tenant), a.ID)
		if err != nil {
			return fmt.Errorf("GetAttachment in the transaction: %w", err)
		}
		if got.Content == nil || *got.Content != text {
			return fmt.Errorf("content in the transaction: %s", deref(got.Content))
		}
		if n, err := f.st.Usage(ctx, tx, f.tenant); err != nil || n != 10 {
			return fmt.Errorf("Usage in the transaction: %d, %v", n, err)
		}
		if list, err := f.st.ListLinked(ctx, tx, whole(f.tenant), "orders", a.RecordID); err != nil || len(list) != 1 {
			return fmt.Errorf("ListLinked in the transaction: %d, %v", len(list), err)
		}
		if tags, err := f.st.Tags(ctx, tx, whole(f.tenant)); err != nil || !slices.Equal(tags, []string{"rolledback"}) {
			return fmt.Errorf("Tags in the transaction: %v, %v", tags, err)
		}
		return errRollback
	})
	if !errors.Is(err, errRollback) {
		t.Fatalf("the transaction: %v", err)
	}
	_, err = f.st.GetPartitionByCode(ctx, f.db, f.tenant, "docs")
	f.wantErr(err, store.ErrNotFound, "GetPartitionByCode after the rollback")
	_, _, err = f.st.GetAnyAttachment(ctx, f.db, a.ID)
	f.wantErr(err, store.ErrNotFound, "GetAnyAttachment after the rollback")
	f.equal("Usage after the rollback", f.usage(f.tenant), int64(0))
	f.equal("Tags after the rollback", f.tags(whole(f.tenant)), []string{})
	found, err := f.st.Existing(ctx, f.db, []string{a.ID})
	f.must(err, "Existing")
	f.equal("Existing after the rollback", found[a.ID], false)
}

// testLibrarySearchCapped: with a search, Library counts at most
// store.SearchCap(ctx)+1 matches (the cap lowered to 3 here), exactly
// below it, and still reads a page past a capped total; without a search
// the total stays exact.
func testLibrarySearchCapped(t *testing.T, f *fixture) {
	f.partition(f.tenant, "docs", nil)
	for i := range 5 {
		f.attachment(f.tenant, "docs", fmt.Sprintf("alpha-%d.txt", i), nil)
	}
	f.attachment(f.tenant, "docs", "other.txt", nil)
	names := func(items []*attachments.Attachment) []string {
		out := []string{}
		for _, a := range items {
			out = append(out, a.FileName)
		}
		return out
	}
	for _, c := range []struct {
		name     string
		cap      int
		f        attachments.LibraryFilter
		want     []string
		total    int
		reported int
		capped   bool
	}{
		{"capped", 3, attachments.LibraryFilter{Search: "ALPHA", SortField: "fileName", Limit: 2}, []string{"alpha-0.txt", "alpha-1.txt"}, 4, 3, true},
		{"page past the capped total", 3, attachments.LibraryFilter{Search: "alpha", SortField: "fileName", Limit: 10, Offset: 4},
			[]string{"alpha-4.txt"}, 4, 3, true},
		{"exact at the cap", 5, attachments.LibraryFilter{Search: "alpha", SortField: "fileName", Limit: 2}, []string{"alpha-0.txt", "alpha-1.txt"}, 5, 5, false},
		{"no search", 3, attachments.LibraryFilter{SortField: "fileName", Limit: 1}, []string{"alpha-0.txt"}, 6, 6, false},
	} {
		ctx := storetest.WithSearchCap(f.ctx, c.cap)
		items, total, err := f.st.Library(ctx, f.db, whole(f.tenant), c.f)
		if err != nil {
			t.Fatalf("Library, %s: %v", c.name, err)
		}
		f.equal("Library, "+c.name, names(items), c.want)
		f.equal("Library total, "+c.name, total, c.total)
		reported, capped := store.CapTotal(ctx, total, c.f.Search != "")
		f.equal("Library reported total, "+c.name, reported, c.reported)
		f.equal("Library capped, "+c.name, capped, c.capped)
	}
}
