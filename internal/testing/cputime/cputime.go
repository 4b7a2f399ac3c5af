// Package cputime reads the CPU time the process has used, for
// benchmarks that report CPU per operation (cpu-µs/op) beside wall-clock
// time: on a machine shared with other work, wall-clock time per
// operation measures the machine, CPU time the code.
package cputime

import "time"

// Process is the CPU time (user and system, every thread) this process
// has used, or 0 where the platform does not tell (no figure is then
// reported).
func Process() time.Duration { return process() }

// PerOp reports the CPU this process used since start, divided by b.N,
// as the benchmark metric cpu-µs/op; it reports nothing where Process is
// 0.
func PerOp(b interface {
	ReportMetric(float64, string)
}, start time.Duration, n int) {
	if start == 0 {
		return
	}
	b.ReportMetric(float64((Process()-start).Nanoseconds())/1e3/float64(n), "cpu-µs/op")
}
