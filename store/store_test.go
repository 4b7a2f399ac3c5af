package store_test

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/matryer/is"

	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

//go:embed testdata/migrations
var testFS embed.FS

var widgets = store.Migrations{Line: "storetest", FS: testFS, Dir: "testdata/migrations"}

type widget struct {
	ID        string
	Name      string
	Enabled   bool
	Data      json.RawMessage
	Note      *string
	CreatedAt time.Time
}

func scanWidget(s store.Scanner) (widget, error) {
	var w widget
	var data []byte
	err := s.Scan(&w.ID, &w.Name, &w.Enabled, &data, &w.Note, &w.CreatedAt)
	w.Data = data
	return w, err
}

func insertWidget(ctx context.Context, q store.Querier, sc store.Scope, name string, parent any) (string, error) {
	id := store.NewID()
	_, err := q.Exec(ctx, `INSERT INTO widgets (tenant_id, id, name, enabled, data, parent_id, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7)`, sc.TenantID, id, name, true, `{"size":3,"tags":["a"]}`, parent, q.Now())
	return id, err
}

func TestRoundTrip(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		ctx, sc := storetest.NewScope(t)
		var id string
		var created time.Time
		err := db.Tx(ctx, func(tx *store.Tx) error {
			created = tx.Now()
			var err error
			id, err = insertWidget(ctx, tx, sc, "Ä widget", nil)
			return err
		})
		is.NoErr(err)

		w, err := store.One(ctx, db, scanWidget, `SELECT id, name, enabled, data, note, created_at FROM widgets WHERE tenant_id = $1 AND id = $2`, sc.TenantID, id)
		is.NoErr(err)
		is.Equal(w.Name, "Ä widget")
		is.True(w.Enabled)
		is.True(w.Note == nil)
		is.Equal(w.CreatedAt, created) // microsecond precision survives the round trip
		is.Equal(w.CreatedAt.Location(), time.UTC)
		var data map[string]any
		is.NoErr(json.Unmarshal(w.Data, &data))
		is.Equal(data["size"], float64(3))

		var size string
		is.NoErr(db.QueryRow(ctx, `SELECT `+db.Dialect().JSONText("data", "size")+` FROM widgets WHERE tenant_id = $1`, sc.TenantID).Scan(&size))
		is.Equal(size, "3")
	}, widgets)
}

func TestErrorKinds(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx, sc := storetest.NewScope(t)
		_, err := insertWidget(ctx, db, sc, "one", nil)
		if err != nil {
			t.Fatal(err)
		}
		tests := []struct {
			name string
			run  func() error
			want error
		}{
			{"missing row", func() error {
				_, err := store.One(ctx, db, scanWidget, `SELECT id, name, enabled, data, note, created_at FROM widgets WHERE tenant_id = $1 AND id = $2`, sc.TenantID, "nope")
				return err
			}, store.ErrNotFound},
			{"duplicate", func() error { _, err := insertWidget(ctx, db, sc, "one", nil); return err }, store.ErrConflict},
			{"foreign key", func() error { _, err := insertWidget(ctx, db, sc, "two", "missing-parent"); return err }, store.ErrInvalid},
			{"check", func() error { _, err := insertWidget(ctx, db, sc, "", nil); return err }, store.ErrInvalid},
			{"not null", func() error {
				_, err := db.Exec(ctx, `INSERT INTO widgets (tenant_id, id, name, created_at) VALUES ($1, $2, NULL, $3)`, sc.TenantID, store.NewID(), db.Now())
				return err
			}, store.ErrInvalid},
			{"exec one on nothing", func() error {
				return store.ExecOne(ctx, db, `UPDATE widgets SET note = 'x' WHERE tenant_id = $1 AND id = $2`, sc.TenantID, "nope")
			}, store.ErrNotFound},
		}
		for _, tt := range tests {
			err := tt.run()
			if !errors.Is(err, tt.want) {
				t.Errorf("%s: err = %v, want %v", tt.name, err, tt.want)
			}
		}
	}, widgets)
}

func TestTxRollsBack(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		ctx, sc := storetest.NewScope(t)
		boom := errors.New("boom")
		err := db.Tx(ctx, func(tx *store.Tx) error {
			if _, err := insertWidget(ctx, tx, sc, "rolled back", nil); err != nil {
				return err
			}
			return boom
		})
		is.True(errors.Is(err, boom))

		func() {
			defer func() { is.Equal(recover(), "panic in tx") }()
			_ = db.Tx(ctx, func(tx *store.Tx) error {
				if _, err := insertWidget(ctx, tx, sc, "panicked", nil); err != nil {
					return err
				}
				panic("panic in tx")
			})
		}()

		var n int
		is.NoErr(db.QueryRow(ctx, `SELECT count(*) FROM widgets WHERE tenant_id = $1`, sc.TenantID).Scan(&n))
		is.Equal(n, 0)
	}, widgets)
}

func TestTxNowIsFixed(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		ctx := t.Context()
		_ = db.Tx(ctx, func(tx *store.Tx) error {
			first := tx.Now()
			time.Sleep(2 * time.Millisecond)
			is.Equal(tx.Now(), first)
			is.Equal(first, first.Truncate(time.Microsecond))
			is.Equal(first.Location(), time.UTC)
			return nil
		})
	}, widgets)
}

func TestEventsCommitAndRollback(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		ctx, sc := storetest.NewScope(t)

		var committed store.Event
		err := db.Tx(ctx, func(tx *store.Tx) error {
			if _, err := insertWidget(ctx, tx, sc, "w", nil); err != nil {
				return err
			}
			var err error
			committed, err = tx.EmitData(ctx, "storetest.widget.created", sc, map[string]string{"name": "w"})
			return err
		})
		is.NoErr(err)
		is.True(committed.ID != "")

		_ = db.Tx(ctx, func(tx *store.Tx) error {
			if _, err := tx.EmitData(ctx, "storetest.widget.deleted", sc, nil); err != nil {
				return err
			}
			return errors.New("roll back")
		})

		events, err := store.ListEvents(ctx, db, store.EventFilter{TenantID: sc.TenantID})
		is.NoErr(err)
		is.Equal(len(events), 1) // the rolled-back event is gone
		is.Equal(events[0].ID, committed.ID)
		is.Equal(events[0].Type, "storetest.widget.created")
		is.Equal(events[0].OrganizationID, sc.OrganizationID)
		is.Equal(events[0].OccurredAt, committed.OccurredAt)
		var data map[string]string
		is.NoErr(json.Unmarshal(events[0].Data, &data))
		is.Equal(data["name"], "w")

		other, err := store.ListEvents(ctx, db, store.EventFilter{TenantID: store.NewID()})
		is.NoErr(err)
		is.Equal(len(other), 0)
	}, widgets)
}

func TestEmitHookAndCommitListener(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		ctx, sc := storetest.NewScope(t)
		hookErr := errors.New("hook refused")
		var mu sync.Mutex
		var hooked, committed []string
		db.OnEmit(func(ctx context.Context, tx *store.Tx, ev store.Event) error {
			if ev.Type == "storetest.refused" {
				return hookErr
			}
			mu.Lock()
			hooked = append(hooked, ev.Type)
			mu.Unlock()
			return nil
		})
		db.OnCommit(func(ctx context.Context, events []store.Event) {
			mu.Lock()
			for _, ev := range events {
				committed = append(committed, ev.Type)
			}
			mu.Unlock()
		})

		is.NoErr(db.Tx(ctx, func(tx *store.Tx) error {
			_, err := tx.EmitData(ctx, "storetest.ok", sc, nil)
			return err
		}))
		err := db.Tx(ctx, func(tx *store.Tx) error {
			_, err := tx.EmitData(ctx, "storetest.refused", sc, nil)
			return err
		})
		is.True(errors.Is(err, hookErr))
		_ = db.Tx(ctx, func(tx *store.Tx) error {
			if _, err := tx.EmitData(ctx, "storetest.rolledback", sc, nil); err != nil {
				return err
			}
			return errors.New("no")
		})

		mu.Lock()
		defer mu.Unlock()
		is.Equal(committed, []string{"storetest.ok"})
		is.Equal(hooked, []string{"storetest.ok", "storetest.rolledback"}) // hooks run inside the tx; their writes roll back with it
		events, err := store.ListEvents(ctx, db, store.EventFilter{TenantID: sc.TenantID})
		is.NoErr(err)
		is.Equal(len(events), 1)
	}, widgets)
}

// EmitMany writes every event (across multi-row INSERT chunks: 50, 20,
// 10, 5, 2 and 1; on PostgreSQL several events are one statement), fills in ids
// and times, runs the hooks for each in order and hands all to the commit
// listeners, each stored as given (its organization or none) at positions
// in emit order; a refused or invalid event writes none of them.
func TestEmitMany(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		ctx, sc := storetest.NewScope(t)
		var mu sync.Mutex
		var hooked, committed []string
		db.OnEmit(func(ctx context.Context, tx *store.Tx, ev store.Event) error {
			if ev.Type == "storetest.refused" {
				return errors.New("hook refused")
			}
			mu.Lock()
			hooked = append(hooked, string(ev.Data))
			mu.Unlock()
			return nil
		})
		db.OnCommit(func(ctx context.Context, events []store.Event) {
			mu.Lock()
			for _, ev := range events {
				committed = append(committed, string(ev.Data))
			}
			mu.Unlock()
		})
		db.PrepareEmitMany(ctx)
		var want []string
		evs := make([]store.Event, 61)
		for i := range evs {
			data := fmt.Sprintf(`{"n":%d}`, i)
			want = append(want, data)
			evs[i] = store.Event{Type: "storetest.many", TenantID: sc.TenantID, Data: json.RawMessage(data)}
			if i%2 == 1 {
				evs[i].OrganizationID = sc.OrganizationID
			}
		}
		var out []store.Event
		is.NoErr(db.Tx(ctx, func(tx *store.Tx) error {
			var err error
			out, err = tx.EmitMany(ctx, evs)
			return err
		}))
		is.Equal(len(out), 61)
		for _, ev := range out {
			is.True(ev.ID != "")
			is.True(!ev.OccurredAt.IsZero())
		}
		mu.Lock()
		is.Equal(hooked, want)
		is.Equal(committed, want)
		mu.Unlock()
		stored, err := store.ListEvents(ctx, db, store.EventFilter{TenantID: sc.TenantID, Limit: 100})
		is.NoErr(err)
		is.Equal(len(stored), 61)
		is.Equal(stored[0].ID, out[0].ID)
		for i, ev := range stored {
			is.Equal(ev.ID, out[i].ID)
			is.Equal(ev.Type, "storetest.many")
			is.Equal(ev.TenantID, sc.TenantID)
			is.Equal(ev.OrganizationID, out[i].OrganizationID)
			var got struct{ N int }
			is.NoErr(json.Unmarshal(ev.Data, &got))
			is.Equal(got.N, i)
		}
		// Positions in emit order (read from the table: ReadEventLog holds
		// events back while other transactions of the server run).
		byPosition, err := store.Many(ctx, db, func(s store.Scanner) (id string, err error) { return id, s.Scan(&id) },
			`SELECT id FROM store_events WHERE tenant_id = $1 ORDER BY tx, seq`, sc.TenantID)
		is.NoErr(err)
		is.Equal(len(byPosition), 61)
		for i, id := range byPosition {
			is.Equal(id, out[i].ID)
		}

		// A refused or invalid event among many: none is written.
		largeBad := func(bad store.Event) []store.Event {
			evs := make([]store.Event, 61)
			for i := range evs {
				evs[i] = store.Event{Type: "storetest.many", TenantID: sc.TenantID}
			}
			evs[40] = bad
			return evs
		}

		for _, bad := range [][]store.Event{
			{{Type: "storetest.many", TenantID: sc.TenantID}, {Type: "storetest.refused", TenantID: sc.TenantID}},
			{{Type: "storetest.many", TenantID: sc.TenantID}, {Type: "", TenantID: sc.TenantID}},
			{{Type: "storetest.many", TenantID: sc.TenantID}, {Type: "storetest.many", TenantID: sc.TenantID, Data: json.RawMessage("{")}},
			largeBad(store.Event{Type: "storetest.refused", TenantID: sc.TenantID}),
			largeBad(store.Event{Type: "", TenantID: sc.TenantID}),
			largeBad(store.Event{Type: "storetest.many", TenantID: sc.TenantID, Data: json.RawMessage("{")}),
		} {
			err := db.Tx(ctx, func(tx *store.Tx) error {
				_, err := tx.EmitMany(ctx, bad)
				return err
			})
			is.True(err != nil)
		}
		stored, err = store.ListEvents(ctx, db, store.EventFilter{TenantID: sc.TenantID, Limit: 100})
		is.NoErr(err)
		is.Equal(len(stored), 61) // nothing from the refused batches
	}, widgets)
}

func TestContainsFoldNonASCII(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		ctx, sc := storetest.NewScope(t)
		for _, name := range []string{"ÄRGER im Büro", "Crème Brûlée", "plain 100%", "under_score"} {
			_, err := insertWidget(ctx, db, sc, name, nil)
			is.NoErr(err)
		}
		search := func(term string) []string {
			w := store.Where("tenant_id = ?", sc.TenantID)
			w.And(db.Dialect().ContainsFold("name", w.Add(store.LikeContains(term))))
			rows, err := store.Many(ctx, db, scanWidget, `SELECT id, name, enabled, data, note, created_at FROM widgets WHERE `+w.SQL()+` ORDER BY name`, w.Values()...)
			is.NoErr(err)
			var names []string
			for _, r := range rows {
				names = append(names, r.Name)
			}
			return names
		}
		is.Equal(search("ärger"), []string{"ÄRGER im Büro"})
		is.Equal(search("BÜRO"), []string{"ÄRGER im Büro"})
		is.Equal(search("CRÈME"), []string{"Crème Brûlée"})
		is.Equal(search("0%"), []string{"plain 100%"}) // % is literal
		is.Equal(search("ärger_im"), []string(nil))    // _ is literal, not a wildcard
	}, widgets)
}

func TestMigrations(t *testing.T) {
	t.Parallel()
	storetest.EachURL(t, func(t *testing.T, url string) {
		is := is.New(t)
		ctx := t.Context()
		open := func() *store.DB {
			db, err := store.Open(ctx, url, nil)
			is.NoErr(err)
			t.Cleanup(func() { db.Close() })
			return db
		}
		line := func(sql string) store.Migrations {
			return store.Migrations{Line: "m", FS: fstest.MapFS{
				"sqlite/0001_things.sql":   {Data: []byte(sql)},
				"postgres/0001_things.sql": {Data: []byte(sql)},
			}}
		}
		v1 := line("CREATE TABLE things (id TEXT PRIMARY KEY);")

		// Several processes migrating at once apply each version once.
		var wg sync.WaitGroup
		errs := make([]error, 4)
		for i := range errs {
			db := open()
			wg.Go(func() { errs[i] = db.Migrate(ctx, v1) })
		}
		wg.Wait()
		for _, err := range errs {
			is.NoErr(err)
		}

		db := open()
		is.NoErr(db.Migrate(ctx, v1)) // idempotent
		var n int
		is.NoErr(db.QueryRow(ctx, `SELECT count(*) FROM store_migrations WHERE line = 'm'`).Scan(&n))
		is.Equal(n, 1)

		err := db.Migrate(ctx, line("CREATE TABLE things (id TEXT PRIMARY KEY, x TEXT);"))
		is.True(errors.Is(err, store.ErrMigrationChanged))

		v2 := store.Migrations{Line: "m", FS: fstest.MapFS{
			"sqlite/0001_things.sql":   {Data: []byte("CREATE TABLE things (id TEXT PRIMARY KEY);")},
			"postgres/0001_things.sql": {Data: []byte("CREATE TABLE things (id TEXT PRIMARY KEY);")},
			"sqlite/0002_bad.sql":      {Data: []byte("CREATE TABLE more (id TEXT PRIMARY KEY); INSERT INTO nowhere VALUES (1);")},
			"postgres/0002_bad.sql":    {Data: []byte("CREATE TABLE more (id TEXT PRIMARY KEY); INSERT INTO nowhere VALUES (1);")},
		}}
		is.True(db.Migrate(ctx, v2) != nil)
		// The failed version left nothing behind: its DDL rolled back with it.
		_, err = db.Exec(ctx, `INSERT INTO more (id) VALUES ('x')`)
		is.True(err != nil)
	})
}

func TestPending(t *testing.T) {
	t.Parallel()
	storetest.EachURL(t, func(t *testing.T, url string) {
		is := is.New(t)
		ctx := t.Context()
		db, err := store.Open(ctx, url, nil)
		is.NoErr(err)
		t.Cleanup(func() { db.Close() })
		v2 := store.Migrations{Line: "m", FS: fstest.MapFS{
			"sqlite/0001_things.sql":   {Data: []byte("CREATE TABLE things (id TEXT PRIMARY KEY);")},
			"postgres/0001_things.sql": {Data: []byte("CREATE TABLE things (id TEXT PRIMARY KEY);")},
			"sqlite/0002_more.sql":     {Data: []byte("CREATE TABLE more (id TEXT PRIMARY KEY);")},
			"postgres/0002_more.sql":   {Data: []byte("CREATE TABLE more (id TEXT PRIMARY KEY);")},
		}}
		v1 := store.Migrations{Line: "m", FS: fstest.MapFS{
			"sqlite/0001_things.sql":   v2.FS.(fstest.MapFS)["sqlite/0001_things.sql"],
			"postgres/0001_things.sql": v2.FS.(fstest.MapFS)["postgres/0001_things.sql"],
		}}
		own, err := store.Own.Load(db.Dialect().Name())
		is.NoErr(err)

		// A database never migrated: everything is pending, the store's
		// own line first.
		pending, err := db.Pending(ctx, v2)
		is.NoErr(err)
		is.Equal(len(pending), len(own)+2)
		is.Equal(pending[len(pending)-2:], []string{"m 1 things", "m 2 more"})

		// An older binary migrated: the newer version is pending.
		is.NoErr(db.Migrate(ctx, v1))
		pending, err = db.Pending(ctx, v2)
		is.NoErr(err)
		is.Equal(pending, []string{"m 2 more"})

		is.NoErr(db.Migrate(ctx, v2))
		pending, err = db.Pending(ctx, v2)
		is.NoErr(err)
		is.Equal(len(pending), 0)
	})
}

func TestMigrationParity(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	for _, line := range []store.Migrations{store.Own, widgets} {
		lite, err := line.Load("sqlite")
		is.NoErr(err)
		pg, err := line.Load("postgres")
		is.NoErr(err)
		is.Equal(len(lite), len(pg))
		for i := range lite {
			is.Equal(lite[i].Version, pg[i].Version)
			is.Equal(lite[i].Name, pg[i].Name)
		}
	}
}

func TestScope(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	_, err := store.ScopeFrom(context.Background())
	is.True(errors.Is(err, store.ErrNoScope))
	_, err = store.ScopeFrom(store.WithScope(context.Background(), store.Scope{}))
	is.True(errors.Is(err, store.ErrNoScope))
	sc, err := store.ScopeFrom(store.WithScope(context.Background(), store.Scope{TenantID: "t"}))
	is.NoErr(err)
	is.Equal(sc.TenantID, "t")
	is.True(sc.AllowsOrganization("any"))
	is.True(!store.Scope{TenantID: "t", OrganizationIDs: []string{"a"}}.AllowsOrganization("b"))
}

func TestConds(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	w := store.Where("tenant_id = ?", "t1")
	w.And("(a = ? OR b = ?)", 1, 2)
	lim := w.Add(10)
	is.Equal(w.SQL(), "tenant_id = $1 AND (a = $2 OR b = $3)")
	is.Equal(lim, "$4")
	is.Equal(w.Values(), []any{"t1", 1, 2, 10})
}

func TestValidationError(t *testing.T) {
	t.Parallel()
	is := is.New(t)
	v := &store.ValidationError{}
	is.NoErr(v.Err())
	v.Add("name", "is required")
	v.Add("name", "second message is ignored")
	err := v.Err()
	is.True(errors.Is(err, store.ErrInvalid))
	var ve *store.ValidationError
	is.True(errors.As(err, &ve))
	is.Equal(ve.Fields["name"], "is required")
}

// A prepared statement runs in later write transactions like any other:
// same results, same error kinds, and rollbacks still undo it.
func TestPrepare(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		ctx, sc := storetest.NewScope(t)
		const insert = `INSERT INTO widgets (tenant_id, id, name, enabled, data, parent_id, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7)`
		is.NoErr(db.Prepare(ctx, insert))
		is.NoErr(db.Prepare(ctx, insert)) // again: a no-op
		id := store.NewID()
		for i := range 3 { // the statement is reused across transactions
			err := db.Tx(ctx, func(tx *store.Tx) error {
				_, err := tx.Exec(ctx, insert, sc.TenantID, store.NewID(), fmt.Sprint("w", i), true, `{}`, nil, tx.Now())
				return err
			})
			is.NoErr(err)
		}
		err := db.Tx(ctx, func(tx *store.Tx) error {
			if _, err := tx.Exec(ctx, insert, sc.TenantID, id, "x", true, `{}`, nil, tx.Now()); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, insert, sc.TenantID, id, "dup", true, `{}`, nil, tx.Now())
			return err
		})
		is.True(errors.Is(err, store.ErrConflict)) // classified as usual, and the transaction rolled back
		var n int
		is.NoErr(db.QueryRow(ctx, `SELECT count(*) FROM widgets WHERE tenant_id = $1`, sc.TenantID).Scan(&n))
		is.Equal(n, 3)
		if db.Dialect().Name() == "sqlite" { // PostgreSQL prepares nothing up front
			is.True(db.Prepare(ctx, `INSERT INTO no_such_table VALUES (1)`) != nil)
		}
	}, widgets)
}

// TestExecLater: a statement queued with Tx.ExecLater runs before the
// transaction's next statement and is committed with it; one that fails
// fails that statement (with its own error kind) or, queued last, the
// commit, and nothing of the transaction is kept.
func TestExecLater(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		is := is.New(t)
		ctx, sc := storetest.NewScope(t)
		insert := `INSERT INTO widgets (tenant_id, id, name, created_at) VALUES ($1, $2, $3, $4)`
		count := func() (n int) {
			is.NoErr(db.QueryRow(ctx, `SELECT count(*) FROM widgets WHERE tenant_id = $1`, sc.TenantID).Scan(&n))
			return n
		}

		// Queued, then read by the next statement, then committed.
		err := db.Tx(ctx, func(tx *store.Tx) error {
			is.NoErr(tx.ExecLater(ctx, insert, sc.TenantID, store.NewID(), "first", tx.Now()))
			is.NoErr(store.ExecLater(ctx, tx, insert, sc.TenantID, store.NewID(), "second", tx.Now()))
			var n int
			if err := tx.QueryRow(ctx, `SELECT count(*) FROM widgets WHERE tenant_id = $1`, sc.TenantID).Scan(&n); err != nil {
				return err
			}
			is.Equal(n, 2) // both ran, in order, before the read
			names, err := store.Many(ctx, tx, func(s store.Scanner) (string, error) {
				var name string
				return name, s.Scan(&name)
			}, `SELECT name FROM widgets WHERE tenant_id = $1 ORDER BY name`, sc.TenantID)
			is.Equal(names, []string{"first", "second"})
			return err
		})
		is.NoErr(err)
		is.Equal(count(), 2)

		// Queued last: sent with the commit.
		is.NoErr(db.Tx(ctx, func(tx *store.Tx) error {
			return tx.ExecLater(ctx, insert, sc.TenantID, store.NewID(), "third", tx.Now())
		}))
		is.Equal(count(), 3)

		// A queued statement that fails (where statements are queued:
		// elsewhere ExecLater returns its error) is the next statement's
		// error.
		var next error
		err = db.Tx(ctx, func(tx *store.Tx) error {
			is.NoErr(tx.ExecLater(ctx, insert, sc.TenantID, store.NewID(), "fourth", tx.Now()))
			if err := tx.ExecLater(ctx, insert, sc.TenantID, store.NewID(), "first", tx.Now()); err != nil { // name taken
				return err
			}
			_, next = tx.Exec(ctx, insert, sc.TenantID, store.NewID(), "fifth", tx.Now())
			is.True(errors.Is(next, store.ErrConflict))
			return next
		})
		is.True(errors.Is(err, store.ErrConflict))
		is.Equal(count(), 3) // fourth rolled back

		// ... and a Query's and a QueryRow's.
		err = db.Tx(ctx, func(tx *store.Tx) error {
			if err := tx.ExecLater(ctx, insert, sc.TenantID, store.NewID(), "second", tx.Now()); err != nil {
				return err
			}
			_, err := store.Many(ctx, tx, func(s store.Scanner) (int, error) { var n int; return n, s.Scan(&n) }, `SELECT 1`)
			return err
		})
		is.True(errors.Is(err, store.ErrConflict))
		err = db.Tx(ctx, func(tx *store.Tx) error {
			if err := tx.ExecLater(ctx, insert, sc.TenantID, store.NewID(), "", tx.Now()); err != nil { // check fails
				return err
			}
			var n int
			return tx.QueryRow(ctx, `SELECT 1`).Scan(&n)
		})
		is.True(errors.Is(err, store.ErrInvalid))

		// Queued last and failing: the commit fails, nothing is kept.
		err = db.Tx(ctx, func(tx *store.Tx) error {
			is.NoErr(tx.ExecLater(ctx, insert, sc.TenantID, store.NewID(), "sixth", tx.Now()))
			return tx.ExecLater(ctx, insert, sc.TenantID, store.NewID(), "third", tx.Now())
		})
		is.True(errors.Is(err, store.ErrConflict))
		is.Equal(count(), 3)
	}, widgets)
}
