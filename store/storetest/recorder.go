package storetest

import (
	"context"
	"strings"
	"sync"

	"github.com/tenantkit/tenantkit/store"
)

// Statement is a statement a store sent (with a marked context, or
// through a Recorder): its text and its arguments, for a test that
// examines how the engine runs it (EXPLAIN).
type Statement struct {
	// SQL is the statement's text, as the store sent it.
	SQL string
	// Args are its arguments, in order ($1 first).
	Args []any
}

// Recorder is a store.Querier that keeps the reads run through it (the
// statements that begin with SELECT or WITH), with their arguments, for
// tests that read their plans (SQLitePlan). Pass it where a store takes
// a Querier.
type Recorder struct {
	store.Querier
	mu    sync.Mutex
	reads []Statement
}

// Reads returns the reads run so far, in order.
func (r *Recorder) Reads() []Statement {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Statement(nil), r.reads...)
}

func (r *Recorder) keep(sql string, args []any) {
	s := strings.TrimSpace(sql)
	if !strings.HasPrefix(s, "SELECT") && !strings.HasPrefix(s, "WITH") {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reads = append(r.reads, Statement{SQL: sql, Args: args})
}

// Query implements store.Querier.
func (r *Recorder) Query(ctx context.Context, sql string, args ...any) (store.Rows, error) {
	r.keep(sql, args)
	return r.Querier.Query(ctx, sql, args...)
}

// QueryRow implements store.Querier.
func (r *Recorder) QueryRow(ctx context.Context, sql string, args ...any) store.Row {
	r.keep(sql, args)
	return r.Querier.QueryRow(ctx, sql, args...)
}
