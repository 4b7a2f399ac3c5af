# shellcheck shell=bash
# Helpers shared by pocketbase.sh, tenantkit.sh and compare.sh. Source it; it defines functions
# and a few variables and runs nothing else. Every server these scripts start listens on
# 127.0.0.1 and is stopped by its own PID.

# shellcheck disable=SC2034 # used by the scripts that source this file
BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# The tenantkit checkout this harness belongs to (bench/ sits at its root).
# shellcheck disable=SC2034
REPO_DIR=$(cd "$BENCH_DIR/.." && pwd)
# shellcheck disable=SC2034
CACHE_DIR=${TENANTKIT_BENCH_CACHE:-$HOME/.cache/tenantkit-bench}

log() { printf '%s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }

# free_port prints a TCP port on 127.0.0.1 that nothing listens on.
free_port() {
  local p _
  for _ in $(seq 1 200); do
    p=$((20000 + (RANDOM * 32768 + RANDOM) % 40000))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
      echo "$p"
      return 0
    fi
  done
  return 1
}

# random_hex N prints N random bytes as hex.
random_hex() { head -c "$1" /dev/urandom | od -An -tx1 | tr -d ' \n'; }

# wait_http URL PID SECONDS: wait until URL answers 200 while PID is alive.
wait_http() {
  local url=$1 pid=$2 secs=$3 deadline code
  deadline=$((SECONDS + secs))
  while ((SECONDS < deadline)); do
    if ! kill -0 "$pid" 2>/dev/null; then
      return 2
    fi
    code=$(curl -s -o /dev/null -m 2 -w '%{http_code}' "$url" 2>/dev/null || true)
    [[ $code == 200 ]] && return 0
    sleep 0.2
  done
  return 1
}

# stop_pid PID: resume (in case it was frozen), SIGTERM, then SIGKILL after 10 s.
stop_pid() {
  local pid=$1 _
  [[ -n $pid ]] || return 0
  kill -0 "$pid" 2>/dev/null || return 0
  kill -CONT "$pid" 2>/dev/null || true
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 1 50); do
    kill -0 "$pid" 2>/dev/null || return 0
    sleep 0.2
  done
  kill -KILL "$pid" 2>/dev/null || true
}

# need_wrk installs wrk from Debian's packages when it is missing (root only).
need_wrk() {
  command -v wrk >/dev/null 2>&1 && return 0
  if [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null 2>&1; then
    log "wrk is missing; installing it from Debian's packages"
    apt-get update >&2 && apt-get install -y wrk >&2
  fi
  command -v wrk >/dev/null 2>&1 || die "wrk is not installed (apt-get install -y wrk)"
}

# api METHOD URL [BODY] [HEADER...]: one JSON request with curl. Sets HTTP_CODE and HTTP_BODY;
# HTTP_CODE is 000 when the server could not be reached.
api() {
  local method=$1 url=$2 body='' out
  shift 2
  if (($# > 0)); then
    body=$1
    shift
  fi
  local args=(-s -m 30 -X "$method" -H 'Content-Type: application/json' -H 'Accept: application/json')
  local h
  for h in "$@"; do args+=(-H "$h"); done
  [[ -n $body ]] && args+=(--data-binary "$body")
  out=$(curl "${args[@]}" -w $'\n%{http_code}' "$url" 2>/dev/null) || true
  HTTP_CODE=${out##*$'\n'}
  HTTP_BODY=${out%$'\n'*}
  [[ $HTTP_CODE =~ ^[0-9]{3}$ ]] || { HTTP_CODE=000; HTTP_BODY=''; }
}

# json_str FIELD: the first string value of "FIELD" in HTTP_BODY (flat lookup, no JSON parser needed
# for the ids and tokens the scripts read).
json_str() {
  printf '%s' "$HTTP_BODY" | tr -d '\n' | grep -o "\"$1\"[[:space:]]*:[[:space:]]*\"[^\"]*\"" | head -1 |
    sed 's/.*:[[:space:]]*"\(.*\)"$/\1/' || true
}

# excerpt: HTTP_BODY on one line, cut to 160 characters.
excerpt() { printf '%s' "$HTTP_BODY" | tr '\n\t' '  ' | cut -c1-160; }

# is_2xx CODE
is_2xx() { [[ $1 =~ ^2[0-9][0-9]$ ]]; }

# missing_route CODE: the answers of a route that is not built yet.
missing_route() { [[ $1 == 404 || $1 == 405 || $1 == 501 ]]; }

# write_env FILE NAME=VALUE...: append shell-quoted assignments to FILE and print them.
write_env() {
  local file=$1 kv name value
  shift
  for kv in "$@"; do
    name=${kv%%=*}
    value=${kv#*=}
    printf '%s=%q\n' "$name" "$value" | tee -a "$file"
  done
}
