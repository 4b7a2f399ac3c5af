package store

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
)

func TestTxRetriesTransientConflicts(t *testing.T) {
	t.Parallel()
	db, err := Open(t.Context(), "sqlite:"+filepath.Join(t.TempDir(), "x.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()

	attempts := 0
	committed := 0
	err = db.Tx(t.Context(), func(tx *Tx) error {
		attempts++
		tx.AfterCommit(func() { committed++ })
		if attempts < 3 {
			return withKind(errRetryable, errors.New("database is locked"))
		}
		return nil
	})
	if err != nil || attempts != 3 || committed != 1 {
		t.Fatalf("err=%v attempts=%d committed=%d, want nil 3 1", err, attempts, committed)
	}

	attempts = 0
	err = db.Tx(t.Context(), func(tx *Tx) error {
		attempts++
		return withKind(errRetryable, errors.New("still locked"))
	})
	if !errors.Is(err, errRetryable) || attempts != maxTxAttempts {
		t.Fatalf("err=%v attempts=%d, want retryable after %d", err, attempts, maxTxAttempts)
	}

	attempts = 0
	_ = db.Tx(t.Context(), func(tx *Tx) error {
		attempts++
		return errors.New("permanent")
	})
	if attempts != 1 {
		t.Fatalf("a permanent error was retried: attempts=%d", attempts)
	}

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := db.Tx(ctx, func(tx *Tx) error { return nil }); err == nil {
		t.Fatal("Tx on a cancelled context succeeded")
	}
}

func TestAfterCommitOnce(t *testing.T) {
	t.Parallel()
	db, err := Open(t.Context(), "sqlite:"+filepath.Join(t.TempDir(), "x.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var ran []string
	attempts := 0
	err = db.Tx(t.Context(), func(tx *Tx) error {
		attempts++
		tx.AfterCommitOnce("a", func() { ran = append(ran, "a1") })
		tx.AfterCommitOnce("a", func() { ran = append(ran, "a2") }) // dropped: "a" is taken
		tx.AfterCommitOnce("b", func() { ran = append(ran, "b") })
		if attempts == 1 { // a retried attempt starts with no keys
			return withKind(errRetryable, errors.New("database is locked"))
		}
		return nil
	})
	if err != nil || len(ran) != 2 || ran[0] != "a1" || ran[1] != "b" {
		t.Fatalf("err=%v ran=%v, want [a1 b]", err, ran)
	}
	_ = db.Tx(t.Context(), func(tx *Tx) error {
		tx.AfterCommitOnce("a", func() { ran = append(ran, "rolled back") })
		return errors.New("roll back")
	})
	if len(ran) != 2 {
		t.Fatalf("a rolled-back transaction ran %v", ran[2:])
	}
}

func TestBeforeCommit(t *testing.T) {
	t.Parallel()
	db, err := Open(t.Context(), "sqlite:"+filepath.Join(t.TempDir(), "x.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(t.Context(), `CREATE TABLE t (v TEXT)`); err != nil {
		t.Fatal(err)
	}
	count := func() (n int) {
		if err := db.QueryRow(t.Context(), `SELECT COUNT(*) FROM t`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	// The hooks run in the transaction, in order, after its function; a
	// hook may register another.
	var order []string
	err = db.Tx(t.Context(), func(tx *Tx) error {
		tx.BeforeCommit(func(ctx context.Context) error {
			order = append(order, "first")
			tx.BeforeCommit(func(context.Context) error { order = append(order, "added"); return nil })
			_, err := tx.Exec(ctx, `INSERT INTO t VALUES ('hook')`)
			return err
		})
		tx.BeforeCommit(func(context.Context) error { order = append(order, "second"); return nil })
		order = append(order, "fn")
		return nil
	})
	if err != nil || len(order) != 4 || order[0] != "fn" || order[1] != "first" || order[2] != "second" || order[3] != "added" || count() != 1 {
		t.Fatalf("err=%v order=%v rows=%d, want fn first second added, 1 row", err, order, count())
	}
	// A hook's error rolls the whole transaction back.
	err = db.Tx(t.Context(), func(tx *Tx) error {
		if _, err := tx.Exec(t.Context(), `INSERT INTO t VALUES ('fn')`); err != nil {
			return err
		}
		tx.BeforeCommit(func(context.Context) error { return errors.New("hook failed") })
		return nil
	})
	if err == nil || count() != 1 {
		t.Fatalf("err=%v rows=%d, want the hook's error and the row rolled back", err, count())
	}
	// A failing function runs no hook.
	ran := false
	_ = db.Tx(t.Context(), func(tx *Tx) error {
		tx.BeforeCommit(func(context.Context) error { ran = true; return nil })
		return errors.New("fn failed")
	})
	if ran {
		t.Fatal("a hook ran for a transaction whose function failed")
	}
}
