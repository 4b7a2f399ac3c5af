#!/usr/bin/env bash
# embed.sh: binary size and start time of a host that composes two areas
# (examples/embed/minimal: toggles and rules, its own sign-in) against the
# full standalone server (examples/server, every area), built from this
# checkout. Start time is from exec to the first answered HTTP request on a
# fresh SQLite database, the median of --runs starts (default 5).
#
#   bench/embed.sh [--runs N]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

runs=5
while [[ $# -gt 0 ]]; do
	case $1 in
	--runs) runs=$2; shift 2 ;;
	*) echo "usage: bench/embed.sh [--runs N]" >&2; exit 2 ;;
	esac
done

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go build -o "$work/minimal" ./examples/embed/minimal
go build -o "$work/server" ./examples/server

now_ms() { date +%s%3N; }

# start_ms BINARY URL: milliseconds from exec to the first answer of URL.
start_ms() {
	local bin=$1 url=$2 dir
	dir=$(mktemp -d -p "$work")
	local t0 pid
	t0=$(now_ms)
	(cd "$dir" && DATA_DIR="$dir/data" ADDR=127.0.0.1:8082 exec "$bin" >/dev/null 2>&1) &
	pid=$!
	until curl -s -o /dev/null "$url"; do
		if ! kill -0 "$pid" 2>/dev/null; then
			echo "embed.sh: $bin exited before answering" >&2
			return 1
		fi
		sleep 0.005
	done
	echo $(($(now_ms) - t0))
	kill "$pid"
	wait "$pid" 2>/dev/null || true
}

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

report() {
	local name=$1 bin=$2 url=$3 times=() i
	for ((i = 0; i < runs; i++)); do times+=("$(start_ms "$bin" "$url")"); done
	printf '| %s | %.1f MB | %s ms |\n' "$name" "$(echo "$(stat -c %s "$bin") / 1048576" | bc -l)" \
		"$(printf '%s\n' "${times[@]}" | median)"
}

echo "# $(date -u +%Y-%m-%d), $(nproc) cores, commit $(git rev-parse --short HEAD)$(git diff --quiet || echo +dirty), $(go version | cut -d' ' -f3)"
echo "| host | binary | start to first answer (median of $runs) |"
echo "|---|---:|---:|"
report "toggles + rules (examples/embed/minimal)" "$work/minimal" "http://127.0.0.1:8082/tk/health"
report "every area (examples/server)" "$work/server" "http://127.0.0.1:8082/api/health"
