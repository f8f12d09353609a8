#!/usr/bin/env bash
# Counts the instructions a server spends per `tools/call echo` over
# Streamable HTTP, under valgrind's callgrind: a figure the machine's load
# does not move, unlike throughput.
#
#   bash bench/instructions.sh              # mcp serve everything, legacy era
#   BENCH_ERA=modern bash bench/instructions.sh
#   BENCH_SERVER=bare bash bench/instructions.sh   # the bare axum handler
#   BENCH_SERVER=host bash bench/instructions.sh   # mcp host, in front of
#                                     mcp serve everything over stdio
#
# The server runs under callgrind with instrumentation off; `mcp bench`
# warms it up, then instrumentation is on for the measured run only, so
# start-up and warm-up are not counted. Prints the instructions per call
# and keeps the callgrind file for `callgrind_annotate`.
#
# Settings (environment):
#   BENCH_SERVER   mcp (this workspace's server, a profiling build with
#                  line tables), host (`mcp host`, the same build, with
#                  `mcp serve everything` as its stdio child, which is
#                  not counted) or bare (rmcp-echo bare, release)   (mcp)
#   BENCH_ERA      legacy or modern                                 (legacy)
#   BENCH_CLIENTS  virtual clients                                  (16)
#   BENCH_SECONDS  seconds measured                                 (4)
#   BENCH_PROFILE  the server's build profile: profiling, or release
#                  (the same code without line tables; no second build)
#                                                                   (profiling)
#
# Needs valgrind (callgrind_control). Everything runs on 127.0.0.1 and is
# bounded in time.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh

server="${BENCH_SERVER:-mcp}"
era="${BENCH_ERA:-legacy}"
clients="${BENCH_CLIENTS:-16}"
seconds="${BENCH_SECONDS:-4}"
case "$server" in mcp | host | bare) ;; *) echo "BENCH_SERVER must be mcp, host or bare" >&2; exit 2 ;; esac
case "$era" in legacy | modern) ;; *) echo "BENCH_ERA must be legacy or modern" >&2; exit 2 ;; esac
whole BENCH_CLIENTS "$clients"
whole BENCH_SECONDS "$seconds"
if ! command -v callgrind_control >/dev/null; then
  echo "needs valgrind (callgrind_control); on Debian: apt-get install valgrind" >&2
  exit 2
fi

target_dir="${CARGO_TARGET_DIR:-target}"
work="$target_dir/bench-instructions"
mkdir -p "$work"

log() {
  echo "[instructions] $*" >&2
}

# The load generator is a release build; the measured server a profiling
# one (release code with line tables, for callgrind_annotate).
mcp="$target_dir/release/mcp"
profile="${BENCH_PROFILE:-profiling}"
case "$profile" in profiling | release) ;; *) echo "BENCH_PROFILE must be profiling or release" >&2; exit 2 ;; esac
if [ "$server" = mcp ] || [ "$server" = host ]; then
  log "building mcp (release and $profile)"
  if [ "$profile" = release ]; then build_mcp; else build_mcp profiling; fi
  command=("$target_dir/$profile/mcp" serve everything --http)
  if [ "$server" = host ]; then
    # The host of compare.sh's rows.
    write_host_config "$mcp" "$work/host.json"
    command=("$target_dir/$profile/mcp" host --config "$work/host.json" --http)
  fi
else
  log "building mcp and rmcp-echo (release)"
  build_mcp
  build_rmcp_echo
  command=("$target_dir/release/rmcp-echo" bare)
fi

port="$(free_port)"
url="http://127.0.0.1:$port/mcp"
out="$work/callgrind.$server.$era.out"
valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$out" \
  "${command[@]}" "127.0.0.1:$port" >"$work/server.log" 2>&1 &
pid=$!
trap 'kill "$pid" 2>/dev/null || true' EXIT

# Under callgrind the server starts slowly: up to 60 s.
status=0
await_listening "$pid" "$port" 60 || status=$?
case "$status" in
  0) ;;
  1) log "the server exited at start (see $work/server.log)"; exit 1 ;;
  *) log "nothing listens on port $port after 60 s (see $work/server.log)"; exit 1 ;;
esac

load() {
  timeout -k 5 "$(($1 + 120))" "$mcp" bench -s "$url" -c "$clients" -d "$1" --warmup 0 \
    --era "$era" --tool echo --args '{"text":"hello"}' --json
}

log "$server, $era era, $clients clients: warming up"
load 1 >/dev/null
callgrind_control -i on "$pid" >/dev/null 2>&1
load "$seconds" >"$work/report.json"
callgrind_control -i off "$pid" >/dev/null 2>&1
kill "$pid"
wait "$pid" 2>/dev/null || true
trap - EXIT

python3 - "$out" "$work/report.json" "$server" "$era" "$clients" <<'EOF'
import json
import re
import sys

out, report, server, era, clients = sys.argv[1:6]
report = json.load(open(report))
calls = report["requests"]
if calls == 0:
    sys.exit("no call succeeded (%d errors)" % report["errors"])
total = None
for line in open(out):
    match = re.match(r"(?:totals|summary): (\d+)", line)
    if match:
        total = int(match.group(1))
if total is None:
    sys.exit("no totals in " + out)
print("%s, %s era, %s clients: %d instructions per call (%d calls, %d errors)"
      % (server, era, clients, total // calls, calls, report["errors"]))
print("callgrind_annotate --inclusive=yes %s   # where they go" % out)
EOF
