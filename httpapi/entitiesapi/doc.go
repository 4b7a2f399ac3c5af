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
// a list's CPU. Each record's values are not decoded either: the list
// reads them as the stored JSON (entities.Service.ListRecordsJSON) and
// rewrites that text into encoding/json's form (internal/jsoncanon: keys
// sorted, no white space, strings and numbers as json.Marshal writes
// them), with the record's own keys among them. Decision: the answer
// stays byte for byte what it was and the same on both engines, rather
// than passing PostgreSQL's jsonb text (keys by length, spaced) through
// as it is; the rewrite costs a scan of the text, the map it replaces a
// quarter of the list's process time. What jsoncanon declines is decoded
// and written as before. The tests compare the writers on fixed,
// generated and fuzzed pages, from decoded values and from stored JSON;
// exports still build the rows as maps (recordRow).
package entitiesapi
