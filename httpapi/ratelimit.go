package httpapi

import (
	"net/http"

	"github.com/tenantkit/tenantkit/httpapi/internal/apikit"
	"github.com/tenantkit/tenantkit/identity"
	"github.com/tenantkit/tenantkit/ratelimit"
)

// checkRouteLimit applies a route's limit, if it has one.
func (a *api) checkRouteLimit(r *http.Request, limit *apikit.RateLimit) error {
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
