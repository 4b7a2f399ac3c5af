package attachments_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tenantkit/tenantkit/attachments"
	"github.com/tenantkit/tenantkit/attachments/attachmentstest"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// The SQL store passes the conformance suite on both engines, each in one
// database shared by the suite's subtests (they keep to tenants of their
// own).
func TestSQLStoreConformance(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		attachmentstest.Run(t, func(*testing.T) (*store.DB, attachments.Store) { return db, attachments.NewSQLStore() })
	}, attachments.Migrations)
}

// Broken stores: the SQL store with one behaviour wrong each. Each must
// make the suite fail in the subtest named.

// tenantBlind reads an attachment by id whatever its tenant.
type tenantBlind struct{ attachments.Store }

func (s tenantBlind) GetAttachment(ctx context.Context, q store.Querier, sc store.Scope, id string) (*attachments.Attachment, error) {
	a, _, err := s.GetAnyAttachment(ctx, q, id)
	if err != nil {
		return nil, err
	}
	if !sc.AllowsOrganization(a.OrganizationID) {
		return nil, store.ErrNotFound
	}
	return a, nil
}

// orgBlind reads as if the scope allowed every organization.
type orgBlind struct{ attachments.Store }

func (s orgBlind) GetAttachment(ctx context.Context, q store.Querier, sc store.Scope, id string) (*attachments.Attachment, error) {
	sc.OrganizationIDs = nil
	return s.Store.GetAttachment(ctx, q, sc, id)
}

func (s orgBlind) ListLinked(ctx context.Context, q store.Querier, sc store.Scope, typ, id string) ([]*attachments.Attachment, error) {
	sc.OrganizationIDs = nil
	return s.Store.ListLinked(ctx, q, sc, typ, id)
}

func (s orgBlind) Library(ctx context.Context, q store.Querier, sc store.Scope, f attachments.LibraryFilter) ([]*attachments.Attachment, int, error) {
	sc.OrganizationIDs = nil
	return s.Store.Library(ctx, q, sc, f)
}

func (s orgBlind) Tags(ctx context.Context, q store.Querier, sc store.Scope) ([]string, error) {
	sc.OrganizationIDs = nil
	return s.Store.Tags(ctx, q, sc)
}

// caseSensitiveSearch matches the search text case-sensitively.
type caseSensitiveSearch struct{ attachments.Store }

func (s caseSensitiveSearch) Library(ctx context.Context, q store.Querier, sc store.Scope, f attachments.LibraryFilter) ([]*attachments.Attachment, int, error) {
	items, _, err := s.Store.Library(ctx, q, sc, f)
	items = slices.DeleteFunc(items, func(a *attachments.Attachment) bool { return !strings.Contains(a.FileName, f.Search) })
	return items, len(items), err
}

// ascendingOnly ignores the library's sort direction.
type ascendingOnly struct{ attachments.Store }

func (s ascendingOnly) Library(ctx context.Context, q store.Querier, sc store.Scope, f attachments.LibraryFilter) ([]*attachments.Attachment, int, error) {
	f.SortDesc = false
	return s.Store.Library(ctx, q, sc, f)
}

// pageTotal counts the page rather than every match.
type pageTotal struct{ attachments.Store }

func (s pageTotal) Library(ctx context.Context, q store.Querier, sc store.Scope, f attachments.LibraryFilter) ([]*attachments.Attachment, int, error) {
	items, _, err := s.Store.Library(ctx, q, sc, f)
	return items, len(items), err
}

// linkedOldestFirst lists a record's attachments oldest first.
type linkedOldestFirst struct{ attachments.Store }

func (s linkedOldestFirst) ListLinked(ctx context.Context, q store.Querier, sc store.Scope, typ, id string) ([]*attachments.Attachment, error) {
	list, err := s.Store.ListLinked(ctx, q, sc, typ, id)
	slices.Reverse(list)
	return list, err
}

// ignoresQuota adds whatever the quota.
type ignoresQuota struct{ attachments.Store }

func (s ignoresQuota) AddUsage(ctx context.Context, q store.Querier, tenantID string, delta, _ int64) (bool, error) {
	return s.Store.AddUsage(ctx, q, tenantID, delta, -1)
}

// keepsOldTags adds an update's tags to the old ones.
type keepsOldTags struct{ attachments.Store }

func (s keepsOldTags) UpdateAttachment(ctx context.Context, q store.Querier, a *attachments.Attachment) error {
	old, _, err := s.GetAnyAttachment(ctx, q, a.ID)
	if err == nil {
		merged := *a
		merged.Tags = append(slices.Clone(old.Tags), a.Tags...)
		slices.Sort(merged.Tags)
		merged.Tags = slices.Compact(merged.Tags)
		a = &merged
	}
	return s.Store.UpdateAttachment(ctx, q, a)
}

// keepsOldName updates everything but the file name (a rename lost).
type keepsOldName struct{ attachments.Store }

func (s keepsOldName) UpdateAttachment(ctx context.Context, q store.Querier, a *attachments.Attachment) error {
	old, _, err := s.GetAnyAttachment(ctx, q, a.ID)
	if err == nil {
		kept := *a
		kept.FileName = old.FileName
		a = &kept
	}
	return s.Store.UpdateAttachment(ctx, q, a)
}

// inUseInvalid reports a partition in use as invalid input rather than a
// conflict.
type inUseInvalid struct{ attachments.Store }

func (s inUseInvalid) DeletePartition(ctx context.Context, q store.Querier, tenantID, id string) error {
	err := s.Store.DeletePartition(ctx, q, tenantID, id)
	if errors.Is(err, store.ErrConflict) {
		return store.Errorf(store.ErrInvalid, "partition in use")
	}
	return err
}

// ignoredConflictOverwrites makes an insert of a taken code with
// ignoreConflict replace the partition's title and flags.
type ignoredConflictOverwrites struct{ attachments.Store }

func (s ignoredConflictOverwrites) InsertPartition(ctx context.Context, q store.Querier, p *attachments.Partition, ignoreConflict bool) error {
	if old, err := s.GetPartitionByCode(ctx, q, p.TenantID, p.Code); ignoreConflict && err == nil {
		upd := *p
		upd.ID = old.ID
		return s.UpdatePartition(ctx, q, &upd)
	}
	return s.Store.InsertPartition(ctx, q, p, ignoreConflict)
}

// partitionCodeAnyTenant finds a partition by code in whichever tenant
// has it.
type partitionCodeAnyTenant struct{ attachments.Store }

func (s partitionCodeAnyTenant) GetPartitionByCode(ctx context.Context, q store.Querier, tenantID, code string) (*attachments.Partition, error) {
	p, err := s.Store.GetPartitionByCode(ctx, q, tenantID, code)
	if !errors.Is(err, store.ErrNotFound) {
		return p, err
	}
	var owner string
	if err := q.QueryRow(ctx, `SELECT tenant_id FROM attachment_partitions WHERE code = $1 LIMIT 1`, code).Scan(&owner); err != nil {
		return nil, err
	}
	return s.Store.GetPartitionByCode(ctx, q, owner, code)
}

// existingFirstBatch answers for the first 500 ids only.
type existingFirstBatch struct{ attachments.Store }

func (s existingFirstBatch) Existing(ctx context.Context, q store.Querier, ids []string) (map[string]bool, error) {
	return s.Store.Existing(ctx, q, ids[:min(len(ids), 500)])
}

// setContentAnyTenant stores content whatever the tenant named.
type setContentAnyTenant struct{ attachments.Store }

func (s setContentAnyTenant) SetContent(ctx context.Context, q store.Querier, _, id string, content *string) error {
	a, _, err := s.GetAnyAttachment(ctx, q, id)
	if err != nil {
		return err
	}
	return s.Store.SetContent(ctx, q, a.TenantID, id, content)
}

// tagsReversed lists the tags in reverse order.
type tagsReversed struct{ attachments.Store }

func (s tagsReversed) Tags(ctx context.Context, q store.Querier, sc store.Scope) ([]string, error) {
	tags, err := s.Store.Tags(ctx, q, sc)
	slices.Reverse(tags)
	return tags, err
}

// deleteKeepsRow "deletes" an attachment by finding it only.
type deleteKeepsRow struct{ attachments.Store }

func (s deleteKeepsRow) DeleteAttachment(ctx context.Context, q store.Querier, tenantID, id string) error {
	_, err := s.GetAttachment(ctx, q, store.Scope{TenantID: tenantID}, id)
	return err
}

// brokenStores are the broken stores by name, with the subtest of
// attachmentstest.Run that must fail against each.
var brokenStores = map[string]struct {
	wrap    func(attachments.Store) attachments.Store
	subtest string
}{
	"tenantBlind":               {func(s attachments.Store) attachments.Store { return tenantBlind{s} }, "AttachmentTenantScoped"},
	"orgBlind":                  {func(s attachments.Store) attachments.Store { return orgBlind{s} }, "OrganizationScoped"},
	"caseSensitiveSearch":       {func(s attachments.Store) attachments.Store { return caseSensitiveSearch{s} }, "LibrarySearch"},
	"ascendingOnly":             {func(s attachments.Store) attachments.Store { return ascendingOnly{s} }, "LibrarySort"},
	"pageTotal":                 {func(s attachments.Store) attachments.Store { return pageTotal{s} }, "LibraryPaging"},
	"linkedOldestFirst":         {func(s attachments.Store) attachments.Store { return linkedOldestFirst{s} }, "ListLinked"},
	"ignoresQuota":              {func(s attachments.Store) attachments.Store { return ignoresQuota{s} }, "Usage"},
	"keepsOldTags":              {func(s attachments.Store) attachments.Store { return keepsOldTags{s} }, "UpdateAttachment"},
	"keepsOldName":              {func(s attachments.Store) attachments.Store { return keepsOldName{s} }, "UpdateAttachment"},
	"inUseInvalid":              {func(s attachments.Store) attachments.Store { return inUseInvalid{s} }, "PartitionInUse"},
	"ignoredConflictOverwrites": {func(s attachments.Store) attachments.Store { return ignoredConflictOverwrites{s} }, "Partitions"},
	"partitionCodeAnyTenant":    {func(s attachments.Store) attachments.Store { return partitionCodeAnyTenant{s} }, "PartitionsPerTenant"},
	"existingFirstBatch":        {func(s attachments.Store) attachments.Store { return existingFirstBatch{s} }, "Existing"},
	"setContentAnyTenant":       {func(s attachments.Store) attachments.Store { return setContentAnyTenant{s} }, "SetContent"},
	"tagsReversed":              {func(s attachments.Store) attachments.Store { return tagsReversed{s} }, "Tags"},
	"deleteKeepsRow":            {func(s attachments.Store) attachments.Store { return deleteKeepsRow{s} }, "DeleteAttachment"},
}

// TestBrokenStoreHelper runs the suite against the broken store
// storetest.Broken names, on SQLite, in the child process
// TestSuiteCatchesBrokenStores starts; otherwise it does nothing.
func TestBrokenStoreHelper(t *testing.T) {
	name := storetest.Broken()
	if name == "" {
		t.Skip("runs only in TestSuiteCatchesBrokenStores's child process")
	}
	broken, ok := brokenStores[name]
	if !ok {
		t.Fatalf("unknown broken store %q", name)
	}
	db := storetest.SQLite(t, attachments.Migrations)
	attachmentstest.Run(t, func(*testing.T) (*store.DB, attachments.Store) { return db, broken.wrap(attachments.NewSQLStore()) })
}

// TestSuiteCatchesBrokenStores proves the suite bites: against each
// broken store it fails, in the subtest that checks the broken behaviour.
func TestSuiteCatchesBrokenStores(t *testing.T) {
	t.Parallel()
	subtests := map[string]string{}
	for name, b := range brokenStores {
		subtests[name] = b.subtest
	}
	storetest.SuiteCatches(t, "TestBrokenStoreHelper", subtests)
}

// checkThenAdd checks the quota and adds in two steps: concurrent
// transactions each see room and together pass the quota. So that they do
// every time, whatever the scheduling, each caller adding waits after its
// check until racyCallers have checked (or a second has passed). SQLite
// runs one write transaction at a time, so only PostgreSQL shows it;
// SuiteCatches runs SQLite, hence the test of its own below.
type checkThenAdd struct {
	attachments.Store
	gate *racyGate
}

// racyCallers is how many adds the gate holds until they have all
// checked: four adds of 300 pass the suite's quota of 1000 (and the
// PostgreSQL pool runs at least four transactions at once).
const racyCallers = 4

// racyGate holds callers until n of them have arrived, or a second has
// passed.
type racyGate struct {
	mu      sync.Mutex
	arrived int
	all     chan struct{}
}

func newRacyGate() *racyGate { return &racyGate{all: make(chan struct{})} }

func (g *racyGate) wait() {
	g.mu.Lock()
	g.arrived++
	if g.arrived == racyCallers {
		close(g.all)
	}
	g.mu.Unlock()
	select {
	case <-g.all:
	case <-time.After(time.Second):
	}
}

func (s checkThenAdd) AddUsage(ctx context.Context, q store.Querier, tenantID string, delta, quota int64) (bool, error) {
	used, err := s.Usage(ctx, q, tenantID)
	if err != nil {
		return false, err
	}
	if delta > 0 && quota >= 0 && used+delta > quota {
		return false, nil
	}
	if delta > 0 {
		s.gate.wait()
	}
	return s.Store.AddUsage(ctx, q, tenantID, delta, -1)
}

// racyUsageEnv marks the child process of
// TestSuiteCatchesRacyUsageOnPostgres.
const racyUsageEnv = "ATTACHMENTS_TEST_RACY_USAGE"

// TestRacyUsageHelper runs the suite on PostgreSQL against checkThenAdd,
// in the child process TestSuiteCatchesRacyUsageOnPostgres starts;
// otherwise it does nothing.
func TestRacyUsageHelper(t *testing.T) {
	if os.Getenv(racyUsageEnv) == "" {
		t.Skip("runs only in TestSuiteCatchesRacyUsageOnPostgres's child process")
	}
	db := storetest.Postgres(t, attachments.Migrations)
	attachmentstest.Run(t, func(*testing.T) (*store.DB, attachments.Store) {
		return db, checkThenAdd{attachments.NewSQLStore(), newRacyGate()}
	})
}

// TestSuiteCatchesRacyUsageOnPostgres proves UsageConcurrent bites: on
// PostgreSQL it fails against a store whose quota check and addition are
// two steps.
func TestSuiteCatchesRacyUsageOnPostgres(t *testing.T) {
	if os.Getenv(racyUsageEnv) != "" {
		t.Skip("in the child process")
	}
	if os.Getenv(storetest.PostgresEnv) == "" {
		t.Skipf("set %s to run it", storetest.PostgresEnv)
	}
	t.Parallel()
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestRacyUsageHelper$/^UsageConcurrent$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), racyUsageEnv+"=1")
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		t.Fatalf("the suite passed against checkThenAdd (err %v); output:\n%s", err, out)
	}
	if want := "--- FAIL: TestRacyUsageHelper/UsageConcurrent "; !strings.Contains(string(out), want) {
		t.Errorf("the suite failed, but not in UsageConcurrent; output:\n%s", out)
	}
}
