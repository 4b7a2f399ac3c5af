// Command minimal is a host that uses two areas of tenantkit, feature
// toggles and business rules, and signs its callers in its own way: it
// opens a Kit with just those areas' modules (their tables, their jobs,
// their routes and nothing else: the other areas' code is not linked in,
// their tables not created) and mounts the API under /tk/ beside its own routes.
//
//	go run ./examples/embed/minimal
//	curl -H "X-Tenant: acme" http://localhost:8082/tk/business_rules/rules
//	curl -H "X-Tenant: acme" "http://localhost:8082/tk/feature_toggles/check/boolean?identifier=beta"
//	curl http://localhost:8082/tk/docs/openapi   # toggles and rules only
//
// The host trusts an X-Tenant header here to keep the example short; a real
// host reads its own session or token and maps it to a tenant.
package main

import (
	"cmp"
	"context"
	"log"
	"net/http"
	"os"

	"github.com/tenantkit/tenantkit"
	"github.com/tenantkit/tenantkit/httpapi"
	"github.com/tenantkit/tenantkit/httpapi/rulesapi"
	"github.com/tenantkit/tenantkit/httpapi/togglesapi"
	"github.com/tenantkit/tenantkit/identity"
	"github.com/tenantkit/tenantkit/rules"
	"github.com/tenantkit/tenantkit/toggles"
)

func main() {
	ctx := context.Background()
	kit, err := tenantkit.Open(ctx, tenantkit.Config{
		DatabaseURL: "sqlite:minimal.db",
		Areas:       []tenantkit.Module{togglesapi.Area(toggles.Options{}), rulesapi.Area(rules.Options{})},
	})
	if err != nil {
		log.Fatal(err)
	}
	if err := kit.Start(ctx); err != nil {
		log.Fatal(err)
	}
	api, err := httpapi.New(kit, httpapi.Options{BasePath: "/tk/", Authenticator: httpapi.AuthenticatorFunc(signIn)})
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/tk/", api)
	log.Fatal(http.ListenAndServe(cmp.Or(os.Getenv("ADDR"), ":8082"), mux))
}

// signIn is the host's own authentication: every caller naming a tenant
// may manage and run that tenant's business rules and check its toggles
// (managing toggles themselves is for super admins, who this host has
// none of).
func signIn(r *http.Request) (*identity.Identity, error) {
	tenant := r.Header.Get("X-Tenant")
	if tenant == "" {
		return nil, nil // anonymous: 401 on every API route
	}
	return identity.ForTenant(tenant).WithFeatures("business_rules.*"), nil
}
