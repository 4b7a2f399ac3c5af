// Package entitiesapi is the custom entities area as a Kit and its HTTP
// API take it: Area returns its module, for tenantkit.Config.Areas. The
// module builds the area's service (a *entities.Service, which
// tenantkit.AreaOf returns), connects it to the Kit's other areas, and
// gives httpapi.Handler the area's routes: custom entities, field
// definitions, records (lists, filters, exports) and relation options.
//
// # Decisions
//
// It is built on no other area. When the Kit has the progress area, a
// records export is tracked as a progress job (its id in X-Progress-Job-
// Id).
//
// A host links this area's code (its service, its job workers, its
// routes) only when it imports this package: neither package tenantkit
// nor httpapi imports it.
//
// The records list's page is written by hand (recordsPage, with
// internal/jsonenc), byte for byte as encoding/json wrote the page of
// recordRow maps: reflection over a map per record was a large share of
// a list's CPU. The tests compare the two writers on fixed, generated
// and fuzzed pages; exports still build the rows as maps (recordRow).
package entitiesapi
