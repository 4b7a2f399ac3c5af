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
