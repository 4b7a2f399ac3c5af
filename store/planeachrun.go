package store

// PlanEachRun, given as the first argument of a read outside a
// transaction (DB.Query, DB.QueryRow), has PostgreSQL plan the statement
// for its values on every run instead of keeping a plan for its text.
//
// PostgreSQL plans a statement it has prepared for its values on its
// first five runs, and may then keep a generic plan, made without them,
// when that costs about as much on average. For a statement whose right
// plan depends on a value (a tag carried by a hundred rows or by half the
// table), the kept plan suits the common values and reads as many rows
// for a rare one: on PostgreSQL the attachments library filtered by two
// tags read a tag of 1,000 attachments among 1,000,000 in 191 ms with it,
// 24 ms with its own plan. The statement then runs as an unnamed one
// (pgx's QueryExecModeCacheDescribe: still one round trip), planned at
// every run, which costs that planning (tenths of a millisecond).
//
// SQLite plans each statement once with no regard to values, and drops
// it; so do transactions (whose statements are pipelined) and Exec.
var PlanEachRun planEachRun

type planEachRun struct{}

// withoutPlanEachRun returns args without a leading PlanEachRun, and
// whether they had one.
func withoutPlanEachRun(args []any) ([]any, bool) {
	if len(args) > 0 {
		if _, ok := args[0].(planEachRun); ok {
			return args[1:], true
		}
	}
	return args, false
}
