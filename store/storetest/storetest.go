// Package storetest runs store tests on both engines.
//
// Each runs a test once on SQLite (a fresh temporary file) and once on
// PostgreSQL when TENANTKIT_TEST_POSTGRES_URL is set; otherwise the
// PostgreSQL subtest is skipped with a message naming the variable, so the
// gap is visible in -v output. On PostgreSQL all tests of one test binary
// share one schema (created on first use, named tktest_<unix time>_<pkg>_…,
// swept when older than two hours); isolation between tests comes from
// NewScope, which gives every test a fresh random tenant.
//
// Tests that start background workers (a job engine, Kit.Start) use
// EachIsolated, which gives each call its own PostgreSQL schema, so that no
// other test's workers take their jobs.
//
// The list-at-scale measurements (GrowAndMeasure) time each area's lists
// at sizes TENANTKIT_BENCH_LIST_ROWS gives, on demand. FlatLists runs the
// same cases in plain go test, on both engines, at two small sizes, and
// fails a case whose reads grow with its table: it counts the rows
// PostgreSQL's plans read (EXPLAIN ANALYZE) and the pages SQLite's
// statements look up (its page cache's counters), never a time. A case
// that grows on purpose says why (ScaleCase.Grows).
package storetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tenantkit/tenantkit/store"
)

// PostgresEnv names the variable holding the PostgreSQL URL for tests.
const PostgresEnv = "TENANTKIT_TEST_POSTGRES_URL"

// Each runs fn as subtest "sqlite" on a fresh migrated SQLite database and
// as subtest "postgres" on the package's PostgreSQL schema, migrated with
// lines (the store's own line is always applied).
func Each(t *testing.T, fn func(t *testing.T, db *store.DB), lines ...store.Migrations) {
	t.Helper()
	t.Run("sqlite", func(t *testing.T) { fn(t, SQLite(t, lines...)) })
	t.Run("postgres", func(t *testing.T) { fn(t, Postgres(t, lines...)) })
}

// EachIsolated is Each with a schema of its own on PostgreSQL, dropped when
// the test ends.
func EachIsolated(t *testing.T, fn func(t *testing.T, db *store.DB), lines ...store.Migrations) {
	t.Helper()
	t.Run("sqlite", func(t *testing.T) { fn(t, SQLite(t, lines...)) })
	t.Run("postgres", func(t *testing.T) {
		db := open(t, IsolatedPostgresURL(t))
		migrate(t, db, lines)
		fn(t, db)
	})
}

// EachURL runs fn with the URL of a fresh, empty database on each engine,
// for tests that open the database themselves, several times (two
// processes, a restart).
func EachURL(t *testing.T, fn func(t *testing.T, url string)) {
	t.Helper()
	t.Run("sqlite", func(t *testing.T) { fn(t, SQLiteURL(t)) })
	t.Run("postgres", func(t *testing.T) { fn(t, IsolatedPostgresURL(t)) })
}

// SQLite returns a migrated database in a temporary file, closed when the
// test ends.
func SQLite(t testing.TB, lines ...store.Migrations) *store.DB {
	t.Helper()
	db := open(t, SQLiteURL(t))
	migrate(t, db, lines)
	return db
}

// SQLiteURL returns the URL of a new SQLite file in the test's temporary
// directory.
func SQLiteURL(t testing.TB) string {
	return "sqlite:" + filepath.Join(t.TempDir(), "tenantkit.db")
}

// Postgres returns a migrated database on the package's shared schema, or
// skips the test when TENANTKIT_TEST_POSTGRES_URL is not set.
func Postgres(t testing.TB, lines ...store.Migrations) *store.DB {
	t.Helper()
	base := postgresBase(t)
	pkgSchema.once.Do(func() {
		pkgSchema.name, pkgSchema.err = createSchema(base, packageName())
	})
	if pkgSchema.err != nil {
		t.Fatalf("storetest: %v", pkgSchema.err)
	}
	db := open(t, withSearchPath(base, pkgSchema.name))
	migrate(t, db, lines)
	return db
}

// IsolatedPostgresURL creates a schema for this test alone and returns a
// URL whose search_path selects it. The schema (and the job engine's
// sibling schema <name>_river) is dropped when the test ends. Skips the
// test when TENANTKIT_TEST_POSTGRES_URL is not set.
func IsolatedPostgresURL(t testing.TB) string {
	t.Helper()
	base := postgresBase(t)
	name, err := createSchema(base, "iso")
	if err != nil {
		t.Fatalf("storetest: %v", err)
	}
	t.Cleanup(func() {
		if err := dropSchemas(base, name, name+"_river"); err != nil {
			t.Logf("storetest: drop schema %s: %v", name, err)
		}
	})
	return withSearchPath(base, name)
}

// NewScope returns a context carrying a fresh random tenant and
// organization, and that scope. Tests in one database stay apart by using
// a scope each.
func NewScope(t testing.TB) (context.Context, store.Scope) {
	sc := store.Scope{TenantID: store.NewID(), OrganizationID: store.NewID()}
	return store.WithScope(t.Context(), sc), sc
}

func postgresBase(t testing.TB) string {
	t.Helper()
	base := os.Getenv(PostgresEnv)
	if base == "" {
		t.Skipf("storetest: PostgreSQL skipped: set %s (for example postgres://postgres@127.0.0.1:5432/test) to run it", PostgresEnv)
	}
	return base
}

func open(t testing.TB, url string) *store.DB {
	t.Helper()
	db, err := store.Open(t.Context(), url, nil)
	if err != nil {
		t.Fatalf("storetest: open: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func migrate(t testing.TB, db *store.DB, lines []store.Migrations) {
	t.Helper()
	if err := db.Migrate(t.Context(), lines...); err != nil {
		t.Fatalf("storetest: migrate: %v", err)
	}
}

var pkgSchema struct {
	once sync.Once
	name string
	err  error
}

// schemaTTL is how old a test schema must be before a later run drops it.
const schemaTTL = 2 * time.Hour

var schemaName = regexp.MustCompile(`^tktest_(\d+)_`)

// Schema is a fresh PostgreSQL schema made by NewSchema.
type Schema struct {
	// Name is the schema's name (tktest_<unix>_<label>_<random>).
	Name string
	// URL is the base URL selecting the schema (search_path).
	URL  string
	base string
}

// NewSchema creates a fresh schema on the PostgreSQL database at base,
// named and swept as the tests' schemas are (so one a program never drops
// goes within two hours), for programs outside tests (examples/soak).
func NewSchema(base, label string) (*Schema, error) {
	name, err := createSchema(base, label)
	if err != nil {
		return nil, err
	}
	return &Schema{Name: name, URL: withSearchPath(base, name), base: base}, nil
}

// Drop drops the schema and the job engine's schema beside it
// (<name>_river).
func (s *Schema) Drop() error { return dropSchemas(s.base, s.Name, s.Name+"_river") }

// createSchema creates tktest_<unix>_<label>_<random> and sweeps test
// schemas left behind by earlier runs.
func createSchema(base, label string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		return "", fmt.Errorf("connect to %s: %w", PostgresEnv, err)
	}
	defer conn.Close(ctx)

	rows, err := conn.Query(ctx, `SELECT nspname FROM pg_namespace WHERE nspname LIKE 'tktest\_%'`)
	if err != nil {
		return "", err
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return "", err
	}
	for _, n := range names {
		m := schemaName.FindStringSubmatch(n)
		if m == nil {
			continue
		}
		if ts, _ := strconv.ParseInt(m[1], 10, 64); time.Since(time.Unix(ts, 0)) > schemaTTL {
			_, _ = conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{n}.Sanitize()+" CASCADE")
		}
	}

	var rnd [4]byte
	_, _ = rand.Read(rnd[:])
	// The job engine's sibling schema (<name>_river) must stay within
	// River's 46 characters: the label is cut to 10.
	if len(label) > 10 {
		label = label[:10]
	}
	name := fmt.Sprintf("tktest_%d_%s_%s", time.Now().Unix(), label, hex.EncodeToString(rnd[:]))
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{name}.Sanitize()); err != nil {
		return "", err
	}
	return name, nil
}

func dropSchemas(base string, names ...string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	for _, n := range names {
		if _, err := conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{n}.Sanitize()+" CASCADE"); err != nil {
			return err
		}
	}
	return nil
}

func withSearchPath(base, schema string) string {
	u, err := url.Parse(base)
	if err != nil {
		return base
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

var nonWord = regexp.MustCompile(`[^a-z0-9]+`)

// packageName derives a short label from the test binary (store.test →
// store).
func packageName() string {
	name := strings.TrimSuffix(filepath.Base(os.Args[0]), ".test")
	name = nonWord.ReplaceAllString(strings.ToLower(name), "")
	if len(name) > 16 {
		name = name[:16]
	}
	if name == "" {
		name = "pkg"
	}
	return name
}

// MigrationsBefore returns the migrations of m numbered below first (a
// file name prefix such as "0004"), so that a test can migrate a database
// to the schema before a migration, write rows as they were written then,
// and check what the migration makes of them.
func MigrationsBefore(t testing.TB, m store.Migrations, first string) store.Migrations {
	t.Helper()
	files := fstest.MapFS{}
	err := fs.WalkDir(m.FS, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() >= first {
			return err
		}
		b, err := fs.ReadFile(m.FS, path)
		files[path] = &fstest.MapFile{Data: b}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return store.Migrations{Line: m.Line, FS: files, Dir: m.Dir}
}
