#!/usr/bin/env bash
# Re-vendors the API explorer's Swagger UI (npm package swagger-ui-dist) into
# httpapi/explorer/dist, at the version pinned below, and checks it.
#
#   scripts/vendor-explorer.sh          fetch VERSION with npm pack, check the
#                                       tarball's integrity against INTEGRITY,
#                                       copy FILES, write dist/SHA256SUMS and
#                                       dist/VERSION, then check the sums
#   scripts/vendor-explorer.sh --check  check the vendored files against
#                                       dist/SHA256SUMS (offline, no npm)
#
# To upgrade: set VERSION, run `npm view swagger-ui-dist@VERSION dist.integrity`
# and set INTEGRITY to what it prints, set SwaggerUIVersion in
# httpapi/explorer/explorer.go, run this script, then `go test
# ./httpapi/explorer/...` and, in internal/testing/explorertest (a module of
# its own), `go test ./...` (the browser tests render the new bundle).
#
# npm pack downloads the package tarball only: it runs no install script and
# fetches no dependency (swagger-ui-dist depends on @scarf/scarf, whose
# postinstall script reports installs; it never runs here), and nothing of
# the package runs on this machine.
set -euo pipefail

VERSION=5.35.0
INTEGRITY=sha512-U06rpMtW9V3XPGOBeamTUSr0Z09jMX4IJuANpE/EZbAhw0G8CgwrzU4YmXkn/h0wCDNsXdGarTNNHC3sU8yVUQ==
# The files the explorer needs: the bundle (Swagger UI with React and its
# other dependencies), its stylesheet, and the licenses and notices that
# must travel with them.
FILES=(swagger-ui-bundle.js swagger-ui.css LICENSE NOTICE swagger-ui-bundle.js.LICENSE.txt)

cd "$(dirname "${BASH_SOURCE[0]}")/.."
DEST=httpapi/explorer/dist

fail() {
	echo "vendor-explorer: $*" >&2
	exit 1
}

check() {
	[[ -f $DEST/SHA256SUMS ]] || fail "$DEST/SHA256SUMS is missing"
	[[ $(cat "$DEST/VERSION") == "$VERSION" ]] || fail "$DEST/VERSION says $(cat "$DEST/VERSION"), this script pins $VERSION"
	local listed
	listed=$(awk '{print $2}' "$DEST/SHA256SUMS" | sort | tr '\n' ' ')
	[[ $listed == "$(printf '%s\n' "${FILES[@]}" | sort | tr '\n' ' ')" ]] ||
		fail "$DEST/SHA256SUMS lists $listed; want ${FILES[*]}"
	(cd "$DEST" && sha256sum --quiet --strict -c SHA256SUMS) || fail "the files in $DEST do not match SHA256SUMS"
	echo "vendor-explorer: $DEST holds swagger-ui-dist $VERSION, sums match"
}

case "${1:-}" in
--check)
	check
	exit 0
	;;
"") ;;
*) fail "usage: $0 [--check]" ;;
esac

command -v npm >/dev/null || fail "npm is not installed"
command -v node >/dev/null || fail "node is not installed"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

(cd "$tmp" && npm pack --silent --ignore-scripts "swagger-ui-dist@$VERSION" >/dev/null) ||
	fail "npm pack swagger-ui-dist@$VERSION failed"
tarball="$tmp/swagger-ui-dist-$VERSION.tgz"
[[ -f $tarball ]] || fail "npm pack did not write $tarball"

# npm checks the tarball against the registry's metadata; this checks it
# against the pin, so a re-vendor of the same version gives the same bytes.
got=$(node -e '
	const c = require("crypto"), fs = require("fs");
	process.stdout.write("sha512-" + c.createHash("sha512").update(fs.readFileSync(process.argv[1])).digest("base64"));
' "$tarball")
[[ $got == "$INTEGRITY" ]] || fail "swagger-ui-dist-$VERSION.tgz has integrity $got; pinned $INTEGRITY"

tar -xzf "$tarball" -C "$tmp"
pkgversion=$(node -p 'require(process.argv[1]).version' "$tmp/package/package.json")
[[ $pkgversion == "$VERSION" ]] || fail "the tarball's package.json says version $pkgversion, want $VERSION"

mkdir -p "$DEST"
# Remove what an earlier version vendored, keeping nothing but FILES.
find "$DEST" -mindepth 1 -maxdepth 1 -type f -delete
for f in "${FILES[@]}"; do
	[[ -f $tmp/package/$f ]] || fail "swagger-ui-dist $VERSION has no $f"
	install -m 0644 "$tmp/package/$f" "$DEST/$f"
done
(cd "$DEST" && sha256sum "${FILES[@]}") >"$DEST/SHA256SUMS"
echo "$VERSION" >"$DEST/VERSION"

check
du -cb "${FILES[@]/#/$DEST/}" | tail -1 | awk '{print "vendor-explorer: " $1 " bytes vendored"}'
