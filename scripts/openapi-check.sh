#!/usr/bin/env bash
# Checks the OpenAPI document the API serves with the tools clients use,
# at the versions pinned below:
#
#   - oapi-codegen generates a Go client (types, client) that must build;
#   - ogen generates a Go client and server that must build;
#   - Redocly CLI (recommended rules, redocly.yaml) and Spectral
#     (spectral:oas, .spectral.yaml) lint it: errors and warnings fail the
#     check;
#   - openapi-typescript generates TypeScript types, and
#     scripts/openapi-client.ts, a typed client's calls with
#     openapi-fetch, must type-check against them (tsc --strict).
#
# The document is written by TestOpenAPIDocumentIsPortable
# (TENANTKIT_OPENAPI_OUT). Needs Go and, for the linters and TypeScript,
# npm; the generated modules' dependencies come from the Go module proxy.
#
#   scripts/openapi-check.sh            everything
#   scripts/openapi-check.sh --go-only  the two Go generators (no npm)
set -euo pipefail

OAPI_CODEGEN=v2.8.2
OGEN=v1.24.0
REDOCLY=2.77.0
SPECTRAL=6.16.3
OPENAPI_TYPESCRIPT=7.13.0
OPENAPI_FETCH=0.17.0
TYPESCRIPT=5.9.3

cd "$(dirname "${BASH_SOURCE[0]}")/.."
repo=$PWD
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
doc=$work/openapi.json

TENANTKIT_OPENAPI_OUT=$doc go test ./httpapi -run '^TestOpenAPIDocumentIsPortable$' -count=1 >/dev/null
echo "openapi-check: document: $(wc -c <"$doc") bytes"

# newmod DIR NAME makes an empty module to build generated code in.
newmod() {
	mkdir -p "$1"
	printf 'module example.com/%s\n\ngo 1.24\n' "$2" >"$1/go.mod"
}

newmod "$work/oapi" oapiclient
go run "github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen@$OAPI_CODEGEN" \
	-generate types,client -package oapiclient "$doc" >"$work/oapi/client.go"
(cd "$work/oapi" && go mod tidy >/dev/null 2>&1 && go build ./...)
echo "openapi-check: oapi-codegen $OAPI_CODEGEN: client generated and built"

newmod "$work/ogen" ogenclient
go run "github.com/ogen-go/ogen/cmd/ogen@$OGEN" --target "$work/ogen/api" --package api --clean "$doc" >"$work/ogen.log" 2>&1 ||
	{ cat "$work/ogen.log" >&2; exit 1; }
if grep -q 'Skipping' "$work/ogen.log"; then
	grep 'Skipping' "$work/ogen.log" >&2
	echo "openapi-check: ogen skipped parts of the document" >&2
	exit 1
fi
(cd "$work/ogen" && go get "github.com/ogen-go/ogen@$OGEN" >/dev/null 2>&1 && go mod tidy >/dev/null 2>&1 && go build ./...)
echo "openapi-check: ogen $OGEN: client and server generated and built"

if [[ ${1:-} == --go-only ]]; then
	exit 0
fi

npm install --prefix "$work/npm" --no-save --no-audit --no-fund --loglevel=error \
	"@redocly/cli@$REDOCLY" "@stoplight/spectral-cli@$SPECTRAL" \
	"openapi-typescript@$OPENAPI_TYPESCRIPT" "openapi-fetch@$OPENAPI_FETCH" "typescript@$TYPESCRIPT" >/dev/null
bin=$work/npm/node_modules/.bin

# The linters read the committed rulesets (redocly.yaml, .spectral.yaml),
# which say why each rule they turn off does not apply; any warning left
# fails the check.
"$bin/redocly" lint --config "$repo/redocly.yaml" --max-problems 1000 --format=stylish "$doc" >"$work/redocly.log" 2>&1 ||
	{ cat "$work/redocly.log" >&2; exit 1; }
if grep -q ' warning ' "$work/redocly.log"; then
	grep ' warning ' "$work/redocly.log" >&2
	echo "openapi-check: Redocly warned (redocly.yaml turns off the rules that do not apply)" >&2
	exit 1
fi
echo "openapi-check: Redocly $REDOCLY: no errors, no warnings"
"$bin/spectral" lint --ruleset "$repo/.spectral.yaml" --fail-severity=warn "$doc"
echo "openapi-check: Spectral $SPECTRAL: no errors, no warnings"

mkdir -p "$work/ts"
"$bin/openapi-typescript" "$doc" -o "$work/ts/api.ts" >/dev/null
cp "$repo/scripts/openapi-client.ts" "$work/ts/use.ts"
ln -s "$work/npm/node_modules" "$work/ts/node_modules"
(cd "$work/ts" && "$bin/tsc" --noEmit --strict --target es2022 --module nodenext --moduleResolution nodenext --skipLibCheck use.ts)
echo "openapi-check: openapi-typescript $OPENAPI_TYPESCRIPT: scripts/openapi-client.ts type-checks"
