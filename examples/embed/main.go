// Command embed mounts the whole tenantkit API in an existing net/http
// server: the host keeps its own routes (/hello) and serves every area
// under /api/, signing callers in with the identity area's API keys and
// sessions. examples/embed/minimal shows a host that picks two areas and
// signs callers in its own way.
//
//	go run ./examples/embed
//	curl http://localhost:8081/hello
//	curl -H "X-Api-Key: <key printed on first start>" http://localhost:8081/api/auth/me
//
// Data goes to embed.db (SQLite) in the working directory. The Kit's secret
// key is random per run here, so session tokens do not survive a restart
// (API keys do); a real host sets Config.SecretKey to a key it keeps, as
// examples/server does. Graceful shutdown is left out for brevity (see
// examples/server).
package main

import (
	"context"
	"fmt"
	"log"
	"net/http"

	"github.com/tenantkit/tenantkit/full"
	"github.com/tenantkit/tenantkit/httpapi"
	"github.com/tenantkit/tenantkit/identity"
)

func main() {
	ctx := context.Background()
	kit, err := full.Open(ctx, full.Config{DatabaseURL: "sqlite:embed.db"}) // every area and plug-in
	if err != nil {
		log.Fatal(err)
	}
	res, err := kit.Identity.Bootstrap(ctx, identity.BootstrapInput{})
	if err != nil {
		log.Fatal(err)
	}
	if res.GeneratedAPIKey != "" {
		fmt.Println("Super-admin API key (shown once):", res.GeneratedAPIKey)
	}
	if err := kit.Start(ctx); err != nil {
		log.Fatal(err)
	}
	api, err := httpapi.New(kit.Kit, httpapi.Options{BasePath: "/api"})
	if err != nil {
		log.Fatal(err)
	}

	mux := http.NewServeMux() // the host's own mux, with its own routes
	mux.HandleFunc("GET /hello", func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "hello from the host") })
	mux.Handle("/api/", api)
	log.Fatal(http.ListenAndServe(":8081", mux))
}
