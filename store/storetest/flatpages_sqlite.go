//go:build !tenantkit_nosqlite

package storetest

import (
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"modernc.org/sqlite"

	"github.com/tenantkit/tenantkit/store"
)

// flatPagesSlack is the growth in pages read FlatLists allows a case on
// SQLite beside 1.5×: one more level in each B-tree a page's rows are
// looked up in, not a list reading its table (whose 80,000 more rows are
// hundreds of pages even in a narrow index: 472 in
// TestPagesReadFollowTheTable).
const flatPagesSlack = 100

// flatSQLiteSizes are the sizes FlatLists grows a tenant's table to on
// SQLite: twice FlatSizes, so that the tables' B-trees are as deep at the
// smaller size as at the larger. A page of rows looked up one by one
// costs a page more for each row when a B-tree gains a level (a log's
// 1,000 rows read for a sparse filter: 938 pages at 10,000 rows, 1,841 at
// 50,000, the same 1,000 rows read), which would count as growth; from
// 20,000 to 100,000 rows, 1,839 and 1,843.
var flatSQLiteSizes = []int{20000, 100000}

func init() {
	flatEngines = append(flatEngines, flatEngine{name: "sqlite", label: "SQLite", sizes: flatSQLiteSizes, open: openFlatSQLite})
}

// sqliteConns holds the connections SQLite's driver opened to each
// database file FlatLists counts (by path), as its connection hook saw
// them.
var sqliteConns = struct {
	once    sync.Once
	mu      sync.Mutex
	counted map[string][]sqlite.DBStatus
}{counted: map[string][]sqlite.DBStatus{}}

// countConnections has the driver report each new connection to a file
// FlatLists counts: the store's writer and its reader. The store's
// checkpointer, whose DSN is neither a writer's (_txlock) nor a reader's
// (query_only), runs on its own and is left out.
func countConnections() {
	sqliteConns.once.Do(func() {
		sqlite.RegisterConnectionHook(func(conn sqlite.ExecQuerierContext, dsn string) error {
			if !strings.Contains(dsn, "_txlock=") && !strings.Contains(dsn, "query_only") {
				return nil
			}
			path, _, _ := strings.Cut(strings.TrimPrefix(dsn, "file:"), "?")
			sqliteConns.mu.Lock()
			defer sqliteConns.mu.Unlock()
			if conns, ok := sqliteConns.counted[path]; ok {
				if status, ok := conn.(sqlite.DBStatus); ok {
					sqliteConns.counted[path] = append(conns, status)
				}
			}
			return nil
		})
	})
}

// openFlatSQLite opens FlatLists' SQLite database: one reader beside the
// writer, so that the connections the counter reads are the two the
// store runs its statements on.
func openFlatSQLite(t *testing.T, lines []store.Migrations) (*store.DB, *flatCounter) {
	t.Helper()
	countConnections()
	path := filepath.Join(t.TempDir(), "flat.db")
	sqliteConns.mu.Lock()
	sqliteConns.counted[path] = nil
	sqliteConns.mu.Unlock()
	t.Cleanup(func() {
		sqliteConns.mu.Lock()
		delete(sqliteConns.counted, path)
		sqliteConns.mu.Unlock()
	})
	db, err := store.Open(t.Context(), "sqlite:"+path, &store.Options{MaxReaders: 1})
	if err != nil {
		t.Fatalf("storetest: open: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	migrate(t, db, lines)
	return db, &flatCounter{unit: "pages", slack: flatPagesSlack,
		read: func(t *testing.T, fn func() error, _ ...string) (int, error) { return pagesRead(t, db, path, fn) }}
}

// pagesRead calls fn and returns the pages its statements looked up on
// the connections to path: the page cache's hits and misses, which
// count every B-tree page a statement visits, cached or not.
func pagesRead(t *testing.T, db *store.DB, path string, fn func() error) (int, error) {
	t.Helper()
	before, err := pagesLookedUp(t, db, path)
	if err != nil {
		t.Fatal(err)
	}
	if err := fn(); err != nil {
		return 0, err
	}
	after, err := pagesLookedUp(t, db, path)
	if err != nil {
		t.Fatal(err)
	}
	return after - before, nil
}

// pagesLookedUp sums the page cache's lookups over the connections to
// path: two, the writer and one reader. Another number fails the count: a
// third would be one opened after another was closed, whose counters are
// gone; fewer, a driver whose connections do not report their counters. A
// connection's counters may be read only while no statement runs on it:
// the store prepares statements on its readers in the background. So
// they are read inside a write transaction and a read transaction of
// db's, which hold its one writer and its one reader.
func pagesLookedUp(t *testing.T, db *store.DB, path string) (n int, err error) {
	ctx := t.Context()
	err = db.Tx(ctx, func(*store.Tx) error {
		return db.ReadTx(ctx, func(*store.Tx) error {
			n = 0 // a transaction run again counts again
			sqliteConns.mu.Lock()
			defer sqliteConns.mu.Unlock()
			conns := sqliteConns.counted[path]
			if len(conns) != 2 {
				return fmt.Errorf("storetest: %d connections to %s counted, want the writer and one reader", len(conns), path)
			}
			for _, c := range conns {
				for _, op := range []sqlite.DBStatusOp{sqlite.DBStatusCacheHit, sqlite.DBStatusCacheMiss} {
					v, _, err := c.Status(op, false)
					if err != nil {
						return err
					}
					n += v
				}
			}
			return nil
		})
	})
	return n, err
}
