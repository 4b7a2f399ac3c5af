package httpapi

import (
	"net/http"
	"strings"

	"github.com/tenantkit/tenantkit/identity"
)

// serviceAuthenticator is the Authenticator of Options.Auth: it reads the
// request's credential and selection cookies and hands them to the
// identity service.
type serviceAuthenticator struct{ svc *identity.Service }

// Authenticate reads the credential (X-Api-Key, Authorization: ApiKey
// <key>, or Authorization: Bearer <key or session token>) and the
// selection cookies (identity.SelectedTenantCookie for super admins,
// identity.SelectedOrganizationCookie).
func (a serviceAuthenticator) Authenticate(r *http.Request) (*identity.Identity, error) {
	cred := credential(r)
	if cred.Secret == "" {
		return nil, nil
	}
	return a.svc.Authenticate(r.Context(), cred, identity.Selection{
		TenantID:       cookieValue(r, identity.SelectedTenantCookie),
		OrganizationID: cookieValue(r, identity.SelectedOrganizationCookie),
	})
}

func credential(r *http.Request) identity.Credential {
	if k := strings.TrimSpace(r.Header.Get("X-Api-Key")); k != "" {
		return identity.Credential{Secret: k}
	}
	scheme, value, _ := strings.Cut(strings.TrimSpace(r.Header.Get("Authorization")), " ")
	value = strings.TrimSpace(value)
	switch {
	case strings.EqualFold(scheme, "ApiKey"):
		return identity.Credential{Secret: value}
	case strings.EqualFold(scheme, "Bearer"):
		return identity.Credential{Secret: value, Bearer: true}
	}
	return identity.Credential{}
}

// cookieValue is the value of the named cookie, "" without one.
func cookieValue(r *http.Request, name string) string {
	c, err := r.Cookie(name)
	if err != nil {
		return ""
	}
	return c.Value
}
