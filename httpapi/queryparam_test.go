package httpapi

import (
	"net/url"
	"testing"

	"github.com/tenantkit/tenantkit/httpapi/internal/apikit"
)

// queryParam answers what URL.Query().Get answers.
func TestQueryParam(t *testing.T) {
	for _, raw := range []string{
		"", "identifier=a", "identifier=", "identifier", "x=1&identifier=b&identifier=c", "identifier=a%20b+c",
		"identifier=%zz&identifier=ok", "identifier=a;b&identifier=c", "id%65ntifier=esc", "&&identifier=d&",
		"identifier%=x&identifier=y", "identifierx=1", "x=identifier", "identifier=%E2%82%AC", "a=1;identifier=2",
	} {
		u := &url.URL{RawQuery: raw}
		if got, want := apikit.QueryParam(u, "identifier"), u.Query().Get("identifier"); got != want {
			t.Errorf("%q: queryParam %q, Query().Get %q", raw, got, want)
		}
	}
}
