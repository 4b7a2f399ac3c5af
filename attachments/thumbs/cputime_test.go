package thumbs

import (
	"testing"

	"github.com/tenantkit/tenantkit/internal/testing/cputime"
)

// cpuMeter reports CPU time per operation ("cpu-ns/op") next to the
// wall-clock ns/op: on a shared, busy machine the wall clock also counts
// time spent waiting for a core, the CPU time does not. Where the
// platform does not tell the CPU time, it reports nothing.
func cpuMeter(b *testing.B) func() {
	start := cputime.Process()
	return func() {
		if b.N > 0 && start != 0 {
			b.ReportMetric(float64(cputime.Process()-start)/float64(b.N), "cpu-ns/op")
		}
	}
}
