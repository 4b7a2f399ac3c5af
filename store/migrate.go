package store

import (
	"cmp"
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"
)

// Migrations is one named line of schema versions, embedded by the package
// that owns the tables. FS holds a directory per engine, "sqlite" and
// "postgres", each with files named NNNN_description.sql; both directories
// carry the same versions.
//
//	//go:embed migrations
//	var migrationsFS embed.FS
//	var Migrations = store.Migrations{Line: "toggles", FS: migrationsFS, Dir: "migrations"}
type Migrations struct {
	// Line names the set; versions are numbered per line.
	Line string
	// FS holds the migration files.
	FS fs.FS
	// Dir is the directory inside FS holding the sqlite/ and postgres/
	// directories. Defaults to the root of FS.
	Dir string
}

// Migration is one version of a line, read for one engine.
type Migration struct {
	Version  int    // the file name's leading number (0001_...): the order applied
	Name     string // the file name after the number, without .sql
	SQL      string // the file's statements, applied in one transaction
	Checksum string // hex SHA-256 of SQL; an applied version whose file changed fails Migrate
}

//go:embed migrations
var ownFS embed.FS

// Own is the store's own line: the migrations table and the event log.
// Migrate always applies it first.
var Own = Migrations{Line: "store", FS: ownFS, Dir: "migrations"}

// ErrMigrationChanged is returned when a migration file differs from the
// one recorded as applied. Applied migrations are immutable: add a new
// version instead.
var ErrMigrationChanged = errors.New("store: applied migration changed")

// Load reads the line's migrations for an engine ("sqlite" or "postgres"),
// sorted by version.
func (m Migrations) Load(engine string) ([]Migration, error) {
	dir := path.Join(cmp.Or(m.Dir, "."), engine)
	entries, err := fs.ReadDir(m.FS, dir)
	if err != nil {
		return nil, fmt.Errorf("store: migrations %q: %w", m.Line, err)
	}
	var out []Migration
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".sql") {
			continue
		}
		digits, name, ok := strings.Cut(strings.TrimSuffix(e.Name(), ".sql"), "_")
		v, err := strconv.Atoi(digits)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("store: migrations %q: file %s is not named NNNN_name.sql", m.Line, e.Name())
		}
		b, err := fs.ReadFile(m.FS, path.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		sum := sha256.Sum256(b)
		out = append(out, Migration{Version: v, Name: name, SQL: string(b), Checksum: hex.EncodeToString(sum[:])})
	}
	slices.SortFunc(out, func(a, b Migration) int { return a.Version - b.Version })
	for i := 1; i < len(out); i++ {
		if out[i].Version == out[i-1].Version {
			return nil, fmt.Errorf("store: migrations %q: version %d appears twice", m.Line, out[i].Version)
		}
	}
	return out, nil
}

// Migrate applies the store's own line and then every given line, in
// order. Each version runs in its own transaction together with its record
// in store_migrations (line, version, name, checksum, applied_at). A
// version already recorded is skipped, unless its file changed, which is
// ErrMigrationChanged. On PostgreSQL the whole run holds an advisory lock,
// so processes starting together apply each version once.
func (db *DB) Migrate(ctx context.Context, lines ...Migrations) error {
	return db.WithLock(ctx, "tenantkit.migrate", func() error {
		if _, err := db.Exec(ctx, `CREATE TABLE IF NOT EXISTS store_migrations (
			line TEXT NOT NULL,
			version INTEGER NOT NULL,
			name TEXT NOT NULL,
			checksum TEXT NOT NULL,
			applied_at `+db.timestampType()+` NOT NULL,
			PRIMARY KEY (line, version))`); err != nil {
			return fmt.Errorf("store: create store_migrations: %w", err)
		}
		for _, line := range append([]Migrations{Own}, lines...) {
			if err := db.migrateLine(ctx, line); err != nil {
				return err
			}
		}
		return nil
	})
}

// Pending returns the migrations of lines (and the store's own) that are
// not applied, as "line version name", in order: empty when the schema is
// current. A database never migrated has every migration pending. It
// takes no lock, so while another process migrates it reports what that
// process has not committed yet (readiness checks use it).
func (db *DB) Pending(ctx context.Context, lines ...Migrations) ([]string, error) {
	applied := map[string]bool{}
	rows, err := db.Query(ctx, `SELECT line, version FROM store_migrations`)
	switch {
	case err == nil:
		for rows.Next() {
			var line string
			var version int
			if err := rows.Scan(&line, &version); err != nil {
				rows.Close()
				return nil, err
			}
			applied[line+"/"+strconv.Itoa(version)] = true
		}
		if err := errors.Join(rows.Err(), rows.Close()); err != nil {
			return nil, err
		}
	case !db.tableMissing(err):
		return nil, err
	}
	var pending []string
	for _, line := range append([]Migrations{Own}, lines...) {
		migrations, err := line.Load(db.dialect.Name())
		if err != nil {
			return nil, err
		}
		for _, m := range migrations {
			if !applied[line.Line+"/"+strconv.Itoa(m.Version)] {
				pending = append(pending, fmt.Sprintf("%s %d %s", line.Line, m.Version, m.Name))
			}
		}
	}
	return pending, nil
}

// tableMissing reports whether err is a query's on a table that does not
// exist.
func (db *DB) tableMissing(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "no such table") || strings.Contains(msg, "SQLSTATE 42P01")
}

func (db *DB) timestampType() string {
	if db.dialect.Name() == "postgres" {
		return "TIMESTAMPTZ"
	}
	return "TIMESTAMP"
}

func (db *DB) migrateLine(ctx context.Context, line Migrations) error {
	migrations, err := line.Load(db.dialect.Name())
	if err != nil {
		return err
	}
	for _, m := range migrations {
		err := db.Tx(ctx, func(tx *Tx) error {
			var checksum string
			err := tx.QueryRow(ctx, `SELECT checksum FROM store_migrations WHERE line = $1 AND version = $2`,
				line.Line, m.Version).Scan(&checksum)
			switch {
			case err == nil && checksum == m.Checksum:
				return nil
			case err == nil:
				return fmt.Errorf("%w: %s version %d (%s)", ErrMigrationChanged, line.Line, m.Version, m.Name)
			case !errors.Is(err, ErrNotFound):
				return err
			}
			if _, err := tx.Exec(ctx, m.SQL); err != nil {
				return fmt.Errorf("store: apply %s version %d (%s): %w", line.Line, m.Version, m.Name, err)
			}
			_, err = tx.Exec(ctx, `INSERT INTO store_migrations (line, version, name, checksum, applied_at)
				VALUES ($1, $2, $3, $4, $5)`, line.Line, m.Version, m.Name, m.Checksum, tx.Now())
			return err
		})
		if err != nil {
			return err
		}
	}
	return nil
}
