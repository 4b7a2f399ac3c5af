#!/usr/bin/env bash
# Start PocketBase (the peer of the tenantkit benchmarks) on 127.0.0.1 with a fresh data dir and the
# `items` collection the scenarios use, then print how to reach it.
#
#   bench/pocketbase.sh [--workdir DIR] [--port N] [--no-request-logs]
#   bench/pocketbase.sh --stop DIR
#
# Start prints shell assignments (also written to DIR/pocketbase.env) and leaves the server running:
#   PB_URL=http://127.0.0.1:PORT/api   base URL of the API
#   PB_TOKEN=...                       superuser token; send it as `Authorization: <token>`
#   PB_PID=...                         the server's PID; `--stop DIR` stops it and removes DIR
#   PB_WORKDIR=...                     data dir, logs
#
# PocketBase is built once with `go install` into $HOME/.cache/tenantkit-bench/bin (override the
# cache with TENANTKIT_BENCH_CACHE; PB_VERSION=vX.Y.Z picks another release). The collection `items` has title (text), status (select: open,
# closed, pending), total (number), qty (integer number), note (text), created/updated (autodate,
# as the admin UI adds them), an index on status, and open list/view/create rules; the scenarios
# send the superuser token anyway, so PocketBase authenticates every request as tenantkit does.
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

PB_VERSION=${PB_VERSION:-v0.36.8}
PB_BIN="$CACHE_DIR/bin/base"

usage() { sed -n '2,18p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit "${1:-0}"; }

workdir='' port='' request_logs=1 stop_dir=''
while (($#)); do
  case $1 in
    --workdir) workdir=$2; shift 2 ;;
    --port) port=$2; shift 2 ;;
    --no-request-logs) request_logs=0; shift ;;
    --stop) stop_dir=$2; shift 2 ;;
    -h|--help) usage 0 ;;
    *) log "unknown argument: $1"; usage 2 ;;
  esac
done

if [[ -n $stop_dir ]]; then
  [[ -f $stop_dir/pocketbase.env ]] || die "no pocketbase.env in $stop_dir"
  # shellcheck disable=SC1091
  source "$stop_dir/pocketbase.env"
  stop_pid "${PB_PID:-}"
  rm -rf "$stop_dir"
  log "pocketbase stopped"
  exit 0
fi

# pb_installed_version: the pocketbase module version the cached binary was built from.
pb_installed_version() {
  [[ -x $PB_BIN ]] || return 0
  go version -m "$PB_BIN" 2>/dev/null |
    awk '$1 == "mod" && $2 == "github.com/pocketbase/pocketbase" {print $3}' || true
}

ensure_pocketbase() {
  [[ $(pb_installed_version) == "$PB_VERSION" ]] && return 0
  log "installing PocketBase $PB_VERSION into $CACHE_DIR/bin (go install, a few minutes the first time)"
  mkdir -p "$CACHE_DIR/bin"
  GOBIN="$CACHE_DIR/bin" go install "github.com/pocketbase/pocketbase/examples/base@$PB_VERSION" >&2
  [[ $(pb_installed_version) == "$PB_VERSION" ]] || die "PocketBase $PB_VERSION did not install"
}

ensure_pocketbase

if [[ -z $workdir ]]; then
  workdir=$(mktemp -d "${TMPDIR:-/tmp}/tenantkit-bench-pb.XXXXXX")
fi
mkdir -p "$workdir"
workdir=$(cd "$workdir" && pwd)
[[ -n $port ]] || port=$(free_port) || die "no free port"
data="$workdir/pb_data"
envfile="$workdir/pocketbase.env"
: >"$envfile"

email="bench@example.com"
password=$(random_hex 12)

"$PB_BIN" superuser upsert "$email" "$password" --dir "$data" >"$workdir/superuser.log" 2>&1 ||
  die "superuser upsert failed: $(tail -3 "$workdir/superuser.log")"

"$PB_BIN" serve --http "127.0.0.1:$port" --dir "$data" \
  --hooksDir "$workdir/pb_hooks" --hooksWatch=false --migrationsDir "$workdir/pb_migrations" \
  --publicDir "$workdir/pb_public" --automigrate=false >"$workdir/pocketbase.log" 2>&1 &
pid=$!
write_env "$envfile" "PB_PID=$pid" "PB_WORKDIR=$workdir" >/dev/null

base="http://127.0.0.1:$port/api"
if ! wait_http "$base/health" "$pid" 60; then
  stop_pid "$pid"
  die "PocketBase did not become healthy: $(tail -5 "$workdir/pocketbase.log")"
fi

api POST "$base/collections/_superusers/auth-with-password" \
  "{\"identity\":\"$email\",\"password\":\"$password\"}"
token=$(json_str token)
if ! is_2xx "$HTTP_CODE" || [[ -z $token ]]; then
  stop_pid "$pid"
  die "superuser auth failed: HTTP $HTTP_CODE $(excerpt)"
fi

collection='{
  "name": "items",
  "type": "base",
  "listRule": "",
  "viewRule": "",
  "createRule": "",
  "fields": [
    {"name": "title", "type": "text"},
    {"name": "status", "type": "select", "values": ["open", "closed", "pending"], "maxSelect": 1},
    {"name": "total", "type": "number"},
    {"name": "qty", "type": "number", "onlyInt": true},
    {"name": "note", "type": "text"},
    {"name": "created", "type": "autodate", "onCreate": true, "onUpdate": false},
    {"name": "updated", "type": "autodate", "onCreate": true, "onUpdate": true}
  ],
  "indexes": ["CREATE INDEX idx_items_status ON items (status)"]
}'
api POST "$base/collections" "$collection" "Authorization: $token"
if ! is_2xx "$HTTP_CODE"; then
  stop_pid "$pid"
  die "creating the items collection failed: HTTP $HTTP_CODE $(excerpt)"
fi

if ((request_logs == 0)); then
  api PATCH "$base/settings" '{"logs":{"maxDays":0}}' "Authorization: $token"
  is_2xx "$HTTP_CODE" || log "warning: could not turn request logs off: HTTP $HTTP_CODE $(excerpt)"
fi

version=$(pb_installed_version)
: >"$envfile"
write_env "$envfile" "PB_URL=$base" "PB_TOKEN=$token" "PB_PID=$pid" "PB_WORKDIR=$workdir" \
  "PB_VERSION=$version" "PB_REQUEST_LOGS=$request_logs"
log "PocketBase $version on $base (pid $pid); stop it with: $0 --stop $workdir"
