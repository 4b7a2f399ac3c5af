package drain

import (
	"cmp"
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/tenantkit/tenantkit/store"
)

// Table is the SQL of Leases over a queue table the owning area creates
// in its own migrations, one row per queue:
//
//	<key>       TEXT PRIMARY KEY  -- Key.ID
//	<group>     TEXT NOT NULL     -- Key.Group
//	owner       TEXT              -- the drain holding the lease: host:pid:instance/id
//	lease_until TIMESTAMP         -- (TIMESTAMPTZ on PostgreSQL)
//	queued      BOOLEAN NOT NULL DEFAULT FALSE
//	queued_at   TIMESTAMP
//	wake_at     TIMESTAMP         -- when a drain is scheduled for the next due item
//
// The same statements serve both engines. An area's Store embeds a Table
// for its Leases and adds the Items queries over its own work table.
type Table struct {
	name, key, group                                                                              string
	wake, acquire, flag, acquireFree, renew, holds, release, unflag, yield, scheduleWake, requeue string
	lapsed, reclaim, owners                                                                       string
}

// NewTable returns the Leases of the queue table name, whose key and
// group columns are keyCol and groupCol. The names are SQL written by the
// caller, never input.
func NewTable(name, keyCol, groupCol string) *Table {
	r := strings.NewReplacer("{t}", name, "{k}", keyCol, "{g}", groupCol)
	return &Table{name: name, key: keyCol, group: groupCol,
		wake: r.Replace(`INSERT INTO {t} ({k}, {g}, queued, queued_at) VALUES ($1, $2, TRUE, $3)
		ON CONFLICT ({k}) DO UPDATE SET queued = TRUE, queued_at = $3 WHERE NOT {t}.queued
		RETURNING (lease_until IS NULL OR lease_until < $3)`),
		acquire: r.Replace(`UPDATE {t} SET owner = $2, lease_until = $3, queued = FALSE, queued_at = NULL
			WHERE {k} = $1 AND (lease_until IS NULL OR lease_until < $4)`),
		flag: r.Replace(`INSERT INTO {t} ({k}, {g}, queued, queued_at) VALUES ($1, $2, TRUE, $3)
			ON CONFLICT ({k}) DO UPDATE SET queued = TRUE, queued_at = COALESCE({t}.queued_at, $3)`),
		acquireFree: r.Replace(`UPDATE {t} SET owner = $2, lease_until = $3, queued = FALSE, queued_at = NULL
			WHERE {k} = $1 AND owner IS NULL`),
		renew:   r.Replace(`UPDATE {t} SET lease_until = $3 WHERE {k} = $1 AND owner = $2`),
		holds:   r.Replace(`SELECT 1 FROM {t} WHERE {k} = $1 AND owner = $2 AND lease_until >= $3`),
		release: r.Replace(`UPDATE {t} SET owner = NULL, lease_until = NULL WHERE {k} = $1 AND owner = $2 AND NOT queued`),
		unflag:  r.Replace(`UPDATE {t} SET queued = FALSE, queued_at = NULL WHERE {k} = $1 AND owner = $2`),
		yield: r.Replace(`UPDATE {t} SET owner = NULL, lease_until = NULL, queued = TRUE, queued_at = $3
			WHERE {k} = $1 AND owner = $2`),
		scheduleWake: r.Replace(`UPDATE {t} SET wake_at = $2 WHERE {k} = $1 AND (wake_at IS NULL OR wake_at <= $3 OR wake_at > $2)`),
		requeue: r.Replace(`INSERT INTO {t} ({k}, {g}, queued, queued_at) VALUES ($1, $2, TRUE, $3)
				ON CONFLICT ({k}) DO UPDATE SET queued = TRUE, queued_at = $3`),
		lapsed: r.Replace(`SELECT {g}, {k}, owner, lease_until FROM {t} WHERE owner IS NOT NULL AND lease_until < $1
			ORDER BY {k} LIMIT $2`),
		reclaim: r.Replace(`UPDATE {t} SET owner = NULL, lease_until = NULL, queued = TRUE, queued_at = $3
			WHERE {k} = $1 AND owner = $2 AND lease_until < $3`),
		owners: r.Replace(`SELECT {g}, {k}, owner, lease_until, queued, queued_at, wake_at FROM {t}
			WHERE owner IS NOT NULL OR queued ORDER BY {k}`),
	}
}

// Wake implements Leases.
func (t *Table) Wake(ctx context.Context, q store.Querier, k Key, now time.Time) (bool, error) {
	free, err := store.Many(ctx, q, scanBool, t.wake, k.ID, k.Group, now)
	return len(free) == 1 && free[0], err
}

func scanBool(sc store.Scanner) (bool, error) {
	var b bool
	return b, sc.Scan(&b)
}

// Acquire implements Leases.
func (t *Table) Acquire(ctx context.Context, q store.Querier, k Key, owner string, now, until time.Time) (bool, error) {
	n, err := q.Exec(ctx, t.acquire, k.ID, owner, until, now)
	return n == 1, err
}

// Flag implements Leases.
func (t *Table) Flag(ctx context.Context, q store.Querier, k Key, now time.Time) error {
	_, err := q.Exec(ctx, t.flag, k.ID, k.Group, now)
	return err
}

// AcquireFree implements Leases.
func (t *Table) AcquireFree(ctx context.Context, q store.Querier, k Key, owner string, until time.Time) (bool, error) {
	n, err := q.Exec(ctx, t.acquireFree, k.ID, owner, until)
	return n == 1, err
}

// Renew implements Leases.
func (t *Table) Renew(ctx context.Context, q store.Querier, k Key, owner string, until time.Time) (bool, error) {
	n, err := q.Exec(ctx, t.renew, k.ID, owner, until)
	return n == 1, err
}

// Holds implements Leases.
func (t *Table) Holds(ctx context.Context, q store.Querier, k Key, owner string, now time.Time) (bool, error) {
	n, err := store.Many(ctx, q, func(sc store.Scanner) (int, error) {
		var one int
		return one, sc.Scan(&one)
	}, t.holds, k.ID, owner, now)
	return len(n) == 1, err
}

// Release implements Leases.
func (t *Table) Release(ctx context.Context, q store.Querier, k Key, owner string) (bool, error) {
	n, err := q.Exec(ctx, t.release, k.ID, owner)
	return n == 1, err
}

// Unflag implements Leases.
func (t *Table) Unflag(ctx context.Context, q store.Querier, k Key, owner string) (bool, error) {
	n, err := q.Exec(ctx, t.unflag, k.ID, owner)
	return n == 1, err
}

// Yield implements Leases.
func (t *Table) Yield(ctx context.Context, q store.Querier, k Key, owner string, queuedAt time.Time) (bool, error) {
	n, err := q.Exec(ctx, t.yield, k.ID, owner, queuedAt)
	return n > 0, err
}

// ScheduleWake implements Leases.
func (t *Table) ScheduleWake(ctx context.Context, q store.Querier, k Key, at, now time.Time) (bool, error) {
	n, err := q.Exec(ctx, t.scheduleWake, k.ID, at, now)
	return n > 0, err
}

// Requeue implements Leases.
func (t *Table) Requeue(ctx context.Context, q store.Querier, k Key, now time.Time) error {
	_, err := q.Exec(ctx, t.requeue, k.ID, k.Group, now)
	return err
}

// Lapsed implements Failover.
func (t *Table) Lapsed(ctx context.Context, q store.Querier, now time.Time, limit int) ([]QueueState, error) {
	return store.Many(ctx, q, func(sc store.Scanner) (QueueState, error) {
		var s QueueState
		var until store.NullTime
		err := sc.Scan(&s.Key.Group, &s.Key.ID, &s.Owner, &until)
		s.Holder, s.LeaseUntil = HolderOf(s.Owner), until.Time
		return s, err
	}, t.lapsed, now, limit)
}

// Reclaim implements Failover.
func (t *Table) Reclaim(ctx context.Context, q store.Querier, k Key, owner string, now time.Time) (bool, error) {
	n, err := q.Exec(ctx, t.reclaim, k.ID, owner, now)
	return n == 1, err
}

// Owners implements Inspector over the queue table alone: the queues
// held or flagged, in key order, without their items (Due and OldestDue
// are zero; see OwnersDue). It reads one row per such queue.
func (t *Table) Owners(ctx context.Context, q store.Querier, now time.Time) ([]QueueState, error) {
	return store.Many(ctx, q, func(sc store.Scanner) (QueueState, error) {
		var s QueueState
		var owner *string
		var until, queuedAt, wakeAt store.NullTime
		err := sc.Scan(&s.Key.Group, &s.Key.ID, &owner, &until, &s.Queued, &queuedAt, &wakeAt)
		s.fill(owner, until, queuedAt, wakeAt, now)
		return s, err
	}, t.owners)
}

// OwnersDue is Owners with the work: the queues held or flagged, and the
// queues with items due at now in the work table items, with how many
// are due and (given items.Since) since when the oldest is, in key order.
// It counts every due item, so it costs what the due items do: fine for
// an operator's route or a metrics scrape, not for every request.
func (t *Table) OwnersDue(ctx context.Context, q store.Querier, items DueItems, now time.Time) ([]QueueState, error) {
	r := strings.NewReplacer("{t}", t.name, "{k}", t.key, "{g}", t.group,
		"{due}", items.read(`i.`+items.Group+` AS g, i.`+items.Key+` AS k, `+cmp.Or(items.Since, "NULL")+` AS since`),
		"{none}", items.none(`i.`+items.Key+` = q.`+t.key))
	return store.Many(ctx, q, func(sc store.Scanner) (QueueState, error) {
		var s QueueState
		var owner *string
		var queued *bool
		var until, queuedAt, wakeAt, oldest store.NullTime
		err := sc.Scan(&s.Key.Group, &s.Key.ID, &owner, &until, &queued, &queuedAt, &wakeAt, &s.Due, &oldest)
		s.fill(owner, until, queuedAt, wakeAt, now)
		s.Queued, s.OldestDue = queued != nil && *queued, oldest.Time
		return s, err
	}, r.Replace(`SELECT due.g, due.k, q.owner, q.lease_until, q.queued, q.queued_at, q.wake_at, due.n, due.oldest
			FROM (SELECT e.g, e.k, COUNT(*) AS n, MIN(e.since) AS oldest FROM ({due}) e GROUP BY e.g, e.k) due
			LEFT JOIN {t} q ON q.{k} = due.k
		UNION ALL
		SELECT q.{g}, q.{k}, q.owner, q.lease_until, q.queued, q.queued_at, q.wake_at, 0, NULL
			FROM {t} q WHERE (q.owner IS NOT NULL OR q.queued) AND {none}
		ORDER BY 2`), now)
}

// sets are the predicates of the due items: those of ByKey, DueSets, or
// Due alone.
func (items DueItems) sets() []string {
	if len(items.ByKey) > 0 {
		sets := make([]string, len(items.ByKey))
		for j, s := range items.ByKey {
			sets[j] = s.due()
		}
		return sets
	}
	if len(items.DueSets) > 0 {
		return items.DueSets
	}
	return []string{items.Due}
}

// keysDue is Stuck's read of the keys with due items when they are sets
// by key (ByKey): WITH RECURSIVE, one walk per set over its index's keys
// (s0, s1, …: each step seeks the next key after the last, so a key
// costs one index entry however many items it has), and for each key
// found, its group from one due item (NULL when none is due): the WITH
// clause, and the SELECT of columns g and k that Stuck reads from.
func (items DueItems) keysDue() (with, from string) {
	walks := make([]string, len(items.ByKey))
	selects := make([]string, len(items.ByKey))
	for j, set := range items.ByKey {
		walk := "s" + strconv.Itoa(j)
		next := `SELECT i.` + items.Key + ` FROM ` + items.Table + ` i WHERE ` + set.Items
		order := ` ORDER BY i.` + items.Key + ` LIMIT 1`
		walks[j] = walk + `(k) AS (SELECT (` + next + order + `)
			UNION ALL SELECT (` + next + ` AND i.` + items.Key + ` > ` + walk + `.k` + order + `) FROM ` + walk + ` WHERE ` + walk + `.k IS NOT NULL)`
		selects[j] = `SELECT (SELECT i.` + items.Group + ` FROM ` + items.Table + ` i WHERE ` + set.due() + ` AND i.` + items.Key + ` = ` +
			walk + `.k LIMIT 1) AS g, ` + walk + `.k AS k FROM ` + walk + ` WHERE ` + walk + `.k IS NOT NULL`
	}
	// The keys found, each with its group, are materialized (keys_due), so
	// that a key's group is looked up once: inlined, PostgreSQL evaluated
	// the lookup both in Stuck's filter and in its output.
	return `WITH RECURSIVE ` + strings.Join(walks, ", ") + `, keys_due AS MATERIALIZED (` + strings.Join(selects, " UNION ALL ") + `) `,
		`SELECT g, k FROM keys_due`
}

// read is a query of columns (over the alias i) of the due items: one
// SELECT per set, joined by UNION ALL.
func (items DueItems) read(columns string) string {
	parts := make([]string, 0, 2)
	for _, set := range items.sets() {
		parts = append(parts, `SELECT `+columns+` FROM `+items.Table+` i WHERE `+set)
	}
	return strings.Join(parts, " UNION ALL ")
}

// none is the predicate "no due item matches cond" (over the alias i),
// one NOT EXISTS per set.
func (items DueItems) none(cond string) string {
	parts := make([]string, 0, 2)
	for _, set := range items.sets() {
		parts = append(parts, `NOT EXISTS (SELECT 1 FROM `+items.Table+` i WHERE `+cond+` AND (`+set+`))`)
	}
	return strings.Join(parts, " AND ")
}

// DueItems names an area's work table for Table.Stuck and
// Table.OwnersDue.
type DueItems struct {
	// Table is the work table, read under the alias i.
	Table string
	// Group and Key are its columns holding Key.Group and Key.ID.
	Group, Key string
	// Due is the predicate of an item due at $1 (the sweep's now),
	// written over the alias i.
	Due string
	// DueSets, when set, is used instead of Due: predicates of the same
	// form whose union is the due items, no item in two of them. Each is
	// read on its own (UNION ALL), so that each can walk an index of its
	// own (a partial index whose predicate it repeats): an OR of them in
	// one WHERE, SQLite reads by scanning the table.
	DueSets []string
	// ByKey, when set, is used instead of Due and DueSets: disjoint sets
	// of items, each held in key order by an index of its own (a partial
	// index led by the key column, whose predicate KeySet.Items
	// repeats), whose due items are the due items. Stuck then walks each
	// set's keys through its index, one entry per key, and looks one due
	// item up per key, rather than reading every due item: it costs what
	// the keys with items do, not what a backlog does (a receiver down
	// for a day leaves its webhook a retry per delivery). OwnersDue,
	// which counts the due items, reads each set's.
	ByKey []KeySet
	// Since is an expression over the alias i of when a due item became
	// due (for webhook deliveries, COALESCE(i.next_retry_at,
	// i.enqueued_at)), for OwnersDue's OldestDue; "" leaves it zero.
	Since string
}

// KeySet is one of DueItems.ByKey: a set of the work table's items
// held in key order by an index of its own.
type KeySet struct {
	// Items is the set's predicate over the alias i, without parameters:
	// the predicate of its partial index, led by the key column.
	Items string
	// Due is the further predicate, over i with $1 the sweep's now, of
	// the set's items that are due ("" when all are); the index answers
	// it for one key (its second column, say).
	Due string
}

// due is the predicate of the set's due items.
func (s KeySet) due() string {
	if s.Due == "" {
		return s.Items
	}
	return s.Items + ` AND ` + s.Due
}

// Stuck is Items.Stuck over the work table items: the keys with due items
// whose queue has no live lease and no drain waiting (no row, an owner
// whose lease expired, or a flag set before flaggedBefore), in key order.
func (t *Table) Stuck(ctx context.Context, q store.Querier, items DueItems, now, flaggedBefore time.Time) ([]Key, error) {
	r := strings.NewReplacer("{t}", t.name, "{k}", t.key)
	with, due := "", items.read(`i.`+items.Group+` AS g, i.`+items.Key+` AS k`)
	if len(items.ByKey) > 0 {
		with, due = items.keysDue()
	}
	return store.Many(ctx, q, func(sc store.Scanner) (Key, error) {
		var k Key
		return k, sc.Scan(&k.Group, &k.ID)
	}, with+`SELECT DISTINCT e.g, e.k FROM (`+due+`) e
			LEFT JOIN `+r.Replace(`{t} q ON q.{k}`)+` = e.k
			WHERE e.g IS NOT NULL AND (`+r.Replace(`q.{k}`)+` IS NULL OR (q.lease_until IS NULL OR q.lease_until < $1)
				AND (NOT q.queued OR q.owner IS NOT NULL OR q.queued_at < $2))
			ORDER BY e.k`, // queue rows are locked in one order (see Queues.Wake)
		now, flaggedBefore)
}
