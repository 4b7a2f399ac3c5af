package httpapi

import (
	"net/http"
	"time"

	"github.com/tenantkit/tenantkit/identity"
	"github.com/tenantkit/tenantkit/ratelimit"
)

// rateLimit is a route's own limit: Points requests per Duration, keyed by
// client address (see ratelimit.ClientIP) or, with PerTenant, by the
// caller's tenant. It runs after authorization, before the handler, and a
// refusal answers 429 (ratelimit.WriteLimited).
type rateLimit struct {
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

// checkRouteLimit applies a route's limit, if it has one.
func (a *api) checkRouteLimit(r *http.Request, limit *rateLimit) error {
	if limit == nil || !a.opts.RateLimit.Enabled() {
		return nil
	}
	subject := a.opts.RateLimit.ClientKey(r)
	if id := identity.IdentityFrom(r.Context()); limit.PerTenant && id != nil && id.TenantID != "" {
		subject = "tenant:" + id.TenantID
	}
	if limit.ByPathValue != "" {
		subject = r.PathValue(limit.ByPathValue) + ":" + subject
	}
	rule := ratelimit.Rule{Points: limit.Points, Duration: limit.Duration, BlockDuration: limit.BlockDuration}
	return a.opts.RateLimit.Check(r.Context(), rule, limit.KeyPrefix, subject)
}
