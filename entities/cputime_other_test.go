//go:build !unix

package entities_test

import "time"

// processCPU is 0 where getrusage is missing: no CPU figure is reported.
func processCPU() time.Duration { return 0 }
