#!/usr/bin/env bash
# Interop of `mcp host` (the gateway) with real MCP servers from npm and
# PyPI, driven by the official SDK clients:
#
#   one Claude-Desktop-style config file with six upstreams
#     filesystem       @modelcontextprotocol/server-filesystem, stdio, a temp fixture dir
#     memory           @modelcontextprotocol/server-memory, stdio, a temp memory file
#     everything       @modelcontextprotocol/server-everything, stdio
#     everything-http  the same server in its Streamable HTTP mode (started here)
#     time             mcp-server-time (PyPI), stdio
#     git              mcp-server-git (PyPI), stdio, a temp repo with one commit
#   `mcp host --config FILE --http 127.0.0.1:0` serving them as one server
#   the official Python SDK client (tests/interop/host_python_client.py):
#     legacy era (initialize) and modern era (2026-07-28, server/discover),
#     plus an upstream killed with SIGKILL and restarted by the host
#   the official TypeScript SDK client (tests/interop/host_ts_client.mjs):
#     legacy era only (@modelcontextprotocol/sdk 1.32.2 speaks no 2026-07-28)
#   two users signed in to `mcp host --oauth`, each with a server-memory
#     connection of their own ("isolation": "per-caller"; a test of
#     crates/mcp-cli/tests/oauth.rs, given the official server)
#
# Installs pinned versions under ${CARGO_TARGET_DIR:-target}/interop-host
# (npm/ and venv/), reused while the pins match; nothing is fetched at run
# time (the servers run from there, not through npx or uvx). Every process
# it starts is ended on exit. MCP_BIN=PATH uses that mcp binary instead of
# building mcp-cli. Logs: ${CARGO_TARGET_DIR:-target}/interop-host/logs/.
set -euo pipefail
cd "$(dirname "$0")/.."
. .ci/retry.sh
. .ci/ports.sh

started=$SECONDS
. .ci/interop-install.sh
cp tests/interop/host_ts_client.mjs "$npm_dir/"

if [ -n "${MCP_BIN:-}" ]; then
  mcp="$MCP_BIN"
else
  cargo build -p mcp-cli
  mcp="$target_dir/debug/mcp"
fi
node_bin="$(command -v node)"
modules="$npm_dir/node_modules/@modelcontextprotocol"
everything="$modules/server-everything/dist/index.js"

logs="$work/logs"
rm -rf "$logs"
mkdir -p "$logs"
tmp="$(mktemp -d)"
pids=()
cleanup() {
  local pid
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# The `ok` lines so far, of this script and of the clients; the summary.
passed=0
summary() {
  echo "interop-host: $passed passed, $1 failed"
}
ok() {
  echo "ok: $*"
  passed=$((passed + 1))
}
fail() {
  echo "FAILED: $*" >&2
  summary 1
  exit 1
}


# The fixtures: a directory with one file, a git repo with one commit, a
# memory file.
fixture_dir="$tmp/files"
fixture_file="$fixture_dir/hello.txt"
fixture_text="hello from the mcp host interop fixture"
mkdir -p "$fixture_dir"
printf '%s\n' "$fixture_text" >"$fixture_file"
repo="$tmp/repo"
commit_message="interop fixture commit"
git init --quiet "$repo"
printf 'fixture\n' >"$repo/README"
git -C "$repo" add README
git -C "$repo" -c user.name=interop -c user.email=interop@example.invalid \
  commit --quiet -m "$commit_message"

# server-everything's Streamable HTTP mode: `index.js streamableHttp`, its
# port from $PORT.
http_port="$(free_port)"
PORT="$http_port" "$node_bin" "$everything" streamableHttp >"$logs/everything-http.log" 2>&1 &
pids+=($!)
wait_for_port "$http_port" "$!" ||
  { cat "$logs/everything-http.log" >&2; fail "server-everything (streamableHttp) does not listen on $http_port"; }

config="$tmp/claude_desktop_config.json"
NODE="$node_bin" MODULES="$modules" FIXTURE_DIR="$fixture_dir" MEMORY_FILE="$tmp/memory.jsonl" \
  HTTP_PORT="$http_port" VENV="$venv" REPO="$repo" python3 - "$config" <<'EOF'
import json, os, sys
e = os.environ
servers = {
    "filesystem": {
        "command": e["NODE"],
        "args": [f"{e['MODULES']}/server-filesystem/dist/index.js", e["FIXTURE_DIR"]],
    },
    "memory": {
        "command": e["NODE"],
        "args": [f"{e['MODULES']}/server-memory/dist/index.js"],
        "env": {"MEMORY_FILE_PATH": e["MEMORY_FILE"]},
    },
    "everything": {
        "command": e["NODE"],
        "args": [f"{e['MODULES']}/server-everything/dist/index.js", "stdio"],
    },
    "everything-http": {"type": "http", "url": f"http://127.0.0.1:{e['HTTP_PORT']}/mcp"},
    "time": {"command": f"{e['VENV']}/bin/mcp-server-time", "args": ["--local-timezone", "UTC"]},
    "git": {"command": f"{e['VENV']}/bin/mcp-server-git", "args": ["--repository", e["REPO"]]},
}
with open(sys.argv[1], "w") as f:
    json.dump({"mcpServers": servers}, f, indent=2)
EOF

# start_host CONFIG NAME: runs `mcp host --config CONFIG` on a free port,
# its output in $logs/NAME.out and .log; sets host_pid, host_started, url
# and base once it prints its endpoint (90 s at most).
start_host() {
  local config="$1" name="$2" status
  host_out="$logs/$name.out"
  host_log="$logs/$name.log"
  RUST_LOG="${RUST_LOG:-info}" "$mcp" host --config "$config" --http 127.0.0.1:0 >"$host_out" 2>"$host_log" &
  host_pid=$!
  pids+=("$host_pid")
  host_started=$SECONDS
  url=""
  for _ in $(seq 1 900); do
    url="$(sed -n 's/^MCP endpoint: \(http:[^ ]*\/mcp\)$/\1/p' "$host_out")"
    [ -n "$url" ] && break
    if ! kill -0 "$host_pid" 2>/dev/null; then
      tail -n 50 "$host_log" >&2
      wait "$host_pid" && status=0 || status=$?
      fail "mcp host exited (status $status) before printing its endpoint"
    fi
    sleep 0.1
  done
  if [ -z "$url" ]; then
    tail -n 50 "$host_log" >&2
    fail "mcp host printed no endpoint within 90 s"
  fi
  base="${url%/mcp}"
}

# await_started LIMIT: polls the host's status (into $logs/status.json)
# until no server is starting for the first time, LIMIT seconds at most.
await_started() {
  local _
  for _ in $(seq 1 $(($1 * 10))); do
    curl -fsS "$base/status" >"$logs/status.json" || fail "GET /status"
    python3 -c 'import json, sys; sys.exit(any(s["state"] == "starting" for s in json.load(open(sys.argv[1]))["servers"]))' "$logs/status.json" && return 0
    sleep 0.1
  done
  return 1
}

echo "-- mcp host --config $config"
start_host "$config" host
ok "mcp host serves $url after $((SECONDS - host_started)) s"
# Served at once: health answers while the servers start (503 until one
# is ready).
health="$(curl -sS -o /dev/null -w '%{http_code}' "$base/healthz")" || fail "GET /healthz does not answer"
case "$health" in 200 | 503) ;; *) fail "GET /healthz answered $health" ;; esac
ok "GET /healthz answers at once ($health)"
await_started 120 || fail "servers still starting after 120 s"
ok "every server started within $((SECONDS - host_started)) s"
[ "$(curl -fsS "$base/healthz")" = ok ] || fail "GET /healthz does not answer ok"
ok "GET /healthz"
"$mcp" host status --url "$base" >"$logs/status.txt" || fail "mcp host status"
cat "$logs/status.txt"
python3 - "$logs/status.json" <<'EOF' || fail "GET /status: not every server is ready (see above)"
import json, sys
status = json.load(open(sys.argv[1]))
expected = ["filesystem", "memory", "everything", "everything-http", "time", "git"]
states = {s["name"]: s["state"] for s in status["servers"]}
if any(states.get(name) != "ready" for name in expected):
    sys.exit(f"FAILED: GET /status: states {states}, expected every one of {expected} ready")
if status.get("problems") or status.get("collisions"):
    sys.exit(f"FAILED: GET /status: problems {status.get('problems')}, collisions {status.get('collisions')}")
print(f"GET /status: all {len(expected)} servers ready, no problems, no collisions, {status['tools']} tools")
EOF
ok "GET /status: every server ready"
# The numbers of `mcp host status` stand right-aligned under their headings.
if python3 - "$logs/status.txt" "$logs/status.json" <<'EOF'; then
import json, sys
lines = open(sys.argv[1]).read().splitlines()
servers = {s["name"]: s for s in json.load(open(sys.argv[2]))["servers"]}
header, bad = lines[0], []
for line in lines[1:]:
    name = line.split()[0] if line.split() else ""
    if name not in servers:
        continue
    for column in ("tools", "resources", "prompts", "restarts"):
        end = header.index(column) + len(column)
        cell = line[:end].split()[-1] if line[:end].split() else ""
        if cell != str(servers[name][column]) or line[end:end + 1] not in ("", " "):
            bad.append(f"{name}: {column} {servers[name][column]} is not under its heading")
if bad:
    sys.exit(f"the numeric columns are not aligned under their headings: {bad[0]}")
EOF
  ok "mcp host status: the table's numbers stand under their headings"
else
  fail "mcp host status: the table's numbers stand under their headings"
fi

client_args=(--url "$url" --fixture "$fixture_file" --fixture-text "$fixture_text"
  --repo "$repo" --commit-message "$commit_message")
# run_client NAME COMMAND...: runs a client (120 s at most), counts its
# `ok` lines; on failure shows the end of the host's log.
run_client() {
  local name="$1" out status
  shift
  echo "-- $name"
  out="$logs/client-$(echo "$name" | tr -c 'A-Za-z0-9\n' - | tr 'A-Z' 'a-z').log"
  timeout 120 "$@" 2>&1 | tee "$out" && status=0 || status=$?
  passed=$((passed + $(grep -c '^ok' "$out" || true)))
  if [ "$status" != 0 ]; then
    [ "$status" = 124 ] && echo "(timed out after 120 s)" >&2
    echo "host log, last 40 lines ($host_log):" >&2
    tail -n 40 "$host_log" >&2
    fail "$name (exit $status)"
  fi
}
run_client "Python SDK client, legacy era" \
  "$venv/bin/python" tests/interop/host_python_client.py --era legacy "${client_args[@]}"
run_client "Python SDK client, 2026-07-28 era" \
  "$venv/bin/python" tests/interop/host_python_client.py --era modern "${client_args[@]}"
run_client "TypeScript SDK client, legacy era" \
  "$node_bin" "$npm_dir/host_ts_client.mjs" "${client_args[@]}"
run_client "Python SDK client, an upstream killed and restarted" \
  "$venv/bin/python" tests/interop/host_python_client.py --era legacy --restart memory "${client_args[@]}"

kill -0 "$host_pid" 2>/dev/null || fail "mcp host exited during the checks"
ok "mcp host still runs after the checks"
kill "$host_pid"

# Many servers started at once, as a first run or a busy laptop starts
# them: 24 on the official Python SDK and 3 on the TypeScript SDK, on
# this machine's cores. Each comes up in its own era, none restarted.
echo "-- mcp host with 24 Python SDK servers and 3 TypeScript SDK servers at once"
many="$tmp/many.json"
NODE="$node_bin" MODULES="$modules" VENV="$venv" python3 - "$many" <<'EOF'
import json, os, sys
e = os.environ
servers = {
    f"time{i:02d}": {"command": f"{e['VENV']}/bin/mcp-server-time", "args": ["--local-timezone", "UTC"]}
    for i in range(24)
}
for i in range(3):
    servers[f"everything{i}"] = {
        "command": e["NODE"],
        "args": [f"{e['MODULES']}/server-everything/dist/index.js", "stdio"],
    }
with open(sys.argv[1], "w") as f:
    json.dump({"mcpServers": servers}, f, indent=2)
EOF
start_host "$many" many
await_started 240 || fail "27 servers: some still starting after 240 s"
python3 - "$logs/status.json" <<'EOF' || { tail -n 40 "$host_log" >&2; fail "27 servers started at once: not all ready (see above)"; }
import json, sys
servers = json.load(open(sys.argv[1]))["servers"]
bad = [(s["name"], s["state"], s["restarts"], s.get("lastError")) for s in servers
       if s["state"] != "ready" or s["restarts"] != 0]
if len(servers) != 27 or bad:
    sys.exit(f"FAILED: {len(servers)} servers; not ready or restarted: {bad}")
eras = sorted({s["revision"] for s in servers})
print(f"27 servers ready, none restarted; revisions {eras}")
EOF
ok "27 servers started at once, all ready within $((SECONDS - host_started)) s, none restarted"
kill "$host_pid"

# Per-caller isolation with the official memory server: two users signed
# in to `mcp host --oauth` each get a connection (and a memory file) of
# their own, in both eras.
MCP_MEMORY_SERVER="$modules/server-memory/dist/index.js" \
  cargo test --quiet -p mcp-cli --test oauth two_signed_in_users_each_get_a_memory_of_their_own \
  >"$logs/isolation.log" 2>&1 || { cat "$logs/isolation.log" >&2; fail "per-caller isolation with server-memory"; }
ok "two signed-in users each get a memory of their own from server-memory (isolation = per-caller)"
echo "interop with mcp host: all checks passed in $((SECONDS - started)) s"
summary 0
