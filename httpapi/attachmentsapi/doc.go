// Package attachmentsapi is the attachments area as a Kit and its HTTP
// API take it: Area returns its module, for tenantkit.Config.Areas. The
// module builds the area's service (a *attachments.Service, which
// tenantkit.AreaOf returns), connects it to the Kit's other areas, and
// gives httpapi.Handler the area's routes: upload, lists, the library,
// transfer, partitions, and file and image delivery.
//
// # Decisions
//
// It is built on the custom entities area, added with it: files are
// attached to records and checked against their entity's custom fields.
// When the Kit has the progress area, text extractions report there.
// Options says where files live when attachments.Options.Blobs is nil: a
// directory (FilesDir), the database (FilesInDatabase) or, with neither,
// memory.
//
// A host links this area's code (its service, its job workers, its
// routes) only when it imports this package: neither package tenantkit
// nor httpapi imports it.
package attachmentsapi
