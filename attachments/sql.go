package attachments

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"

	"github.com/tenantkit/tenantkit/store"
)

// SQLStore is the Store on the store package's engines, SQLite and
// PostgreSQL: the same SQL serves both. Its tables are Migrations'.
type SQLStore struct{}

// NewSQLStore returns the SQL store.
func NewSQLStore() *SQLStore { return &SQLStore{} }

const partitionColumns = "id, tenant_id, code, title, description, is_public, requires_ocr, created_at, updated_at"

func scanPartition(s store.Scanner) (*Partition, error) {
	var p Partition
	if err := s.Scan(&p.ID, &p.TenantID, &p.Code, &p.Title, &p.Description, &p.IsPublic, &p.RequiresOcr,
		&p.CreatedAt, &p.UpdatedAt); err != nil {
		return nil, err
	}
	p.EnvKey = EnvKey(p.Code)
	return &p, nil
}

// ListPartitions implements Store.
func (*SQLStore) ListPartitions(ctx context.Context, q store.Querier, tenantID string) ([]*Partition, error) {
	return store.Many(ctx, q, scanPartition, `SELECT `+partitionColumns+` FROM attachment_partitions
		WHERE tenant_id = $1 ORDER BY created_at, code`, tenantID)
}

// GetPartition implements Store.
func (*SQLStore) GetPartition(ctx context.Context, q store.Querier, tenantID, id string) (*Partition, error) {
	return store.One(ctx, q, scanPartition, `SELECT `+partitionColumns+` FROM attachment_partitions
		WHERE tenant_id = $1 AND id = $2`, tenantID, id)
}

// GetPartitionByCode implements Store.
func (*SQLStore) GetPartitionByCode(ctx context.Context, q store.Querier, tenantID, code string) (*Partition, error) {
	return store.One(ctx, q, scanPartition, `SELECT `+partitionColumns+` FROM attachment_partitions
		WHERE tenant_id = $1 AND code = $2`, tenantID, code)
}

// InsertPartition implements Store.
func (*SQLStore) InsertPartition(ctx context.Context, q store.Querier, p *Partition, ignoreConflict bool) error {
	onConflict := ""
	if ignoreConflict {
		onConflict = " ON CONFLICT DO NOTHING"
	}
	_, err := q.Exec(ctx, `INSERT INTO attachment_partitions (`+partitionColumns+`)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`+onConflict,
		p.ID, p.TenantID, p.Code, p.Title, p.Description, p.IsPublic, p.RequiresOcr, p.CreatedAt, p.UpdatedAt)
	return err
}

// UpdatePartition implements Store.
func (*SQLStore) UpdatePartition(ctx context.Context, q store.Querier, p *Partition) error {
	return store.ExecOne(ctx, q, `UPDATE attachment_partitions SET title = $3, description = $4, is_public = $5,
		requires_ocr = $6, updated_at = $7 WHERE tenant_id = $1 AND id = $2`,
		p.TenantID, p.ID, p.Title, p.Description, p.IsPublic, p.RequiresOcr, p.UpdatedAt)
}

// DeletePartition implements Store. The attachments' foreign key refuses
// the delete of a partition in use, on both engines, whatever uploads
// run at the same time.
func (*SQLStore) DeletePartition(ctx context.Context, q store.Querier, tenantID, id string) error {
	err := store.ExecOne(ctx, q, `DELETE FROM attachment_partitions WHERE tenant_id = $1 AND id = $2`, tenantID, id)
	if errors.Is(err, store.ErrInvalid) { // the foreign key
		return store.Errorf(store.ErrConflict, "partition in use: %v", err)
	}
	return err
}

// attachmentColumns are the columns scanAttachment reads, qualified by a.
const attachmentColumns = "a.id, a.tenant_id, COALESCE(a.organization_id, ''), a.entity_id, a.record_id, a.partition_code, " +
	"a.file_name, a.file_size, a.mime_type, a.storage_key, a.content, COALESCE(a.extraction_status, ''), a.extraction_error, " +
	"a.tags, a.assignments, a.custom_fields, a.created_at, a.updated_at"

func scanAttachment(s store.Scanner) (*Attachment, error) { return scanAttachmentAnd(s) }

// scanAttachmentAnd scans attachmentColumns followed by the columns of
// more (a join's).
func scanAttachmentAnd(s store.Scanner, more ...any) (*Attachment, error) {
	var a Attachment
	var tags, assignments, fields []byte
	dest := append([]any{&a.ID, &a.TenantID, &a.OrganizationID, &a.EntityID, &a.RecordID, &a.PartitionCode, &a.FileName,
		&a.FileSize, &a.MimeType, &a.StorageKey, &a.Content, &a.ExtractionStatus, &a.ExtractionError, &tags, &assignments, &fields, &a.CreatedAt, &a.UpdatedAt}, more...)
	if err := s.Scan(dest...); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(tags, &a.Tags); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(assignments, &a.Assignments); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(fields, &a.CustomFields); err != nil {
		return nil, err
	}
	return &a, nil
}

// jsonText marshals a JSON column's value (bound as a string on both
// engines).
func jsonText(v any) (string, error) {
	b, err := json.Marshal(v)
	return string(b), err
}

// attachmentJSON returns a's JSON columns as text.
func attachmentJSON(a *Attachment) (tags, assignments, fields string, err error) {
	if tags, err = jsonText(nonNilTags(a.Tags)); err != nil {
		return
	}
	if assignments, err = jsonText(nonNilAssignments(a.Assignments)); err != nil {
		return
	}
	cf := a.CustomFields
	if cf == nil {
		cf = map[string]any{}
	}
	fields, err = jsonText(cf)
	return
}

// InsertAttachment implements Store.
func (s *SQLStore) InsertAttachment(ctx context.Context, q store.Querier, a *Attachment) error {
	tags, assignments, fields, err := attachmentJSON(a)
	if err != nil {
		return err
	}
	if _, err := q.Exec(ctx, `INSERT INTO attachments (id, tenant_id, organization_id, entity_id, record_id, partition_code,
		file_name, file_size, mime_type, storage_key, content, tags, assignments, custom_fields, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)`,
		a.ID, a.TenantID, store.NullIfEmpty(a.OrganizationID), a.EntityID, a.RecordID, a.PartitionCode, a.FileName,
		a.FileSize, a.MimeType, a.StorageKey, a.Content, tags, assignments, fields, a.CreatedAt, a.UpdatedAt); err != nil {
		return err
	}
	if err := attachmentCounts.Add(ctx, q, store.CountDelta{Key: []string{a.TenantID, a.OrganizationID, a.PartitionCode}, N: 1}); err != nil {
		return err
	}
	return s.writeIndexes(ctx, q, a, a.OrganizationID, a.PartitionCode)
}

// attachmentCounts keeps how many attachments each tenant has per
// organization and partition, tagCounts how many of them carry each tag
// (migration 0003).
var (
	attachmentCounts = store.NewCounts("attachment_counts", "tenant_id", "organization_id", "partition_code")
	tagCounts        = store.NewCounts("attachment_tag_counts", "tenant_id", "organization_id", "partition_code", "tag")
)

// retag counts the attachment of org and partition as no longer carrying
// the tags removed and now carrying those added.
func retag(ctx context.Context, q store.Querier, tenantID, org, partition string, removed, added []string) error {
	deltas := make([]store.CountDelta, 0, len(removed)+len(added))
	for _, tag := range removed {
		deltas = append(deltas, store.CountDelta{Key: []string{tenantID, org, partition, tag}, N: -1})
	}
	for _, tag := range added {
		deltas = append(deltas, store.CountDelta{Key: []string{tenantID, org, partition, tag}, N: 1})
	}
	return tagCounts.Add(ctx, q, deltas...)
}

// removeTags deletes the attachment's tags and returns them.
func removeTags(ctx context.Context, q store.Querier, tenantID, id string) ([]string, error) {
	return store.Many(ctx, q, func(s store.Scanner) (string, error) {
		var tag string
		return tag, s.Scan(&tag)
	}, `DELETE FROM attachment_tags WHERE attachment_id = $1 AND tenant_id = $2 RETURNING tag`, id, tenantID)
}

// writeIndexes stores a's tags and links (after removing any old ones),
// and moves the tag counts of the attachment (of org and partition, as
// stored) from its old tags to its new ones.
func (*SQLStore) writeIndexes(ctx context.Context, q store.Querier, a *Attachment, org, partition string) error {
	old, err := removeTags(ctx, q, a.TenantID, a.ID)
	if err != nil {
		return err
	}
	if err := retag(ctx, q, a.TenantID, org, partition, old, dedupe(a.Tags)); err != nil {
		return err
	}
	if _, err := q.Exec(ctx, `DELETE FROM attachment_links WHERE attachment_id = $1`, a.ID); err != nil {
		return err
	}
	for _, tag := range dedupe(a.Tags) {
		if _, err := q.Exec(ctx, `INSERT INTO attachment_tags (attachment_id, tenant_id, tag) VALUES ($1, $2, $3)`,
			a.ID, a.TenantID, tag); err != nil {
			return err
		}
	}
	seen := map[[2]string]bool{}
	for _, as := range a.Assignments {
		k := [2]string{as.Type, as.ID}
		if seen[k] {
			continue
		}
		seen[k] = true
		if _, err := q.Exec(ctx, `INSERT INTO attachment_links (attachment_id, tenant_id, type, target_id) VALUES ($1, $2, $3, $4)`,
			a.ID, a.TenantID, as.Type, as.ID); err != nil {
			return err
		}
	}
	return nil
}

// readable is the predicate of the attachments sc may read.
func readable(sc store.Scope) *store.Conds { return sc.Readable("a.tenant_id", "a.organization_id") }

// GetAttachment implements Store.
func (*SQLStore) GetAttachment(ctx context.Context, q store.Querier, sc store.Scope, id string) (*Attachment, error) {
	c := readable(sc)
	c.And("a.id = ?", id)
	return store.One(ctx, q, scanAttachment, `SELECT `+attachmentColumns+` FROM attachments a WHERE `+c.SQL(), c.Values()...)
}

// GetAnyAttachment implements Store.
func (*SQLStore) GetAnyAttachment(ctx context.Context, q store.Querier, id string) (*Attachment, *Partition, error) {
	var p Partition
	a, err := store.One(ctx, q, func(s store.Scanner) (*Attachment, error) {
		return scanAttachmentAnd(s, &p.ID, &p.Title, &p.Description, &p.IsPublic, &p.RequiresOcr, &p.CreatedAt, &p.UpdatedAt)
	}, `SELECT `+attachmentColumns+`, p.id, p.title, p.description, p.is_public, p.requires_ocr, p.created_at, p.updated_at
		FROM attachments a JOIN attachment_partitions p ON p.tenant_id = a.tenant_id AND p.code = a.partition_code
		WHERE a.id = $1`, id)
	if err != nil {
		return nil, nil, err
	}
	p.TenantID, p.Code, p.EnvKey = a.TenantID, a.PartitionCode, EnvKey(a.PartitionCode)
	return a, &p, nil
}

// ListLinked implements Store.
func (*SQLStore) ListLinked(ctx context.Context, q store.Querier, sc store.Scope, typ, id string) ([]*Attachment, error) {
	c := readable(sc)
	c.And("a.id IN (SELECT l.attachment_id FROM attachment_links l WHERE l.tenant_id = ? AND l.type = ? AND l.target_id = ?)",
		sc.TenantID, typ, id)
	return store.Many(ctx, q, scanAttachment, `SELECT `+attachmentColumns+` FROM attachments a WHERE `+c.SQL()+
		` ORDER BY a.created_at DESC, a.id DESC`, c.Values()...)
}

// librarySort maps LibraryFilter.SortField to columns.
var librarySort = map[string]string{"fileName": "a.file_name", "fileSize": "a.file_size", "createdAt": "a.created_at"}

// libraryConds is Library's predicate for sc and f.
func libraryConds(d store.Dialect, sc store.Scope, f LibraryFilter) *store.Conds {
	return andLibrary(readable(sc), d, sc, f)
}

// andLibrary adds f's filters to c.
func andLibrary(c *store.Conds, d store.Dialect, sc store.Scope, f LibraryFilter) *store.Conds {
	if f.Search != "" {
		c.And(d.ContainsFold("a.file_name", "?"), store.LikeContains(f.Search))
	}
	if f.Partition != "" {
		c.And("a.partition_code = ?", f.Partition)
	}
	for _, tag := range dedupe(f.Tags) {
		c.And("EXISTS (SELECT 1 FROM attachment_tags t WHERE t.attachment_id = a.id AND t.tenant_id = ? AND t.tag = ?)",
			sc.TenantID, tag)
	}
	return c
}

// nameIndex is how a file-name search reads its candidates from an
// engine's index: from, the FROM clause that reads the attachments
// through the index, and cond, the condition that selects the indexed
// candidates (its one placeholder for arg). The candidates must include
// every attachment the search's own predicate (libraryConds) selects; the
// predicate still decides.
type nameIndex struct {
	from, cond string
	arg        any
}

// nameSearch returns the nameIndex of a search, or false when the index
// cannot serve it (then the search reads the names). SQLite registers
// one (sql_sqlite.go); PostgreSQL's index serves the predicate itself
// (migration 0004).
type nameSearch func(search string) (nameIndex, bool)

// nameSearches holds each engine's nameSearch, by dialect.
var nameSearches = map[store.Dialect]nameSearch{}

// Library implements Store. With a search that the engine's nameSearch
// serves, the total counts the indexed candidates (at most
// store.SearchCap(ctx)+1 matches, indexedTotal), and the page reads them
// too unless matches are dense (denseMatches): then the page reads the
// attachments in its order until it has them, as without the index,
// rather than every candidate.
func (*SQLStore) Library(ctx context.Context, q store.Querier, sc store.Scope, f LibraryFilter) ([]*Attachment, int, error) {
	if f.Search == "" && len(dedupe(f.Tags)) > 1 {
		return libraryByTags(ctx, q, sc, f)
	}
	c, from := libraryConds(q.Dialect(), sc, f), "attachments a"
	total, ix, err := indexedTotal(ctx, q, sc, f)
	switch {
	case err != nil:
		return nil, 0, err
	case ix == nil:
		if total, err = libraryTotal(ctx, q, sc, f, c); err != nil {
			return nil, 0, err
		}
	default:
		dense, err := denseMatches(ctx, q, sc, f, total)
		if err != nil {
			return nil, 0, err
		}
		if !dense {
			c, from = c.And(ix.cond, ix.arg), ix.from
		}
	}
	items, err := libraryPage(ctx, q, from, c, f)
	return items, total, err
}

// libraryPage reads f's page of the attachments c selects from from.
func libraryPage(ctx context.Context, q store.Querier, from string, c *store.Conds, f LibraryFilter) ([]*Attachment, error) {
	return store.Many(ctx, q, scanAttachment, `SELECT `+attachmentColumns+` FROM `+from+` WHERE `+c.SQL()+
		c.OrderPage(librarySortColumn(f), "a.id", f.SortDesc, f.Limit, f.Offset), c.Values()...)
}

// librarySortColumn is the column f's page is ordered by.
func librarySortColumn(f LibraryFilter) string {
	if col, ok := librarySort[f.SortField]; ok {
		return col
	}
	return "a.created_at"
}

// libraryByTags is Library filtered by two tags or more (no search): the
// attachments carrying every one. It reads the rows of the rarest of the
// tags (by the kept counts), testing each for the others, rather than
// every attachment of the tenant testing each for every tag: no row when
// a tag is carried by none the scope reads. When the matches could not
// be dense even if every attachment of the rarest tag matched, the page
// and the total come from one read of them (pageAndTotal). Otherwise the
// total counts them first, and the page is read from them too unless the
// matches are dense enough that reading in the page's order finds it
// sooner (as denseMatches decides for a search).
func libraryByTags(ctx context.Context, q store.Querier, sc store.Scope, f LibraryFilter) ([]*Attachment, int, error) {
	tags := dedupe(f.Tags)
	rarest, carried, err := rarestTag(ctx, q, sc, f.Partition, tags)
	if err != nil || carried == 0 {
		return []*Attachment{}, 0, err
	}
	all, err := attachmentCounts.Sum(ctx, q, countedIn(sc, f.Partition))
	if err != nil {
		return nil, 0, err
	}
	others := f
	others.Tags = slices.DeleteFunc(slices.Clone(tags), func(t string) bool { return t == rarest })
	m := rarestMatches{d: q.Dialect(), sc: sc, rarest: rarest, others: others}
	// In the page's order, about (offset+limit)·all/total attachments
	// are read before the page is full; from the rarest tag, carried
	// (total is at most carried).
	if (f.Offset+f.Limit)*all >= carried*carried {
		return m.pageAndTotal(ctx, q, f)
	}
	total, err := m.count(ctx, q)
	if err != nil || total == 0 || f.Offset >= total {
		return []*Attachment{}, total, err
	}
	if (f.Offset+f.Limit)*all < total*carried {
		items, err := libraryPage(ctx, q, "attachments a", libraryConds(q.Dialect(), sc, f), f)
		return items, total, err
	}
	items, err := m.page(ctx, q, f, nil)
	return items, total, err
}

// rarestMatches reads the attachments sc reads that carry the rarest tag
// and the others' tags from the rarest tag's rows (libraryByTags).
type rarestMatches struct {
	d      store.Dialect
	sc     store.Scope
	rarest string
	others LibraryFilter
}

// conds selects the matches, r the rarest tag's rows and a their
// attachments.
func (m rarestMatches) conds() *store.Conds {
	return andLibrary(readable(m.sc).And("r.tenant_id = ? AND r.tag = ? AND a.id = r.attachment_id", m.sc.TenantID, m.rarest),
		m.d, m.sc, m.others)
}

// SQLite takes a CROSS JOIN's left table as the outer loop: the rarest
// tag's rows, whatever its statistics say.
const fromRarest = "attachment_tags r CROSS JOIN attachments a"

// count counts the matches. A plan kept for the statement suits a common
// rarest tag or a rare one, not both: PostgreSQL plans it for the tag at
// every run.
func (m rarestMatches) count(ctx context.Context, q store.Querier) (int, error) {
	var total int
	c := m.conds()
	err := q.QueryRow(ctx, `SELECT COUNT(*) FROM `+fromRarest+` WHERE `+c.SQL(), planEachRun(c)...).Scan(&total)
	return total, err
}

// page reads f's page of all the matches and, when total is not nil,
// their count into it (each row carries it), so that one read of the
// matches serves both. The matches are a subquery PostgreSQL may not
// merge: planned for the page alone, it read the attachments in the
// page's order testing each, as if the matches were dense (it takes the
// tags for independent).
func (m rarestMatches) page(ctx context.Context, q store.Querier, f LibraryFilter, total *int) ([]*Attachment, error) {
	c := m.conds()
	cols, scan := attachmentColumns, scanAttachment
	if total != nil {
		cols += ", COUNT(*) OVER ()"
		scan = func(s store.Scanner) (*Attachment, error) { return scanAttachmentAnd(s, total) }
	}
	from := `(SELECT a.* FROM ` + fromRarest + ` WHERE ` + c.SQL() + m.d.SubqueryFence() + `) a`
	page := c.OrderPage(librarySortColumn(f), "a.id", f.SortDesc, f.Limit, f.Offset)
	return store.Many(ctx, q, scan, `SELECT `+cols+` FROM `+from+page, planEachRun(c)...)
}

// pageAndTotal reads f's page with the count of the matches; an empty
// page past the first counts them on its own.
func (m rarestMatches) pageAndTotal(ctx context.Context, q store.Querier, f LibraryFilter) ([]*Attachment, int, error) {
	var total int
	items, err := m.page(ctx, q, f, &total)
	if err != nil || len(items) > 0 || f.Offset == 0 {
		return items, total, err
	}
	total, err = m.count(ctx, q)
	return items, total, err
}

// countedIn selects the kept counts of the organizations sc reads, in
// partition when it is set.
func countedIn(sc store.Scope, partition string) *store.Conds {
	k := sc.ReadableCounted("tenant_id", "organization_id")
	if partition != "" {
		k.And("partition_code = ?", partition)
	}
	return k
}

// planEachRun is c's values after store.PlanEachRun.
func planEachRun(c *store.Conds) []any { return append([]any{store.PlanEachRun}, c.Values()...) }

// rarestTag returns the one of tags that the fewest attachments sc reads
// (in partition, when set) carry, and how many carry it, from the kept
// counts.
func rarestTag(ctx context.Context, q store.Querier, sc store.Scope, partition string, tags []string) (string, int, error) {
	k := countedIn(sc, partition)
	in := make([]string, len(tags))
	for i, t := range tags {
		in[i] = k.Add(t)
	}
	k.And("tag IN (" + strings.Join(in, ", ") + ")")
	type tagCount struct {
		tag string
		n   int64
	}
	rows, err := store.Many(ctx, q, func(s store.Scanner) (tagCount, error) {
		var r tagCount
		return r, s.Scan(&r.tag, &r.n)
	}, `SELECT tag, SUM(n) FROM attachment_tag_counts WHERE `+k.SQL()+` GROUP BY tag`, k.Values()...)
	if err != nil {
		return "", 0, err
	}
	counts := make(map[string]int, len(tags)) // a tag no one carries has none
	for _, r := range rows {
		counts[r.tag] = int(r.n)
	}
	rarest := tags[0]
	for _, t := range tags[1:] {
		if counts[t] < counts[rarest] {
			rarest = t
		}
	}
	return rarest, counts[rarest], nil
}

// indexedTotal counts a search's matches through the engine's name index
// (countCandidates) and returns the count with the index, or a nil index
// when there is no search, the engine has no nameSearch or it cannot
// serve this search, or the candidates ran out before the count was
// known.
func indexedTotal(ctx context.Context, q store.Querier, sc store.Scope, f LibraryFilter) (int, *nameIndex, error) {
	ns := nameSearches[q.Dialect()]
	if ns == nil || f.Search == "" {
		return 0, nil, nil
	}
	ix, ok := ns(f.Search)
	if !ok {
		return 0, nil, nil
	}
	n, counted, err := countCandidates(ctx, q, libraryConds(q.Dialect(), sc, f), ix)
	if err != nil || !counted {
		return 0, nil, err
	}
	return n, &ix, nil
}

// countCandidates counts the attachments c selects among ix's
// candidates, reading at most
// 2×(store.SearchCap(ctx)+1) candidates: the index holds every tenant's
// names, so a term common in other tenants' names can have many
// candidates before this tenant's. It returns the count (at most
// store.SearchCap(ctx)+1, as store.CountCapped's) and true, or false when
// the candidates ran out before the count was known; the search then
// counts by reading the names in order as without the index, which stops
// early for a common term.
func countCandidates(ctx context.Context, q store.Querier, c *store.Conds, ix nameIndex) (int, bool, error) {
	limit := store.SearchCap(ctx) + 1
	budget := 2 * limit
	where := strings.Replace(ix.cond, "?", c.Add(ix.arg), 1)
	rows, err := q.Query(ctx, `SELECT CASE WHEN `+c.SQL()+` THEN 1 ELSE 0 END FROM `+ix.from+` WHERE `+where+` LIMIT `+c.Add(budget),
		c.Values()...)
	if err != nil {
		return 0, false, err
	}
	defer rows.Close()
	candidates, hits := 0, 0
	for hits < limit && rows.Next() {
		var hit int
		if err := rows.Scan(&hit); err != nil {
			return 0, false, err
		}
		candidates++
		if hit == 1 {
			hits++
		}
	}
	if err := rows.Err(); err != nil {
		return 0, false, err
	}
	return hits, hits >= limit || candidates < budget, rows.Close()
}

// denseMatches says whether a page of f is expected to be read sooner in
// its order, testing each attachment, than from every one of the total
// indexed candidates: when the total is capped, or when the attachments
// read in order until offset+limit matches (their number times the
// tenant's attachments over the matches, the matches spread evenly)
// are fewer than the matches.
func denseMatches(ctx context.Context, q store.Querier, sc store.Scope, f LibraryFilter, total int) (bool, error) {
	if total > store.SearchCap(ctx) {
		return true, nil
	}
	if total <= f.Offset+f.Limit {
		return false, nil
	}
	n, err := attachmentCounts.Sum(ctx, q, sc.ReadableCounted("tenant_id", "organization_id"))
	return (f.Offset+f.Limit)*n < total*total, err
}

// libraryTotal returns how many attachments c (Library's predicate for
// sc and f) selects. Unfiltered, by partition and by one tag it sums the
// kept counts; with a search it counts at most store.SearchCap(ctx)+1
// matches (store.CountCapped). Several tags without a search are
// libraryByTags'.
func libraryTotal(ctx context.Context, q store.Querier, sc store.Scope, f LibraryFilter, c *store.Conds) (int, error) {
	tags := dedupe(f.Tags)
	if f.Search != "" {
		return store.CountCapped(ctx, q, `FROM attachments a WHERE `+c.SQL(), c.Values()...)
	}
	k := countedIn(sc, f.Partition)
	if len(tags) == 1 {
		return tagCounts.Sum(ctx, q, k.And("tag = ?", tags[0]))
	}
	return attachmentCounts.Sum(ctx, q, k)
}

// Tags implements Store: the tags whose kept count for the organizations
// sc reads is not zero.
func (*SQLStore) Tags(ctx context.Context, q store.Querier, sc store.Scope) ([]string, error) {
	c := sc.ReadableCounted("tenant_id", "organization_id")
	return store.Many(ctx, q, func(s store.Scanner) (string, error) {
		var tag string
		return tag, s.Scan(&tag)
	}, `SELECT tag FROM attachment_tag_counts WHERE `+c.SQL()+` GROUP BY tag HAVING SUM(n) > 0 ORDER BY tag`, c.Values()...)
}

// stored scans the organization and partition a statement returns.
func stored(s store.Scanner) ([2]string, error) {
	var k [2]string
	return k, s.Scan(&k[0], &k[1])
}

// UpdateAttachment implements Store.
func (s *SQLStore) UpdateAttachment(ctx context.Context, q store.Querier, a *Attachment) error {
	tags, assignments, fields, err := attachmentJSON(a)
	if err != nil {
		return err
	}
	k, err := store.One(ctx, q, stored, `UPDATE attachments SET entity_id = $3, record_id = $4, tags = $5, assignments = $6,
		custom_fields = $7, updated_at = $8, file_name = $9 WHERE tenant_id = $1 AND id = $2
		RETURNING COALESCE(organization_id, ''), partition_code`,
		a.TenantID, a.ID, a.EntityID, a.RecordID, tags, assignments, fields, a.UpdatedAt, a.FileName)
	if err != nil {
		return err
	}
	return s.writeIndexes(ctx, q, a, k[0], k[1])
}

// DeleteAttachment implements Store: its tags first, to uncount them.
func (*SQLStore) DeleteAttachment(ctx context.Context, q store.Querier, tenantID, id string) error {
	tags, err := removeTags(ctx, q, tenantID, id)
	if err != nil {
		return err
	}
	k, err := store.One(ctx, q, stored, `DELETE FROM attachments WHERE tenant_id = $1 AND id = $2
		RETURNING COALESCE(organization_id, ''), partition_code`, tenantID, id)
	if err != nil {
		return err
	}
	if err := attachmentCounts.Add(ctx, q, store.CountDelta{Key: []string{tenantID, k[0], k[1]}, N: -1}); err != nil {
		return err
	}
	return retag(ctx, q, tenantID, k[0], k[1], tags, nil)
}

// SetContent implements Store.
func (*SQLStore) SetContent(ctx context.Context, q store.Querier, tenantID, id string, content *string) error {
	return store.ExecOne(ctx, q, `UPDATE attachments SET content = $3 WHERE tenant_id = $1 AND id = $2`, tenantID, id, content)
}

// SetExtraction implements Store.
func (*SQLStore) SetExtraction(ctx context.Context, q store.Querier, tenantID, id, status string, message *string) error {
	return store.ExecOne(ctx, q, `UPDATE attachments SET extraction_status = $3, extraction_error = $4 WHERE tenant_id = $1 AND id = $2`,
		tenantID, id, status, message)
}

// Existing implements Store.
func (*SQLStore) Existing(ctx context.Context, q store.Querier, ids []string) (map[string]bool, error) {
	out := map[string]bool{}
	for len(ids) > 0 {
		batch := ids[:min(len(ids), 500)]
		ids = ids[len(batch):]
		var args store.Args
		ph := make([]string, len(batch))
		for i, id := range batch {
			ph[i] = args.Add(id)
		}
		found, err := store.Many(ctx, q, func(s store.Scanner) (string, error) {
			var id string
			return id, s.Scan(&id)
		}, `SELECT id FROM attachments WHERE id IN (`+strings.Join(ph, ", ")+`)`, args.Values()...)
		if err != nil {
			return nil, err
		}
		for _, id := range found {
			out[id] = true
		}
	}
	return out, nil
}

// AddUsage implements Store: one conditional update, so that the check
// and the addition are one step on both engines.
func (*SQLStore) AddUsage(ctx context.Context, q store.Querier, tenantID string, delta, quota int64) (bool, error) {
	if _, err := q.Exec(ctx, `INSERT INTO attachment_usage (tenant_id, bytes) VALUES ($1, 0) ON CONFLICT DO NOTHING`,
		tenantID); err != nil {
		return false, err
	}
	if delta <= 0 || quota < 0 {
		_, err := q.Exec(ctx, `UPDATE attachment_usage SET bytes = bytes + $2 WHERE tenant_id = $1`, tenantID, delta)
		return err == nil, err
	}
	n, err := q.Exec(ctx, `UPDATE attachment_usage SET bytes = bytes + $2 WHERE tenant_id = $1 AND bytes + $2 <= $3`,
		tenantID, delta, quota)
	return n == 1, err
}

// Usage implements Store.
func (*SQLStore) Usage(ctx context.Context, q store.Querier, tenantID string) (int64, error) {
	var n int64
	err := q.QueryRow(ctx, `SELECT bytes FROM attachment_usage WHERE tenant_id = $1`, tenantID).Scan(&n)
	if errors.Is(err, store.ErrNotFound) {
		return 0, nil
	}
	return n, err
}

// CountAttachments implements Store, from the kept counts.
func (*SQLStore) CountAttachments(ctx context.Context, q store.Querier, tenantID string) (int, error) {
	return attachmentCounts.Sum(ctx, q, store.Where("tenant_id = ?", tenantID))
}

// dedupe returns list without repeats, in first-seen order.
func dedupe(list []string) []string {
	seen := make(map[string]bool, len(list))
	out := make([]string, 0, len(list))
	for _, s := range list {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

func nonNilTags(t []string) []string {
	if t == nil {
		return []string{}
	}
	return t
}

func nonNilAssignments(a []Assignment) []Assignment {
	if a == nil {
		return []Assignment{}
	}
	return a
}
