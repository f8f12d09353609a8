#!/usr/bin/env bash
# bench/ab.sh BASE [HEAD]: the hot paths of two commits, measured
# alternately in one run, so that what the machine does meanwhile weighs
# on both alike.
#
# Builds `mcp` of each commit (HEAD defaults to the working tree as
# committed: HEAD) in worktrees under ${CARGO_TARGET_DIR:-target}/ab/,
# sharing one target directory, so the dependencies are built once. Then,
# for each target, runs AB_ROUNDS pairs, BASE first then HEAD first in
# turn (BASE HEAD, HEAD BASE, ...), with
# HEAD's `mcp bench` as the load for both, and prints each side's median,
# the ratio HEAD / BASE of the medians, and the spread of the pairs'
# ratios (the lowest and highest). Above 1 HEAD is faster, except for
# memory, where above 1 it takes more.
#
#   stdio 1         mcp serve everything over stdio, one call at a time
#   stdio 64        the same, 64 calls in flight
#   http 1          mcp serve everything --http, 1 client
#   http 16         the same, 16 clients
#   host 16         mcp host --http in front of mcp serve everything over stdio, 16 clients
#   idle KiB        memory per idle legacy session (AB_SESSIONS of them; the least of the rounds)
#
# Settings: AB_ROUNDS (4), AB_DURATION (seconds per run, 5), AB_SESSIONS
# (2000), AB_PROFILE (the cargo profile, release), AB_ONLY (targets by
# the names above, separated by commas), AB_BASE_HOST_ARGS and
# AB_HEAD_HOST_ARGS (more flags for each side's `mcp host`: with BASE and
# HEAD the same commit, the cost of a setting, e.g. `--settings
# bench/policy-50.toml` against none). Needs python3. Every server it
# starts is stopped on exit; the load goes to 127.0.0.1 only.
set -euo pipefail
cd "$(dirname "$0")/.."
. .ci/ports.sh

[ $# -ge 1 ] || { echo "usage: bench/ab.sh BASE [HEAD]" >&2; exit 2; }
base_rev="$(git rev-parse --verify "$1^{commit}")"
head_rev="$(git rev-parse --verify "${2:-HEAD}^{commit}")"
rounds="${AB_ROUNDS:-4}"
duration="${AB_DURATION:-5}"
sessions="${AB_SESSIONS:-2000}"
profile="${AB_PROFILE:-release}"
only="${AB_ONLY:-}"

target_dir="${CARGO_TARGET_DIR:-target}"
case "$target_dir" in /*) ;; *) target_dir="$(pwd)/$target_dir" ;; esac
work="$target_dir/ab"
mkdir -p "$work"
out_dir="$profile"
[ "$profile" = dev ] && out_dir=debug

# build REV: the path of REV's `mcp`, built in a worktree of its own.
build() {
  local rev="$1" tree="$work/tree-${1:0:12}" bin="$work/mcp-${1:0:12}"
  if [ ! -x "$bin" ]; then
    [ -d "$tree" ] || git worktree add --detach --force "$tree" "$rev" >&2
    # The trees share the target directory, where their crates have the
    # same names: cargo takes one tree's crates for the other's. They are
    # cleaned before each build (the dependencies stay built).
    local packages
    packages="$(cd "$tree" && cargo metadata --no-deps --format-version 1 |
      python3 -c 'import json, sys; print(" ".join("-p " + p["name"] for p in json.load(sys.stdin)["packages"]))')"
    # shellcheck disable=SC2086
    (cd "$tree" && CARGO_TARGET_DIR="$target_dir" cargo clean --profile "$profile" $packages >&2)
    # Inside $(...) a failing command does not end the script by itself.
    (cd "$tree" && CARGO_TARGET_DIR="$target_dir" cargo build --profile "$profile" -p mcp-cli >&2) ||
      { echo "building $rev failed" >&2; return 1; }
    cp "$target_dir/$out_dir/mcp" "$bin"
  fi
  echo "$bin"
}

echo "building $base_rev (base) and $head_rev (head) with profile $profile" >&2
base="$(build "$base_rev")" || exit 1
head="$(build "$head_rev")" || exit 1
load="$head"

pids=()
tmp="$(mktemp -d)"
cleanup() {
  local pid
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$tmp"
}
trap cleanup EXIT

# serve NAME PORT COMMAND...: starts a server in the background and waits
# until it listens on PORT; sets server_pid.
serve() {
  local name="$1" port="$2"
  shift 2
  "$@" >"$tmp/$name.log" 2>&1 &
  server_pid=$!
  pids+=("$server_pid")
  wait_for_port "$port" "$server_pid" || { cat "$tmp/$name.log" >&2; return 1; }
}

stop() { kill "$1" 2>/dev/null || true; wait "$1" 2>/dev/null || true; }

# throughput MCP ARGS...: one load run of `mcp bench` against MCP's server;
# prints calls per second.
throughput() {
  local mcp="$1" target="$2" port json
  shift 2
  case "$target" in
    stdio)
      json="$("$load" bench --json -d "$duration" --server "$mcp serve everything" "$@")" ;;
    http)
      port="$(free_port)"
      serve http "$port" "$mcp" serve everything --http "127.0.0.1:$port"
      json="$("$load" bench --json -d "$duration" --server "http://127.0.0.1:$port/mcp" "$@")"
      stop "$server_pid" ;;
    host)
      port="$(free_port)"
      printf '{"mcpServers": {"everything": {"command": "%s", "args": ["serve", "everything"], "namespace": ""}}}\n' \
        "$mcp" >"$tmp/host.json"
      local extra="${AB_BASE_HOST_ARGS:-}"
      [ "$side" = head ] && extra="${AB_HEAD_HOST_ARGS:-}"
      # shellcheck disable=SC2086
      serve host "$port" "$mcp" host --config "$tmp/host.json" --http "127.0.0.1:$port" $extra
      json="$("$load" bench --json -d "$duration" --server "http://127.0.0.1:$port/mcp" "$@")"
      stop "$server_pid" ;;
  esac
  python3 -c 'import json, sys; r = json.loads(sys.argv[1]); print(r["throughput"] if not r["failed"] else "nan")' "$json"
}

# idle_kib MCP: KiB per idle legacy session in a server started afresh.
idle_kib() {
  local mcp="$1" port json
  port="$(free_port)"
  serve idle "$port" "$mcp" serve everything --http "127.0.0.1:$port"
  json="$("$load" bench --json --sessions "$sessions" --pid "$server_pid" --era legacy \
    -s "http://127.0.0.1:$port/mcp")"
  stop "$server_pid"
  python3 -c 'import json, sys; print(json.loads(sys.argv[1])["kib_per_session"])' "$json"
}

# measure NAME KIND FUNCTION ARGS...: AB_ROUNDS alternated pairs of
# FUNCTION MCP ARGS... (KIND: speed, the median; memory, the least), then
# the summary line.
measure() {
  local name="$1" kind="$2" run="$3" i b h
  shift 3
  if [ -n "$only" ] && [[ ",$only," != *",$name,"* ]]; then return 0; fi
  : >"$tmp/pairs"
  for i in $(seq 1 "$rounds"); do
    # Which side runs first alternates (ABBA...): a machine that warms
    # up or slows down over a pair weighs on both alike.
    if [ $((i % 2)) = 1 ]; then
      b="$(side=base "$run" "$base" "$@")"
      h="$(side=head "$run" "$head" "$@")"
    else
      h="$(side=head "$run" "$head" "$@")"
      b="$(side=base "$run" "$base" "$@")"
    fi
    echo "$b $h" >>"$tmp/pairs"
    echo "  $name, round $i: base $b, head $h" >&2
  done
  python3 - "$name" "$kind" "$tmp/pairs" <<'EOF'
import math, statistics, sys
name, kind, path = sys.argv[1:]
pairs = [tuple(map(float, line.split())) for line in open(path)]
pairs = [p for p in pairs if not any(math.isnan(x) for x in p)]
if not pairs:
    print(f"| {name} | n/a | n/a | n/a | every run failed |")
    sys.exit()
pick = min if kind == "memory" else statistics.median
base, head = pick(p[0] for p in pairs), pick(p[1] for p in pairs)
ratios = [h / b for b, h in pairs if b > 0]
print(f"| {name} | {base:,.1f} | {head:,.1f} | {head / base:.3f} | {min(ratios):.2f}-{max(ratios):.2f} |")
EOF
}

echo "| target | base ${base_rev:0:9} | head ${head_rev:0:9} | head / base | spread of the pairs |"
echo "|---|---:|---:|---:|---|"
measure "stdio 1" speed throughput stdio -c 1
measure "stdio 64" speed throughput stdio -c 1 --pipeline 64
measure "http 1" speed throughput http -c 1
measure "http 16" speed throughput http -c 16
measure "host 16" speed throughput host -c 16
measure "idle KiB" memory idle_kib
