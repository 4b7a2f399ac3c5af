// Package progressapi is the job progress area as a Kit and its HTTP API
// take it: Area returns its module, for tenantkit.Config.Areas. The
// module builds the area's service (a *progress.Service, which
// tenantkit.AreaOf returns), connects it to the Kit's other areas, and
// gives httpapi.Handler the area's routes: what runs and what just
// finished in the caller's scope, and one job.
//
// # Decisions
//
// It is built on no other area. Jobs are created and reported through the
// Go API; no route writes.
//
// A host links this area's code (its service, its job workers, its
// routes) only when it imports this package: neither package tenantkit
// nor httpapi imports it.
package progressapi
