#!/usr/bin/env bash
# The short soak (bench/soak.py, 60 s each): mixed load with session churn,
# slow readers and cut streams against `mcp serve everything --http` and
# against `mcp host --http` (its built-in servers); fails when the server's
# memory or open descriptors keep climbing, or calls fail. Debug build,
# loopback only, bounded in time. The 30-minute runs are in BENCHMARKS.md.
set -euo pipefail
cd "$(dirname "$0")/.."
. .ci/ports.sh

target_dir="${CARGO_TARGET_DIR:-target}"
case "$target_dir" in /*) ;; *) target_dir="$(pwd)/$target_dir" ;; esac
mcp="$target_dir/debug/mcp"
seconds="${SOAK_SECONDS:-60}"
work="$(mktemp -d)"
pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true; rm -rf "$work"' EXIT

# soak NAME PORT PID [soak.py options]: the load against one server.
soak() {
  local name="$1" port="$2" pid="$3"
  shift 3
  if ! wait_for_port "$port" "$pid"; then
    echo "$name did not start:" >&2
    cat "$work/$name.log" >&2
    return 1
  fi
  echo "-- soak: $name, ${seconds}s"
  timeout $((seconds + 120)) python3 bench/soak.py --url "http://127.0.0.1:$port/mcp" \
    --pid "$pid" --seconds "$seconds" --interval 5 --check "$@"
}

port="$(free_port)"
"$mcp" serve everything --http "127.0.0.1:$port" --session-idle-timeout 5 >"$work/server.log" 2>&1 &
pids+=($!)
soak server "$port" "$!"

port="$(free_port)"
printf '[serve]\nsession_idle_timeout = 5\n' >"$work/settings.toml"
(cd "$work" && exec "$mcp" host --http "127.0.0.1:$port" --settings settings.toml) >"$work/host.log" 2>&1 &
pids+=($!)
soak host "$port" "$!" --echo-tool everything__echo \
  --notify-tool everything__test_trigger_tool_change --slow-tool everything__test_tool_slow
