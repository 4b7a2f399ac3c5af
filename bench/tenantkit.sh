#!/usr/bin/env bash
# Build and start tenantkit's standalone server (examples/server) from a checkout, on 127.0.0.1 with
# a fresh DATA_DIR, and create what the benchmark scenarios need. Then print how to reach it.
#
#   bench/tenantkit.sh [--repo CHECKOUT] [--workdir DIR] [--port N] [--database-url URL]
#   bench/tenantkit.sh --stop DIR
#
# --repo defaults to the checkout this script is in.
# Start prints shell assignments (also written to DIR/tenantkit.env) and leaves the server running:
#   TK_URL=http://127.0.0.1:PORT/api   base URL of the API
#   TK_KEY=...                         the super-admin key (BOOTSTRAP_API_KEY); send `X-Api-Key: <key>`
#   TK_PID=...                         the server's PID; `--stop DIR` stops it and removes DIR
#   TK_WORKDIR=..., TK_COMMIT=..., TK_DB=sqlite|postgres
#   TK_ENTITIES, TK_TOGGLES, TK_RULES  `ok`, or why that area could not be set up (a route answering
#                                      404/405/501 is reported as "not available")
#   TK_ERROR                           set (and exit status 3) when the server did not build or start
#
# The server runs with a clean environment: ADDR, DATA_DIR, BOOTSTRAP_API_KEY (random),
# APP_INTEGRATION_TEST=true (rate limits off), DATABASE_URL only when --database-url is given
# (give it a fresh database), and GOMAXPROCS/GOGC/GOMEMLIMIT/GODEBUG when set. What it creates, with the bootstrap key (default tenant):
#   - custom entity `bench.items` with title (text), status (select open/closed/pending,
#     filterable), total (float, filterable), qty (integer), note (text), via definitions.batch;
#   - boolean feature toggle `bench_flag` (default false) with an override to true for the tenant;
#   - rule set `BENCH_SET` of 10 VALIDATION rules (bench/bodies/rules-conditions.jsonl: one
#     3-condition AND group each, over the 20-field data map of bench/bodies/rules-execute.json),
#     members at sequence 10..100.
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() { sed -n '2,26p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit "${1:-0}"; }

repo=$REPO_DIR workdir='' port='' database_url='' stop_dir=''
while (($#)); do
  case $1 in
    --repo) repo=$2; shift 2 ;;
    --workdir) workdir=$2; shift 2 ;;
    --port) port=$2; shift 2 ;;
    --database-url) database_url=$2; shift 2 ;;
    --stop) stop_dir=$2; shift 2 ;;
    -h|--help) usage 0 ;;
    *) log "unknown argument: $1"; usage 2 ;;
  esac
done

if [[ -n $stop_dir ]]; then
  [[ -f $stop_dir/tenantkit.env ]] || die "no tenantkit.env in $stop_dir"
  # shellcheck disable=SC1091
  source "$stop_dir/tenantkit.env"
  stop_pid "${TK_PID:-}"
  rm -rf "$stop_dir"
  log "tenantkit stopped"
  exit 0
fi

[[ -n $repo ]] || { log "--repo CHECKOUT must not be empty"; usage 2; }

if [[ -z $workdir ]]; then
  workdir=$(mktemp -d "${TMPDIR:-/tmp}/tenantkit-bench-tk.XXXXXX")
fi
mkdir -p "$workdir"
workdir=$(cd "$workdir" && pwd)
envfile="$workdir/tenantkit.env"
: >"$envfile"

# fatal REASON: record why the server is unusable, stop it if it runs, exit 3.
pid=''
fatal() {
  [[ -n $pid ]] && stop_pid "$pid"
  write_env "$envfile" "TK_ERROR=$1" >/dev/null
  log "tenantkit: $1"
  exit 3
}

[[ -d $repo ]] || fatal "checkout $repo does not exist"
repo=$(cd "$repo" && pwd)
[[ -d $repo/examples/server ]] || fatal "not built yet: $repo has no examples/server"
commit=$(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo unknown)
if [[ -n $(git -C "$repo" status --porcelain 2>/dev/null || true) ]]; then
  commit="$commit+dirty"
fi

log "building examples/server at $commit"
if ! (cd "$repo" && go build -o "$workdir/tenantkit-server" ./examples/server) >"$workdir/build.log" 2>&1; then
  fatal "build failed: $(tail -5 "$workdir/build.log" | tr '\n' ' ' | cut -c1-300)"
fi

[[ -n $port ]] || port=$(free_port) || fatal "no free port"
key="bench_$(random_hex 24)"
mkdir -p "$workdir/data"
db=sqlite
server_env=(PATH="$PATH" HOME="$HOME" TMPDIR="${TMPDIR:-/tmp}" LANG=C.UTF-8
  ADDR="127.0.0.1:$port" DATA_DIR="$workdir/data" BOOTSTRAP_API_KEY="$key" APP_INTEGRATION_TEST=true)
if [[ -n $database_url ]]; then
  server_env+=(DATABASE_URL="$database_url")
  db=postgres
fi
# Go runtime settings pass through (PocketBase inherits them too), for experiments such as GOMAXPROCS=1;
# so do METRICS_ADDR and PPROF=1, for a CPU profile of the server under load.
for v in GOMAXPROCS GOGC GOMEMLIMIT GODEBUG METRICS_ADDR PPROF; do
  if [[ -n ${!v-} ]]; then
    server_env+=("$v=${!v}")
  fi
done

(cd "$workdir" && exec env -i "${server_env[@]}" "$workdir/tenantkit-server") >"$workdir/server.log" 2>&1 &
pid=$!
write_env "$envfile" "TK_PID=$pid" "TK_WORKDIR=$workdir" >/dev/null

base="http://127.0.0.1:$port/api"
if ! wait_http "$base/health" "$pid" 60; then
  fatal "server did not become healthy on $base/health: $(tail -5 "$workdir/server.log" | tr '\n' ' ' | cut -c1-300)"
fi

auth="X-Api-Key: $key"

# step WHAT METHOD PATH BODY: one setup request. Returns 0 on 2xx; otherwise sets STEP_ERROR.
STEP_ERROR=''
step() {
  local what=$1 method=$2 path=$3 body=${4-}
  api "$method" "$base$path" "$body" "$auth"
  if is_2xx "$HTTP_CODE"; then
    return 0
  fi
  if missing_route "$HTTP_CODE"; then
    STEP_ERROR="not available: $method /api$path answers $HTTP_CODE"
  else
    STEP_ERROR="$what failed: $method /api$path answers $HTTP_CODE $(excerpt)"
  fi
  return 1
}

# ---------------------------------------------------------------- entities
setup_entities() {
  step "entity upsert" POST /entities/entities \
    '{"entityId":"bench.items","label":"Bench items","description":"tenantkit benchmark entity","labelField":"title","defaultEditor":"markdown","showInSidebar":false,"isActive":true}' ||
    return 1
  local defs='[
    {"key":"title","kind":"text","configJson":{"label":"Title","listVisible":true}},
    {"key":"status","kind":"select","configJson":{"label":"Status","options":["open","closed","pending"],"filterable":true,"listVisible":true}},
    {"key":"total","kind":"float","configJson":{"label":"Total","filterable":true,"listVisible":true}},
    {"key":"qty","kind":"integer","configJson":{"label":"Quantity","listVisible":true}},
    {"key":"note","kind":"text","configJson":{"label":"Note"}}
  ]'
  step "definitions batch" POST /entities/definitions.batch "{\"entityId\":\"bench.items\",\"definitions\":$defs}"
}

# ---------------------------------------------------------------- toggles
setup_toggles() {
  step "toggle create" POST /feature_toggles/global \
    '{"identifier":"bench_flag","name":"Bench flag","description":"tenantkit benchmark toggle","category":"bench","type":"boolean","defaultValue":false}' ||
    return 1
  local id
  id=$(json_str id)
  [[ -n $id ]] || { STEP_ERROR="toggle create answered no id: $(excerpt)"; return 1; }
  step "toggle override" PUT /feature_toggles/overrides \
    "{\"toggleId\":\"$id\",\"isOverride\":true,\"overrideValue\":true}" || return 1
  # Sanity check: the check route must resolve the override (a benchmark of the wrong path is worse
  # than none). Not fatal: compare.sh probes the route again and reports what it answers.
  api GET "$base/feature_toggles/check/boolean?identifier=bench_flag" '' "$auth"
  if is_2xx "$HTTP_CODE" && ! [[ $HTTP_BODY == *'"source":"override"'* && $HTTP_BODY == *'"enabled":true'* ]]; then
    log "warning: toggle check does not report the override: $(excerpt)"
  fi
}

# ---------------------------------------------------------------- rules
setup_rules() {
  local i=0 cond rid
  while IFS= read -r cond; do
    [[ -n $cond ]] || continue
    i=$((i + 1))
    rid=$(printf 'bench_rule_%02d' "$i")
    step "rule create" POST /business_rules/rules \
      "{\"ruleId\":\"$rid\",\"ruleName\":\"Bench rule $i\",\"description\":\"3-condition AND group\",\"ruleType\":\"VALIDATION\",\"ruleCategory\":\"bench\",\"entityType\":\"Order\",\"eventType\":\"beforeSave\",\"conditionExpression\":$cond,\"successActions\":null,\"failureActions\":null,\"enabled\":true,\"priority\":100,\"version\":1}" ||
      return 1
  done <"$BENCH_DIR/bodies/rules-conditions.jsonl"
  step "rule set create" POST /business_rules/sets \
    '{"id":"BENCH_SET","name":"Bench set","description":"10 VALIDATION rules, 3-condition AND groups over a 20-field data map","enabled":true}' ||
    return 1
  local n
  for n in $(seq 1 "$i"); do
    rid=$(printf 'bench_rule_%02d' "$n")
    step "member add" POST /business_rules/sets/BENCH_SET/members \
      "{\"ruleId\":\"$rid\",\"sequence\":$((n * 10)),\"enabled\":true}" || return 1
  done
  # Sanity check with a dry run: all 10 rules should be evaluated and hold.
  local body
  body=$(sed 's/^{/{"dryRun":true,/' "$BENCH_DIR/bodies/rules-execute.json")
  api POST "$base/business_rules/sets/BENCH_SET/execute" "$body" "$auth"
  if is_2xx "$HTTP_CODE"; then
    local ok
    ok=$(printf '%s' "$HTTP_BODY" | grep -o '"result"[[:space:]]*:[[:space:]]*"SUCCESS"' | wc -l)
    ((ok == i)) || log "warning: dry-run execute shows $ok of $i rules with result SUCCESS: $(excerpt)"
  fi
}

entities=ok toggles=ok rules=ok
setup_entities || entities=$STEP_ERROR
setup_toggles || toggles=$STEP_ERROR
setup_rules || rules=$STEP_ERROR

: >"$envfile"
write_env "$envfile" "TK_URL=$base" "TK_KEY=$key" "TK_PID=$pid" "TK_WORKDIR=$workdir" \
  "TK_COMMIT=$commit" "TK_DB=$db" "TK_ENTITIES=$entities" "TK_TOGGLES=$toggles" "TK_RULES=$rules"
log "tenantkit $commit on $base (pid $pid, $db); stop it with: $0 --stop $workdir"
