package apikit

import (
	"time"
)

// RateLimit is a route's own limit: Points requests per Duration, keyed by
// client address (see ratelimit.ClientIP) or, with PerTenant, by the
// caller's tenant. It runs after authorization, before the handler, and a
// refusal answers 429 (ratelimit.WriteLimited).
type RateLimit struct {
	Points        int
	Duration      time.Duration
	BlockDuration time.Duration
	// KeyPrefix names the limit's counters; routes sharing a prefix share
	// counters.
	KeyPrefix string
	// PerTenant keys the limit by the caller's tenant (a "per tenant"
	// limit); a caller without a tenant is keyed by address.
	PerTenant bool
	// ByPathValue, when set, counts separately for each value of that path
	// wildcard (an inbound endpoint), and within it by client.
	ByPathValue string
}
