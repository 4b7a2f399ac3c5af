#!/usr/bin/env bash
# Compare tenantkit's HTTP performance with a bare net/http server (the limit of this machine) and
# with PocketBase (the closest peer), side by side in one run. See bench/README.md.
#
#   bench/compare.sh [--repo CHECKOUT] [--seconds 10] [--conns 32] [options]
#
#   --repo DIR           tenantkit checkout examples/server is built from (default: the checkout
#                        this script is in; when it does not build, the tenantkit rows say why)
#   --no-tenantkit       measure PocketBase and bare only
#   --seconds N          length of one measured run, 1..15 (default 10)
#   --conns N            concurrent keep-alive connections of wrk (default 32)
#   --threads N          wrk threads (default 1, so the servers keep most of the 2 cores)
#   --rounds N           measured runs per target and scenario (default 2; the table shows the median)
#   --warmup N           unmeasured seconds per target before its first round (default 5)
#   --records N          records seeded into each store before the list scenarios (default 20000)
#   --only LIST          comma-separated scenarios to run (default: all)
#   --database-url URL   run tenantkit on PostgreSQL (a fresh database) instead of SQLite
#   --rules-dry-run      execute the rule set with dryRun:true (no execution-log writes)
#   --pb-no-request-logs turn PocketBase's request log (logs.maxDays) off
#   --no-freeze          do not SIGSTOP the idle servers while another one is measured
#   --keep               keep the work dir (binaries, data dirs, server logs, raw wrk output)
#
# Scenarios: records-create, records-list-total, records-list-filter, toggles-check, rules-execute,
# payment-session.
# The report goes to stdout (its last line is a one-line summary for a dashboard); progress goes to
# stderr. Every server listens on 127.0.0.1 and is stopped by its PID when the script ends.
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() { sed -n '2,25p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit "${1:-0}"; }

ALL_SCENARIOS=(records-create records-list-total records-list-filter toggles-check rules-execute payment-session)
RUN_ORDER=(records-list-total records-list-filter toggles-check rules-execute records-create payment-session)

repo=$REPO_DIR seconds=10 conns=32 threads=1 rounds=2 warmup=5 records=20000 only='' database_url=''
rules_dry=0 pb_logs=1 freeze=1 keep=0
while (($#)); do
  case $1 in
    --repo) repo=$2; shift 2 ;;
    --no-tenantkit) repo=''; shift ;;
    --seconds) seconds=$2; shift 2 ;;
    --conns) conns=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --warmup) warmup=$2; shift 2 ;;
    --records) records=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    --database-url) database_url=$2; shift 2 ;;
    --rules-dry-run) rules_dry=1; shift ;;
    --pb-no-request-logs) pb_logs=0; shift ;;
    --no-freeze) freeze=0; shift ;;
    --keep) keep=1; shift ;;
    -h|--help) usage 0 ;;
    *) log "unknown argument: $1"; usage 2 ;;
  esac
done

for v in seconds conns threads rounds warmup records; do
  [[ ${!v} =~ ^[0-9]+$ ]] || die "--$v must be a whole number"
done
((seconds >= 1)) || die "--seconds must be at least 1"
if ((seconds > 15)); then
  log "capping --seconds at 15 (a run stays bounded)"
  seconds=15
fi
((warmup <= 15)) || warmup=15
((rounds >= 1 && conns >= 1 && threads >= 1)) || die "--rounds, --conns and --threads must be at least 1"
((conns >= threads)) || die "--conns must be at least --threads"
if [[ -n $only ]]; then
  for s in ${only//,/ }; do
    [[ " ${ALL_SCENARIOS[*]} " == *" $s "* ]] || die "unknown scenario $s (known: ${ALL_SCENARIOS[*]})"
  done
fi
selected() { [[ -z $only || ",$only," == *",$1,"* ]]; }

need_wrk
command -v go >/dev/null 2>&1 || die "go is not on PATH"
command -v curl >/dev/null 2>&1 || die "curl is not on PATH"

WORK=$(mktemp -d "${TMPDIR:-/tmp}/tenantkit-bench.XXXXXX")
RESULTS="$WORK/results.tsv"
: >"$RESULTS"
declare -A PIDS=() NOTE=() SIZE=()
BARE_PID=''

cleanup() {
  local rc=$?
  set +e
  trap - EXIT INT TERM
  stop_pid "$BARE_PID"
  if [[ -f $WORK/tk/tenantkit.env ]]; then
    stop_pid "$(sed -n 's/^TK_PID=//p' "$WORK/tk/tenantkit.env" | tail -1)"
  fi
  if [[ -f $WORK/pb/pocketbase.env ]]; then
    stop_pid "$(sed -n 's/^PB_PID=//p' "$WORK/pb/pocketbase.env" | tail -1)"
  fi
  if ((keep)); then
    log "work dir kept: $WORK"
  else
    rm -rf "$WORK"
  fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ---------------------------------------------------------------- header
wrk_version=$(wrk -v 2>&1 | head -1 | awk '{print $2}' || true)
cpu_model=$(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | sed 's/.*: //' || true)
echo "tenantkit HTTP comparison, $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "machine: $(nproc) cores${cpu_model:+ ($cpu_model)}; $(go version); wrk $wrk_version"
echo "load: wrk -t$threads -c$conns, ${seconds}s per run, $rounds round(s) per target interleaved (A/B/A/B), median of rounds, ${warmup}s warm-up; $( ((freeze)) && echo 'idle servers frozen (SIGSTOP) during each run' || echo 'idle servers not frozen')"

# ---------------------------------------------------------------- build tools, start servers
log "building bare and seed"
mkdir -p "$WORK/bin" "$WORK/bodies" "$WORK/wrk"
go build -C "$BENCH_DIR/bare" -o "$WORK/bin/bare" . || die "building bench/bare failed"
go build -C "$BENCH_DIR/seed" -o "$WORK/bin/seed" . || die "building bench/seed failed"

log "starting PocketBase"
pb_state=ok
pb_args=(--workdir "$WORK/pb")
((pb_logs)) || pb_args+=(--no-request-logs)
if "$BENCH_DIR/pocketbase.sh" "${pb_args[@]}" >/dev/null 2>"$WORK/pb.err"; then
  # shellcheck disable=SC1091
  source "$WORK/pb/pocketbase.env"
  PIDS[pocketbase]=$PB_PID
else
  pb_state="PocketBase did not start: $(tail -1 "$WORK/pb.err")"
fi
cat "$WORK/pb.err" >&2

tk_state="not measured (--no-tenantkit)"
if [[ -n $repo ]]; then
  log "building and starting tenantkit from $repo"
  tk_args=(--repo "$repo" --workdir "$WORK/tk")
  [[ -n $database_url ]] && tk_args+=(--database-url "$database_url")
  if "$BENCH_DIR/tenantkit.sh" "${tk_args[@]}" >/dev/null 2>"$WORK/tk.err"; then
    # shellcheck disable=SC1091
    source "$WORK/tk/tenantkit.env"
    PIDS[tenantkit]=$TK_PID
    tk_state=ok
  else
    TK_ERROR=''
    # shellcheck disable=SC1091
    [[ -f $WORK/tk/tenantkit.env ]] && source "$WORK/tk/tenantkit.env"
    tk_state=${TK_ERROR:-"tenantkit did not start: $(tail -1 "$WORK/tk.err")"}
  fi
  cat "$WORK/tk.err" >&2
fi

if [[ $pb_state == ok ]]; then
  echo "peer: PocketBase $PB_VERSION (SQLite), superuser token on every request, request logs $( ((pb_logs)) && echo on || echo off)"
else
  echo "peer: $pb_state"
fi
if [[ $tk_state == ok ]]; then
  echo "tenantkit: $TK_COMMIT ($TK_DB), bootstrap super-admin key, APP_INTEGRATION_TEST=true"
else
  echo "tenantkit: $tk_state"
fi

# ---------------------------------------------------------------- helpers
# focus TARGET: resume TARGET's server, freeze every other one (unless --no-freeze).
focus() {
  local name
  for name in "${!PIDS[@]}"; do
    if [[ $name == "$1" ]] || ((freeze == 0)); then
      kill -CONT "${PIDS[$name]}" 2>/dev/null || true
    else
      kill -STOP "${PIDS[$name]}" 2>/dev/null || true
    fi
  done
}
thaw_all() {
  local name
  for name in "${!PIDS[@]}"; do kill -CONT "${PIDS[$name]}" 2>/dev/null || true; done
}

# probe METHOD URL BODYFILE [HEADER]: one request; sets PROBE_CODE, PROBE_SIZE, PROBE_EXCERPT, PROBE_BODY.
probe() {
  local method=$1 url=$2 body=$3 header=${4-} out
  local args=(-s -m 30 -X "$method" -o "$WORK/probe.out" -w '%{http_code} %{size_download}')
  [[ -n $header ]] && args+=(-H "$header")
  [[ -n $body ]] && args+=(-H 'Content-Type: application/json' --data-binary "@$body")
  out=$(curl "${args[@]}" "$url" 2>/dev/null) || out="000 0"
  PROBE_CODE=${out%% *}
  PROBE_SIZE=${out##* }
  PROBE_BODY=$(cat "$WORK/probe.out" 2>/dev/null || true)
  PROBE_EXCERPT=$(printf '%s' "$PROBE_BODY" | tr '\n\t' '  ' | cut -c1-160)
}

# wrk_run URL METHOD BODYFILE HEADERS SECONDS OUTFILE
wrk_run() {
  WRK_METHOD=$2 WRK_BODY_FILE=$3 WRK_HEADERS=$4 timeout $(($5 + 20)) \
    wrk -t "$threads" -c "$conns" -d "${5}s" --timeout 5s -s "$BENCH_DIR/wrk/bench.lua" "$1" >"$6" 2>&1 || true
}

# start_bare SIZE: a bare server answering SIZE-byte JSON bodies; sets BARE_PID and BARE_URL.
start_bare() {
  local port
  port=$(free_port) || die "no free port"
  "$WORK/bin/bare" -addr "127.0.0.1:$port" -size "$1" >>"$WORK/bare.log" 2>&1 &
  BARE_PID=$!
  BARE_URL="http://127.0.0.1:$port/api"
  wait_http "$BARE_URL/health" "$BARE_PID" 15 || die "bare server did not start: $(tail -3 "$WORK/bare.log")"
  PIDS[bare]=$BARE_PID
}
stop_bare() {
  stop_pid "$BARE_PID"
  BARE_PID=''
  unset 'PIDS[bare]'
}

# run_target SCENARIO TARGET ROUND: one wrk run (ROUND 0 is the unmeasured warm-up). Reads the
# scenario's locals (method, paths, bodies) from run_scenario.
run_target() {
  local name=$1 target=$2 round=$3 url header='' body secs=$seconds out
  case $target in
    tenantkit) url="$TK_URL$tk_path" header="X-Api-Key: $TK_KEY" body=$tk_body ;;
    pocketbase) url="$PB_URL$pb_path" header="Authorization: $PB_TOKEN" body=$pb_body ;;
    bare) url="$BARE_URL${tk_path:-$pb_path}" body=${tk_body:-$pb_body} ;;
  esac
  ((round == 0)) && secs=$warmup
  ((secs > 0)) || return 0
  out="$WORK/wrk/$name.$target.$round.txt"
  focus "$target"
  wrk_run "$url" "$method" "$body" "$header" "$secs" "$out"
  sleep 1
  ((round == 0)) && return 0
  local line kv k v requests=0 rps=0 p50=0 p99=0 errs=0 non2xx=0
  line=$(grep -m1 '^WRKRESULT' "$out" || true)
  if [[ -z $line ]]; then
    NOTE[$name/$target]="wrk failed: $(tail -2 "$out" | tr '\n' ' ' | cut -c1-160)"
    log "   $target round $round: wrk failed"
    return 0
  fi
  for kv in ${line#WRKRESULT }; do
    k=${kv%%=*} v=${kv#*=}
    case $k in
      requests) requests=$v ;;
      rps) rps=$v ;;
      p50_us) p50=$v ;;
      p99_us) p99=$v ;;
      connect | read | write | timeout) errs=$((errs + v)) ;;
      non2xx) non2xx=$v ;;
    esac
  done
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$target" "$round" "$rps" "$p50" "$p99" \
    "$requests" "$errs" "$non2xx" >>"$RESULTS"
  log "   $target round $round: $rps req/s, p50 $((p50 / 1000)).$(printf '%03d' $((p50 % 1000))) ms, p99 $((p99 / 1000)).$(printf '%03d' $((p99 % 1000))) ms, errors $errs, non-2xx $non2xx"
}

# run_scenario NAME METHOD TK_STATE TK_PATH TK_BODY PB_STATE PB_PATH PB_BODY
# TK_PATH / PB_PATH are relative to /api; an empty PB_PATH means the scenario has no peer.
run_scenario() {
  local name=$1 method=$2 tk_st=$3 tk_path=$4 tk_body=$5 pb_st=$6 pb_path=$7 pb_body=$8
  local targets=() size='' target round
  log "== $name"
  thaw_all
  if [[ $tk_st == ok ]]; then
    probe "$method" "$TK_URL$tk_path" "$tk_body" "X-Api-Key: $TK_KEY"
    if is_2xx "$PROBE_CODE"; then
      targets+=(tenantkit)
      size=$PROBE_SIZE
      SIZE[$name/tenantkit]=$PROBE_SIZE
    elif missing_route "$PROBE_CODE"; then
      NOTE[$name/tenantkit]="not available: $method /api${tk_path%%\?*} answers $PROBE_CODE"
    else
      NOTE[$name/tenantkit]="failed: $method /api${tk_path%%\?*} answers $PROBE_CODE $PROBE_EXCERPT"
    fi
  else
    NOTE[$name/tenantkit]=$tk_st
  fi
  if [[ -n $pb_path ]]; then
    if [[ $pb_st == ok ]]; then
      probe "$method" "$PB_URL$pb_path" "$pb_body" "Authorization: $PB_TOKEN"
      if is_2xx "$PROBE_CODE"; then
        targets+=(pocketbase)
        [[ -n $size ]] || size=$PROBE_SIZE
        SIZE[$name/pocketbase]=$PROBE_SIZE
      else
        NOTE[$name/pocketbase]="failed: $method /api${pb_path%%\?*} answers $PROBE_CODE $PROBE_EXCERPT"
      fi
    else
      NOTE[$name/pocketbase]=$pb_st
    fi
  fi
  if ((${#targets[@]} == 0)) || [[ -z $pb_path && ${targets[0]} != tenantkit ]]; then
    NOTE[$name/bare]="skipped: nothing to compare it with"
    log "   skipped: ${NOTE[$name/tenantkit]}"
    return 0
  fi
  start_bare "$size"
  SIZE[$name/bare]=$size
  targets+=(bare)
  log "   targets: ${targets[*]}; bare body $size bytes"
  for target in "${targets[@]}"; do run_target "$name" "$target" 0; done
  for round in $(seq 1 "$rounds"); do
    for target in "${targets[@]}"; do run_target "$name" "$target" "$round"; done
  done
  thaw_all
  stop_bare
}

# ---------------------------------------------------------------- bodies and seeding
values=$(tr -d '\n' <"$BENCH_DIR/bodies/records-create.values.json")
printf '{"entityId":"bench.items","values":%s}' "$values" >"$WORK/bodies/tk-create.json"
printf '%s' "$values" >"$WORK/bodies/pb-create.json"
if ((rules_dry)); then
  sed 's/^{/{"dryRun":true,/' "$BENCH_DIR/bodies/rules-execute.json" | tr -d '\n' >"$WORK/bodies/rules-execute.json"
else
  tr -d '\n' <"$BENCH_DIR/bodies/rules-execute.json" >"$WORK/bodies/rules-execute.json"
fi
tr -d '\n' <"$BENCH_DIR/bodies/payment-session.json" >"$WORK/bodies/payment-session.json"

tk_entities=$tk_state tk_toggles=$tk_state tk_rules=$tk_state
if [[ $tk_state == ok ]]; then
  # shellcheck disable=SC2153 # set by tenantkit.env
  tk_entities=$TK_ENTITIES tk_toggles=$TK_TOGGLES tk_rules=$TK_RULES
fi
tk_list=$tk_entities pb_list=$pb_state
if selected records-list-total || selected records-list-filter; then
  if [[ $pb_state == ok ]]; then
    log "seeding $records records into PocketBase"
    focus pocketbase
    if ! "$WORK/bin/seed" -url "$PB_URL/collections/items/records" -H "Authorization: $PB_TOKEN" \
      -n "$records" -c 8 -template '%VALUES%' >"$WORK/seed-pb.log" 2>&1; then
      pb_list="seeding failed: $(tail -1 "$WORK/seed-pb.log" | cut -c1-200)"
    fi
    cat "$WORK/seed-pb.log" >&2
  fi
  if [[ $tk_entities == ok ]]; then
    log "seeding $records records into tenantkit"
    focus tenantkit
    if ! "$WORK/bin/seed" -url "$TK_URL/entities/records" -H "X-Api-Key: $TK_KEY" \
      -n "$records" -c 8 -template '{"entityId":"bench.items","values":%VALUES%}' >"$WORK/seed-tk.log" 2>&1; then
      tk_list="seeding failed: $(tail -1 "$WORK/seed-tk.log" | cut -c1-200)"
    fi
    cat "$WORK/seed-tk.log" >&2
  fi
  thaw_all
  sleep 5 # let background work caused by the seeding (logs, events, checkpoints) finish first
  # What each store lists now (the list answers' own total), so a seeding gap shows in the report.
  held=()
  if [[ $pb_list == ok ]]; then
    n=$("$WORK/bin/seed" -url "$PB_URL/collections/items/records?page=1&perPage=1" \
      -H "Authorization: $PB_TOKEN" -get-field totalItems 2>&1 | tail -1)
    held+=("PocketBase lists $n")
  fi
  if [[ $tk_list == ok ]]; then
    n=$("$WORK/bin/seed" -url "$TK_URL/entities/records?entityId=bench.items&page=1&pageSize=1" \
      -H "X-Api-Key: $TK_KEY" -get-field total 2>&1 | tail -1)
    held+=("tenantkit lists $n")
  fi
  detail=$(printf '%s, ' "${held[@]}")
  echo "data: $records records seeded into each store before the list scenarios${held[*]:+ (${detail%, })}; records-create runs last"
fi
((rules_dry)) && echo "rules-execute: dryRun true (no execution logs written)" ||
  echo "rules-execute: dryRun false (each call writes its execution log rows)"

# ---------------------------------------------------------------- scenarios
LIST="/entities/records?entityId=bench.items&page=1&pageSize=20"
PB_LIST="/collections/items/records?page=1&perPage=20"
for s in "${RUN_ORDER[@]}"; do
  selected "$s" || continue
  case $s in
    records-create)
      run_scenario "$s" POST "$tk_entities" /entities/records "$WORK/bodies/tk-create.json" \
        "$pb_state" /collections/items/records "$WORK/bodies/pb-create.json" ;;
    records-list-total)
      run_scenario "$s" GET "$tk_list" "$LIST" '' "$pb_list" "$PB_LIST" '' ;;
    records-list-filter)
      run_scenario "$s" GET "$tk_list" "$LIST&cf_status=open&sortField=cf_total&sortDir=desc" '' \
        "$pb_list" "$PB_LIST&filter=%28status%3D%27open%27%29&sort=-total" '' ;;
    toggles-check)
      run_scenario "$s" GET "$tk_toggles" "/feature_toggles/check/boolean?identifier=bench_flag" '' '' '' '' ;;
    rules-execute)
      run_scenario "$s" POST "$tk_rules" /business_rules/sets/BENCH_SET/execute "$WORK/bodies/rules-execute.json" \
        '' '' '' ;;
    payment-session)
      run_scenario "$s" POST "$tk_state" /payment_gateways/sessions "$WORK/bodies/payment-session.json" '' '' '' ;;
  esac
done

# ---------------------------------------------------------------- report
# med SCENARIO TARGET COLUMN: median over the rounds of one result column (4 rps, 5 p50, 6 p99).
med() {
  awk -F'\t' -v n="$1" -v t="$2" -v c="$3" '$1 == n && $2 == t {print $c}' "$RESULTS" | sort -g |
    awk '{a[NR] = $1} END {if (NR == 0) exit; if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2}'
}
# spread SCENARIO TARGET: half the range of req/s over the rounds, as a share of the median ("7%").
spread() {
  local m
  m=$(med "$1" "$2" 4)
  awk -F'\t' -v n="$1" -v t="$2" -v m="$m" '$1 == n && $2 == t {k++; if (k == 1 || $4 < lo) lo = $4; if (k == 1 || $4 > hi) hi = $4}
    END {if (k < 2 || m <= 0) print "-"; else printf "%.0f%%", (hi - lo) / 2 / m * 100}' "$RESULTS"
}
# total SCENARIO TARGET COLUMN: sum over the rounds (7 requests, 8 errors, 9 non-2xx).
total() {
  awk -F'\t' -v n="$1" -v t="$2" -v c="$3" '$1 == n && $2 == t {s += $c} END {print s + 0}' "$RESULTS"
}
# valid SCENARIO TARGET: measured, and errors plus non-2xx at most 1% of the requests.
valid() {
  local req bad
  req=$(total "$1" "$2" 7)
  bad=$(($(total "$1" "$2" 8) + $(total "$1" "$2" 9)))
  ((req > 0 && bad * 100 <= req))
}
ratio() { # A B: A/B, or empty when either is missing or zero
  awk -v a="$1" -v b="$2" 'BEGIN {if (a == "" || b == "" || b + 0 == 0) exit; printf "%.4f", a / b}'
}
fmt_x() { awk -v r="$1" 'BEGIN {if (r >= 10) printf "%.0fx", r; else if (r >= 1) printf "%.1fx", r; else printf "%.2fx", r}'; }
fmt_pct() { awk -v r="$1" 'BEGIN {if (r < 0.1) printf "%.1f%%", r * 100; else printf "%.0f%%", r * 100}'; }
ms() { awk -v u="$1" 'BEGIN {printf "%.2f", u / 1000}'; }

# cmp SCENARIO A B STYLE: the ratio of A's and B's median req/s as "1.9x" (x) or "62%" (pct),
# "ERR" when either side had more than 1% errors, "n/a" when either is missing.
cmp() {
  local a b r
  a=$(med "$1" "$2" 4)
  b=$(med "$1" "$3" 4)
  if [[ -z $a || -z $b ]]; then
    echo n/a
    return
  fi
  if ! valid "$1" "$2" || ! valid "$1" "$3"; then
    echo ERR
    return
  fi
  r=$(ratio "$a" "$b")
  [[ -n $r ]] || { echo n/a; return; }
  if [[ $4 == x ]]; then fmt_x "$r"; else fmt_pct "$r"; fi
}

echo
printf '%-20s %-11s %10s %7s %9s %9s %8s %7s  %s\n' scenario target 'req/s' spread 'p50 ms' 'p99 ms' errors 'body B' note
for s in "${ALL_SCENARIOS[@]}"; do
  selected "$s" || continue
  for target in tenantkit pocketbase bare; do
    if [[ $target == pocketbase && ($s == toggles-check || $s == rules-execute || $s == payment-session) ]]; then
      continue
    fi
    rps=$(med "$s" "$target" 4)
    note=${NOTE[$s/$target]-}
    if [[ -n $rps ]]; then
      bad=$(($(total "$s" "$target" 8) + $(total "$s" "$target" 9)))
      valid "$s" "$target" || note="over 1% of the answers failed: ratios not valid${note:+; $note}"
      printf '%-20s %-11s %10.0f %7s %9s %9s %8s %7s  %s\n' "$s" "$target" "$rps" "$(spread "$s" "$target")" \
        "$(ms "$(med "$s" "$target" 5)")" "$(ms "$(med "$s" "$target" 6)")" "$bad" "${SIZE[$s/$target]-}" "$note"
    else
      printf '%-20s %-11s %10s %7s %9s %9s %8s %7s  %s\n' "$s" "$target" n/a '' '' '' '' '' "${note:-not measured}"
    fi
  done
done

echo
echo "req/s, p50, p99: median over the rounds; spread: half the req/s range over the rounds, over the median; errors: transport"
echo "errors plus answers with status >= 400, all rounds; body B: response body bytes (bare answers as many as tenantkit,"
echo "or as PocketBase where tenantkit was not measured)."
echo
printf '%-20s %14s %14s %14s\n' 'req/s ratios' tenantkit/PB tenantkit/bare PB/bare
for s in "${ALL_SCENARIOS[@]}"; do
  selected "$s" || continue
  case $s in
    toggles-check | rules-execute | payment-session) printf '%-20s %14s %14s %14s\n' "$s" - "$(cmp "$s" tenantkit bare pct)" - ;;
    *) printf '%-20s %14s %14s %14s\n' "$s" "$(cmp "$s" tenantkit pocketbase x)" "$(cmp "$s" tenantkit bare pct)" \
      "$(cmp "$s" pocketbase bare pct)" ;;
  esac
done

# session_ratio: tenantkit's payment-session req/s over its records-create req/s in this run
# (both one durable row and its event), "n/a" when either was not measured.
session_ratio() {
  local a b r
  a=$(med payment-session tenantkit 4)
  b=$(med records-create tenantkit 4)
  if [[ -z $a || -z $b ]]; then
    echo n/a
    return
  fi
  if ! valid payment-session tenantkit || ! valid records-create tenantkit; then
    echo ERR
    return
  fi
  r=$(ratio "$a" "$b")
  if [[ -n $r ]]; then fmt_pct "$r"; else echo n/a; fi
}
if selected payment-session; then
  printf '%-20s %14s\n' 'payment-session / records-create (tenantkit)' "$(session_ratio)"
fi

echo
summary=()
for s in "${ALL_SCENARIOS[@]}"; do
  selected "$s" || continue
  case $s in
    records-create) summary+=("records-create $(cmp "$s" tenantkit pocketbase x) PB") ;;
    records-list-total) summary+=("list-total $(cmp "$s" tenantkit pocketbase x) PB") ;;
    records-list-filter) summary+=("filter $(cmp "$s" tenantkit pocketbase x) PB") ;;
    toggles-check) summary+=("toggles $(cmp "$s" tenantkit bare pct) bare") ;;
    rules-execute) summary+=("rules $(cmp "$s" tenantkit bare pct) bare") ;;
    payment-session) summary+=("sessions $(session_ratio) creates") ;;
  esac
done
line=$(printf '%s, ' "${summary[@]}")
line=${line%, }
# "n/a PB" and "ERR bare" read oddly on a dashboard: keep just "n/a" or "ERR".
line=${line//"n/a PB"/n/a}
line=${line//"n/a creates"/n/a}
line=${line//"ERR creates"/ERR}
line=${line//"n/a bare"/n/a}
line=${line//"ERR PB"/ERR}
line=${line//"ERR bare"/ERR}
echo "$line"
