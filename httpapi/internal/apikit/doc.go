// Package apikit is the route-building toolkit httpapi and the areas'
// packages under it share: the route description (Route, with its Access,
// Limits and Doc), the handler signature, request decoding (Decode) and
// response encoding (Encode), the list helpers (pages, limit/offset,
// sorting, filters), exports (CSV, JSON, XML, Markdown), the error types
// the handler maps to statuses, and the documentation's parameters.
//
// It is internal: a host serves its own endpoints through httpapi.Route
// (Options.Routes), not through this package.
package apikit
