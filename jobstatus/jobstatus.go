// Package jobstatus is the status of long-running work, shared by the
// areas that run it: a progress job (progress.Status) and a data sync run
// (datasync.Status) are this one type, so a run's status passes to its
// progress job as it is, and every status answers Terminal the same way.
//
// It is a package of its own, importing nothing, because an area never
// imports another: each area names the type through an alias of its own
// and re-exports the constants it uses.
//
// The values are the strings the HTTP API shows ("pending", "running",
// "completed", "failed", "cancelled"); they never change.
package jobstatus

// Status is where a piece of long-running work is: it starts pending,
// runs, and ends in one of the terminal statuses completed, failed or
// cancelled, after which it never changes again. An area may name further
// values of its own (a data sync run's "paused"), which are not terminal.
type Status string

// The statuses of long-running work.
const (
	// Pending: created, not begun.
	Pending Status = "pending"
	// Running: begun, not finished.
	Running Status = "running"
	// Completed: finished successfully.
	Completed Status = "completed"
	// Failed: finished with an error.
	Failed Status = "failed"
	// Cancelled: finished early after a cancellation.
	Cancelled Status = "cancelled"
)

// Terminal reports whether s is a terminal status (completed, failed or
// cancelled): work in such a status never changes again.
func (s Status) Terminal() bool {
	return s == Completed || s == Failed || s == Cancelled
}
