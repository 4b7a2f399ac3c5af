package httpapi

import (
	"net/http"
	"os"
	"testing"

	"github.com/tenantkit/tenantkit/ratelimit"
	"github.com/tenantkit/tenantkit/store"
	"github.com/tenantkit/tenantkit/store/storetest"
)

// Helpers shared by the package's fuzz targets (the *fuzz_test.go
// files).

// fuzzEnv is a test environment for a fuzz target, on one engine.
type fuzzEnv struct {
	engine string
	*testEnv
}

// fuzzEnvs returns a test environment on SQLite and, when
// TENANTKIT_TEST_POSTGRES_URL is set, one on PostgreSQL, so that the seed
// corpora run on both engines in CI while fuzzing needs no database
// server. The variable is checked here, since storetest's PostgreSQL
// helpers skip the whole target without it. The PostgreSQL environment
// has a schema of its own: some targets write to the bootstrap tenant,
// which the package's other tests share in the common schema. The
// handlers have rate limiting off, so that a long fuzz run meets the
// routes rather than 429s.
func fuzzEnvs(f *testing.F) []fuzzEnv {
	f.Helper()
	envs := []fuzzEnv{{"sqlite", newTestEnv(f, storetest.SQLite(f))}}
	if os.Getenv(storetest.PostgresEnv) != "" {
		db, err := store.Open(f.Context(), storetest.IsolatedPostgresURL(f), nil)
		if err != nil {
			f.Fatal(err)
		}
		f.Cleanup(func() { _ = db.Close() })
		envs = append(envs, fuzzEnv{"postgres", newTestEnv(f, db)})
	}
	for _, e := range envs {
		e.handler = mustNew(e.kit, Options{Auth: e.auth, RateLimit: ratelimit.NewPolicy(ratelimit.Config{Enabled: false}, nil, nil)})
	}
	return envs
}

// fuzzGet sends GET path with rawQuery set as is, bypassing URL parsing
// (httptest.NewRequest panics on a target it cannot parse, and the
// handlers must cope with whatever query text reaches them).
func (e *testEnv) fuzzGet(path, rawQuery, key string) *response {
	e.t.Helper()
	return e.send("GET", path, nil, func(r *http.Request) {
		r.URL.RawQuery = rawQuery
		r.RequestURI = path + "?" + rawQuery
		if key != "" {
			r.Header.Set("X-Api-Key", key)
		}
	})
}
