package store

import "context"

// textsEngine is an engine, or a transaction's, that can run a statement
// whose parameters are already in the server's text form without copying
// them (ExecTexts): PostgreSQL's.
type textsEngine interface {
	execTexts(ctx context.Context, sql string, params [][]byte) (int64, error)
}

// ExecTexts runs a statement whose parameters are already written in
// PostgreSQL's text form (a nil one is NULL), as Exec does with the same
// values as strings, and returns the number of rows it affected. On
// PostgreSQL the bytes go to the server as they are, from the caller's
// buffer: Exec copies every argument into the driver's own buffer, which
// the driver cuts back after each statement, so a statement of tens of
// kilobytes of parameters (a batch of log rows) allocated them again at
// each call. params may be reused once ExecTexts returns. Elsewhere, and
// for a Querier that is neither a DB nor a Tx, it is Exec with each
// parameter as a string.
func ExecTexts(ctx context.Context, q Querier, sql string, params [][]byte) (int64, error) {
	var eng any
	var classify func(error) error
	switch q := q.(type) {
	case *DB:
		eng, classify = q.eng, q.dialect.Classify
	case *Tx:
		eng, classify = q.eng, q.db.dialect.Classify
	}
	if e, ok := eng.(textsEngine); ok {
		n, err := e.execTexts(ctx, sql, params)
		return n, classify(err)
	}
	return q.Exec(ctx, sql, textArgs(params)...)
}

// textArgs returns params as Exec's arguments: strings, or nil.
func textArgs(params [][]byte) []any {
	args := make([]any, len(params))
	for i, p := range params {
		if p != nil {
			args[i] = string(p)
		}
	}
	return args
}
