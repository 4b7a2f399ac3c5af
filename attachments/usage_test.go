package attachments_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/matryer/is"

	"github.com/tenantkit/tenantkit/attachments"
	"github.com/tenantkit/tenantkit/attachments/attachmentstest"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// storageUsage returns the usage the caller of ctx sees, failing the test
// on an error.
func storageUsage(t testing.TB, svc *attachments.Service, ctx context.Context) attachments.StorageUsage {
	t.Helper()
	u, err := svc.StorageUsage(ctx)
	if err != nil {
		t.Fatalf("StorageUsage: %v", err)
	}
	return *u
}

// StorageUsage reports the tenant's bytes and files as the quota counts
// them (every organization's), the quota and the share used; an upload is
// refused exactly when it would take UsedBytes past QuotaBytes; another
// tenant's files never show.
func TestStorageUsage(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		blobs := attachments.NewMemBlobs()
		svc := newService(db, attachments.Options{Blobs: blobs, TenantQuotaBytes: 3000})
		a, b := newTenant(t), newTenant(t)
		o2 := store.NewID()
		want := func(what string, ctx context.Context, used int64, files int, percent float64) {
			t.Helper()
			got := storageUsage(t, svc, ctx)
			if exp := (attachments.StorageUsage{UsedBytes: used, QuotaBytes: 3000, Files: files, UsedPercent: percent}); got != exp {
				t.Errorf("%s: %+v, want %+v", what, got, exp)
			}
		}

		want("a tenant without files", a.ctx, 0, 0, 0)
		first := upload(t, svc, a.ctx, "R1", "a.txt", bytes.Repeat([]byte("a"), 1000), nil)
		want("after 1000 bytes", a.ctx, 1000, 1, 33.3)
		// Another organization of A, which A's first context may not read
		// (and vice versa): its files count towards the tenant's quota all
		// the same, so they show from either.
		inO2 := a.in(t, o2, []string{o2})
		upload(t, svc, inO2, "R2", "b.txt", bytes.Repeat([]byte("b"), 1000), nil)
		upload(t, svc, inO2, "R2", "c.txt", bytes.Repeat([]byte("c"), 5), nil)
		want("after three files in two organizations", a.ctx, 2005, 3, 66.8)
		want("from a scope of the other organization only", inO2, 2005, 3, 66.8)
		want("from a scope of no organization", a.in(t, "", []string{}), 2005, 3, 66.8)

		// B's files are B's alone.
		want("B before its upload", b.ctx, 0, 0, 0)
		upload(t, svc, b.ctx, "R1", "b.txt", bytes.Repeat([]byte("x"), 700), nil)
		want("B", b.ctx, 700, 1, 23.3)
		want("A after B's upload", a.ctx, 2005, 3, 66.8)

		// The widget and the quota agree: one byte more than
		// QuotaBytes-UsedBytes is refused, exactly that much is not.
		u := storageUsage(t, svc, a.ctx)
		left := u.QuotaBytes - u.UsedBytes
		_, err := svc.Upload(a.ctx, attachments.UploadInput{EntityID: "orders", RecordID: "R1", FileName: "over.txt",
			File: bytes.NewReader(bytes.Repeat([]byte("o"), int(left+1)))})
		is.True(errors.Is(err, attachments.ErrQuota))
		want("after the refused upload", a.ctx, 2005, 3, 66.8)
		upload(t, svc, a.ctx, "R1", "full.txt", bytes.Repeat([]byte("f"), int(left)), nil)
		want("at the quota", a.ctx, 3000, 4, 100)

		// A delete gives the room back.
		is.NoErr(svc.Delete(a.ctx, first.ID))
		want("after a delete", a.ctx, 2000, 3, 66.7)
		want("B after A's changes", b.ctx, 700, 1, 23.3)

		// Without a quota: the same bytes and files, no quota, 0 %.
		free := newService(db, attachments.Options{Blobs: blobs, TenantQuotaBytes: -1})
		got := storageUsage(t, free, a.ctx)
		is.Equal(got, attachments.StorageUsage{UsedBytes: 2000, Files: 3})
		// The default quota (APP_ATTACHMENT_TENANT_QUOTA_MB unset): 512 MB.
		got = storageUsage(t, newService(db, attachments.Options{Blobs: blobs}), a.ctx)
		is.Equal(got, attachments.StorageUsage{UsedBytes: 2000, QuotaBytes: 512 << 20, Files: 3, UsedPercent: 0})
		// A quota lowered below what is stored: over 100 %.
		got = storageUsage(t, newService(db, attachments.Options{Blobs: blobs, TenantQuotaBytes: 1600}), a.ctx)
		is.Equal(got, attachments.StorageUsage{UsedBytes: 2000, QuotaBytes: 1600, Files: 3, UsedPercent: 125})

		// No scope: ErrNoScope.
		_, err = svc.StorageUsage(t.Context())
		is.True(errors.Is(err, store.ErrNoScope))
	}, attachments.Migrations)
}

// The JSON names the dashboard reads.
func TestStorageUsageJSON(t *testing.T) {
	t.Parallel()
	b, err := json.Marshal(attachments.StorageUsage{UsedBytes: 1750, QuotaBytes: 3000, Files: 2, UsedPercent: 58.3})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"usedBytes":1750,"quotaBytes":3000,"files":2,"usedPercent":58.3}`; string(b) != want {
		t.Errorf("JSON %s, want %s", b, want)
	}
}

// UsedPercent rounds to one decimal.
func TestStorageUsagePercent(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		tn := newTenant(t)
		svc := newService(db, attachments.Options{TenantQuotaBytes: 3 << 20})
		upload(t, svc, tn.ctx, "R1", "a.txt", bytes.Repeat([]byte("a"), 1<<20), nil)
		if got := storageUsage(t, svc, tn.ctx).UsedPercent; got != 33.3 {
			t.Errorf("1 MiB of 3 MiB: %v %%, want 33.3", got)
		}
		upload(t, svc, tn.ctx, "R1", "b.txt", bytes.Repeat([]byte("b"), 1048), nil) // 33.3667 %
		if got := storageUsage(t, svc, tn.ctx).UsedPercent; got != 33.4 {
			t.Errorf("1 MiB + 1048 B of 3 MiB: %v %%, want 33.4", got)
		}
	}, attachments.Migrations)
}

// Broken CountAttachments implementations: each must make the suite's
// CountAttachments subtest fail.

// countsEveryTenant counts every tenant's attachments.
type countsEveryTenant struct{ attachments.Store }

func (countsEveryTenant) CountAttachments(ctx context.Context, q store.Querier, _ string) (int, error) {
	var n int
	err := q.QueryRow(ctx, `SELECT COUNT(*) FROM attachments`).Scan(&n)
	return n, err
}

// countsNoOrganization counts only the tenant's attachments of no
// organization (a scope that reads none).
type countsNoOrganization struct{ attachments.Store }

func (s countsNoOrganization) CountAttachments(ctx context.Context, q store.Querier, tenantID string) (int, error) {
	_, n, err := s.Library(ctx, q, store.Scope{TenantID: tenantID, OrganizationIDs: []string{}}, attachments.LibraryFilter{Limit: 1})
	return n, err
}

// countsCommitted counts on a database of its own, not the Querier given:
// a transaction's own insert does not show in it.
type countsCommitted struct {
	attachments.Store
	db *store.DB
}

func (s countsCommitted) CountAttachments(ctx context.Context, _ store.Querier, tenantID string) (int, error) {
	return s.Store.CountAttachments(ctx, s.db, tenantID)
}

// brokenCounts are the broken stores of CountAttachments by name.
var brokenCounts = map[string]func(attachments.Store, *store.DB) attachments.Store{
	"countsEveryTenant":    func(s attachments.Store, _ *store.DB) attachments.Store { return countsEveryTenant{s} },
	"countsNoOrganization": func(s attachments.Store, _ *store.DB) attachments.Store { return countsNoOrganization{s} },
	"countsCommitted":      func(s attachments.Store, db *store.DB) attachments.Store { return countsCommitted{s, db} },
}

// TestBrokenCountHelper runs the suite against the broken store
// storetest.Broken names, on SQLite, in the child process
// TestSuiteCatchesBrokenCounts starts; otherwise it does nothing.
func TestBrokenCountHelper(t *testing.T) {
	name := storetest.Broken()
	if name == "" {
		t.Skip("runs only in TestSuiteCatchesBrokenCounts's child process")
	}
	wrap, ok := brokenCounts[name]
	if !ok {
		t.Fatalf("unknown broken store %q", name)
	}
	db := storetest.SQLite(t, attachments.Migrations)
	attachmentstest.Run(t, func(*testing.T) (*store.DB, attachments.Store) { return db, wrap(attachments.NewSQLStore(), db) })
}

// TestSuiteCatchesBrokenCounts proves the CountAttachments case bites.
func TestSuiteCatchesBrokenCounts(t *testing.T) {
	t.Parallel()
	subtests := map[string]string{}
	for name := range brokenCounts {
		subtests[name] = "CountAttachments"
	}
	storetest.SuiteCatches(t, "TestBrokenCountHelper", subtests)
}
