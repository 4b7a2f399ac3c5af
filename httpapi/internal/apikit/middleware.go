package apikit

import (
	"fmt"
	"net/http"

	"github.com/tenantkit/tenantkit/identity"
	"github.com/tenantkit/tenantkit/store"
)

// HandlerFunc is a handler that returns its error instead of writing it; the
// route's chain writes it with the route's error format.
type HandlerFunc func(w http.ResponseWriter, r *http.Request) error

// errNoCredential is the 401 of a request that carries no credential (as
// opposed to an invalid one).
var ErrNoCredential = fmt.Errorf("no credential: %w", identity.ErrUnauthenticated)

// ForbiddenError lists what the caller lacks for a route.
type ForbiddenError struct {
	Features []string
	Roles    []string
	// tenantScope: the route changes tenant-wide state and the caller's
	// access is limited to some organizations.
	TenantScope bool
}

func (e *ForbiddenError) Error() string { return "forbidden" }

func (e *ForbiddenError) Unwrap() error { return store.ErrForbidden }

// PublicMessage is the message of the error body.
func (e *ForbiddenError) PublicMessage() string {
	if e.TenantScope {
		return TenantScopeMessage
	}
	return "Forbidden"
}

// tenantScopeMessage explains the 403 of a TenantWide route.
const TenantScopeMessage = "This changes a setting of every organization of the tenant: " +
	"it needs access to the whole tenant, and yours is limited to some organizations"
