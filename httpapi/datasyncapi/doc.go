// Package datasyncapi is the data sync area as a Kit and its HTTP API
// take it: Area returns its module, for tenantkit.Config.Areas. The
// module builds the area's service (a *datasync.Service, which
// tenantkit.AreaOf returns), connects it to the Kit's other areas, and
// gives httpapi.Handler the area's routes: validate a target, start,
// list, read, cancel and retry sync runs.
//
// # Decisions
//
// It is built on the custom entities, integrations and progress areas,
// added with it: runs move records through an integration's adapter and
// report as progress jobs. The built-in HTTP JSON source
// (datasync/httpjson, integration sync_http_json) is registered; it
// refuses loopback and private addresses unless Options.AllowPrivateURLs.
//
// A host links this area's code (its service, its job workers, its
// routes) only when it imports this package: neither package tenantkit
// nor httpapi imports it.
package datasyncapi
