package main

import (
	"os"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/tenantkit/tenantkit/store/storetest"
)

// TestAutovacuumPass: one pass vacuums and analyzes every table of the
// connection's schema and of the job engine's schema beside it, and no
// other schema's.
func TestAutovacuumPass(t *testing.T) {
	base := os.Getenv(storetest.PostgresEnv)
	if base == "" {
		t.Skip(storetest.PostgresEnv + " is not set")
	}
	schema, err := storetest.NewSchema(base, "vacuum")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = schema.Drop() })
	other, err := storetest.NewSchema(base, "vacuumother")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = other.Drop() })

	conn, err := pgx.Connect(t.Context(), schema.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(t.Context())
	river := pgx.Identifier{schema.Name + "_river"}.Sanitize()
	for _, sql := range []string{
		`CREATE TABLE items (id int PRIMARY KEY)`,
		`CREATE SCHEMA ` + river,
		`CREATE TABLE ` + river + `.jobs (id int PRIMARY KEY)`,
		`CREATE TABLE ` + pgx.Identifier{other.Name, "elsewhere"}.Sanitize() + ` (id int PRIMARY KEY)`,
	} {
		if _, err := conn.Exec(t.Context(), sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}

	if err := (autovacuum{logf: t.Logf}).pass(t.Context(), conn); err != nil {
		t.Fatal(err)
	}
	rows, err := conn.Query(t.Context(), `SELECT schemaname || '.' || relname FROM pg_stat_user_tables
		WHERE schemaname IN ($1, $2, $3) AND last_vacuum IS NOT NULL AND last_analyze IS NOT NULL ORDER BY 1`,
		schema.Name, schema.Name+"_river", other.Name)
	if err != nil {
		t.Fatal(err)
	}
	got, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	want := []string{schema.Name + ".items", schema.Name + "_river.jobs"}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("vacuumed and analyzed %v, want %v", got, want)
	}
}
