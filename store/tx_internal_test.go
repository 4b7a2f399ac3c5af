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
