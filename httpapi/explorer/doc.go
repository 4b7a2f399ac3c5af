// Package explorer is the API's interactive explorer: Swagger UI, vendored
// into this repository and embedded in the binary, showing the server's
// OpenAPI 3.1 document. The API serves it at GET /api/docs/api (Page or
// ServePage) and its files at GET /api/docs/api/assets/{name} (ServeAsset).
//
// # Why Swagger UI
//
// It is the reference viewer for OpenAPI, renders 3.1 documents (JSON
// Schema 2020-12 included), lets a reader try a call against the server,
// and ships as one prebuilt, dependency-free bundle (npm package
// swagger-ui-dist: swagger-ui-bundle.js and swagger-ui.css), so nothing is
// built here. Redoc reads well but cannot send a request; other viewers
// (RapiDoc, Scalar) have smaller communities, and some fetch fonts or route
// calls through a hosted proxy by default. Swagger UI needs one switch to
// stay offline: validatorUrl, see below.
//
// # One area at a time
//
// Swagger UI 5.35.0 renders no operation past the first tag of a document
// with more than MaxOperations (136) operations, silently: no error, no
// console message (a document of 240 operations in 8 tags renders 16;
// internal/testing/explorertest shows it). The API's document passes that
// count, so the explorer does not give Swagger UI the whole document: the
// page (Page with areas) has a picker, a <select> styled by Swagger UI's
// own top bar, with one option per area, a tag of the document (Areas),
// and init.js loads the picked area's document (specActions.updateUrl and
// download). The server answers each area's document, AreaDocument: the
// operations of that tag, their path items' shared fields, the tag's
// entry and only the schemas they use (transitively), everything else as
// in the whole document, in its order, so each part is a valid OpenAPI
// 3.1 document (httpapi serves them at /docs/openapi?tag=<area>). An area
// stays far below the limit. A deep link (#/Identity/listUsers) opens the
// area of its tag, and picking an area writes its tag into the address so
// that a reload shows it again. The whole document stays as it was, for
// clients generated from it. Other viewers were weighed again: Redoc
// cannot send a request, and RapiDoc and Scalar would mean vendoring and
// checking a new bundle (fonts, proxies) for the same result.
//
// # Offline: nothing leaves the server
//
// The explorer must work without the internet and must not tell any third
// party that someone reads the API. So:
//
//   - the assets are embedded (go:embed) and served by the API itself;
//     there is no CDN, and the stylesheet inlines its icons (data: URLs)
//     and has no @font-face or @import (fonts are the reader's own);
//   - init.js sets validatorUrl: null (no badge from validator.swagger.io)
//     and queryConfigEnabled: false (the page's ?url= cannot point it at
//     another document), and uses BaseLayout (no top bar with a URL box);
//   - the page sets its favicon to data:, (no /favicon.ico request) and has
//     no inline script: init.js reads the document's URL from the
//     data-openapi-url attribute of #swagger-ui;
//   - Swagger UI sends no telemetry; the npm package's one dependency,
//     @scarf/scarf, counts installs from an npm install script, and the
//     vendoring script uses npm pack, which runs no script and fetches no
//     dependency;
//   - ServePage sends ContentSecurityPolicy, which allows scripts, styles,
//     fonts and fetches from the page's own origin only (images: also
//     data:), so that even a document with an external $ref, or a future
//     Swagger UI that reaches out, is stopped by the browser (and the
//     browser test reports the violation). Styles need no 'unsafe-inline':
//     Swagger UI sets inline styles through the DOM, which no policy
//     governs; the browser test (operations, schemas and an opened
//     operation) reports no violation. "Try it out" sends its requests to
//     the document's servers, which must be this origin (connect-src
//     'self'): a relative server URL, or none, is.
//
// # Caching
//
// Page names each asset with its version, ?v= and the first 16 hex digits
// of its sha256; ServeAsset answers that URL with Cache-Control:
// AssetCacheControl (a year, immutable), any other with no-cache, always
// with an ETag (the sha256) for If-None-Match, and gzips text for clients
// that accept it. A new binary with other bytes gives other URLs, so a
// browser never keeps a stale bundle. The page itself is no-cache.
//
// # The pin, and re-vendoring
//
// SwaggerUIVersion (5.35.0) is an exact version. dist/ holds only what the
// page needs and what must travel with it: swagger-ui-bundle.js,
// swagger-ui.css, LICENSE and NOTICE (Apache 2.0) and
// swagger-ui-bundle.js.LICENSE.txt (the licenses of the bundled
// libraries), about 1.9 MB; dist/SHA256SUMS lists their sums and
// dist/VERSION the version. scripts/vendor-explorer.sh re-vendors: it
// fetches the pinned version with npm pack, checks the tarball against
// the pinned npm integrity (sha512), copies the files, writes the sums and
// checks them; with --check it only checks dist/ against SHA256SUMS,
// offline. To upgrade, change VERSION and INTEGRITY in the script (npm
// view swagger-ui-dist@VERSION dist.integrity) and SwaggerUIVersion here,
// run the script, and run go test ./httpapi/explorer/...: the unit tests
// check the embedded bytes against SHA256SUMS and the three version pins
// against each other; then run the browser tests, which render the new
// bundle (below).
//
// # Tests
//
// The unit tests cover the page (escaping, no inline script, no other
// origin), every asset's type and caching headers, unknown names, and the
// sums. The browser tests live in internal/testing/explorertest, a module
// of its own, so that chromedp, which drives the browser, is required by
// that module only and never reaches a host's module graph: go test ./...
// from the repository root does not run them; run go test ./... in that
// directory (.ci/run does). They render the page in headless Chromium,
// against a sample OpenAPI 3.1 document and against the API's real handler,
// and fail on any request to another host, any failed request, script
// error or policy violation; they pick every area in turn and check that
// every operation of the whole document is shown by some area (the API's
// own, and a sample of 240 operations, which they also show does not
// render as one document). Without Chromium they skip, saying so.
package explorer
