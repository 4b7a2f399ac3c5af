#!/usr/bin/env bash
# Regenerates the client: writes the OpenAPI document the API serves to
# openapi.json (through TestOpenAPIDocumentIsPortable, which serves it from
# an in-memory API) and runs oapi-codegen, pinned by this module's go.mod
# (tool directive), on it with oapi-codegen.yaml. Run by go generate.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
here=$PWD
(cd ../.. && TENANTKIT_OPENAPI_OUT="$here/openapi.json" go test ./httpapi -run '^TestOpenAPIDocumentIsPortable$' -count=1 >/dev/null)
go tool oapi-codegen -config oapi-codegen.yaml openapi.json
