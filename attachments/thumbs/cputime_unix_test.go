//go:build unix

package thumbs

import (
	"syscall"
	"testing"
	"time"
)

// processCPU returns the process's user+system CPU time so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// cpuMeter reports CPU time per operation ("cpu-ns/op") next to the
// wall-clock ns/op: on a shared, busy machine the wall clock also counts
// time spent waiting for a core, the CPU time does not.
func cpuMeter(b *testing.B) func() {
	start := processCPU()
	return func() {
		if b.N > 0 {
			b.ReportMetric(float64(processCPU()-start)/float64(b.N), "cpu-ns/op")
		}
	}
}
