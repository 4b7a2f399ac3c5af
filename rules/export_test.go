package rules

import "github.com/tenantkit/tenantkit/internal/vcache"

// AcksOf returns s's acknowledgements of definitions changes (nil on
// SQLite), for tests that cut a Service off from notifications or wait for
// its lease.
func AcksOf(s *Service) *vcache.Acks { return s.plans.acks }
