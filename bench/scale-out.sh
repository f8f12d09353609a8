#!/usr/bin/env bash
# Scale-out on Redis: `tools/call echo` throughput at 16 clients (`mcp
# bench`, legacy sessions) through nginx (round-robin, no affinity; the
# configuration of tests/scale-out/nginx.conf.template) with 1, 2 and 3
# `mcp serve everything --redis` instances, against one in-memory instance
# reached directly (the baseline) and behind the same nginx; then the
# Redis memory an idle legacy session takes (`MEMORY USAGE` of its keys,
# and `INFO memory` before and after opening N idle sessions).
#
# Usage: bench/scale-out.sh   (from anywhere; writes a Markdown report on stdout)
#   MCP=PATH        the mcp binary (default: the release build in the target
#                   directory, else the debug one; say which in the report)
#   SECONDS_RUN=10  seconds measured per run (after 2 s of warm-up)
#   CLIENTS=16      virtual clients
#   SESSIONS=2000   idle sessions opened for the memory figure
# Needs redis-server, redis-cli, nginx and python3 on the PATH.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh

target_dir="${CARGO_TARGET_DIR:-target}"
case "$target_dir" in /*) ;; *) target_dir="$(pwd)/$target_dir" ;; esac
mcp="$(mcp_binary)"
seconds="${SECONDS_RUN:-10}"
clients="${CLIENTS:-16}"
sessions="${SESSIONS:-2000}"
whole SECONDS_RUN "$seconds"
whole CLIENTS "$clients"
whole SESSIONS "$sessions"

work="$(mktemp -d)"
chmod 755 "$work"
pids=()
stop_all() {
  local pid
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  pids=()
}
trap 'stop_all; rm -rf "$work"' EXIT

# start_redis: a fresh redis-server; sets $redis_port.
start_redis() {
  redis_port="$(free_port)"
  redis-server --port "$redis_port" --bind 127.0.0.1 --save "" --appendonly no \
    >"$work/redis.log" 2>&1 &
  pids+=($!)
  await_listening "$!" "$redis_port" 10
}

# start_instance [--redis URL]: one `mcp serve everything --http`; sets
# $port and $pid. Hosts through nginx ($nginx_port) are allowed.
start_instance() {
  port="$(free_port)"
  "$mcp" serve everything --http "127.0.0.1:$port" --allow "127.0.0.1:$nginx_port" "$@" \
    >>"$work/instances.log" 2>&1 &
  pid=$!
  pids+=($pid)
  await_listening "$pid" "$port" 30
}

# start_nginx PORT...: nginx round-robin over the instances on PORTs,
# listening on $nginx_port, as an unprivileged foreground child.
start_nginx() {
  local prefix="$work/nginx-$nginx_port" servers="" p
  mkdir -p "$prefix/logs" "$prefix/tmp"
  for p in "$@"; do servers+="        server 127.0.0.1:$p max_fails=1 fail_timeout=2s;"$'\n'; done
  python3 - "$prefix" "$nginx_port" "$servers" <<'PY'
import pathlib, sys
prefix, port, servers = sys.argv[1:]
text = pathlib.Path("tests/scale-out/nginx.conf.template").read_text()
text = text.replace("@PREFIX@", prefix).replace("@LISTEN@", f"127.0.0.1:{port}")
text = text.replace("@UPSTREAMS@", servers.rstrip("\n"))
# Benchmark: no access log.
text = text.replace("access_log @PREFIX@/logs/access.log mcp;".replace("@PREFIX@", prefix), "access_log off;")
pathlib.Path(prefix, "nginx.conf").write_text(text)
PY
  local run=(nginx -p "$prefix" -c "$prefix/nginx.conf" -e "$prefix/logs/error.log")
  if [ "$(id -u)" = 0 ]; then
    chown -R 65534:65534 "$prefix"
    run=(setpriv --reuid=65534 --regid=65534 --clear-groups "${run[@]}")
  fi
  "${run[@]}" >"$prefix/nginx.out" 2>&1 &
  pids+=($!)
  await_listening "$!" "$nginx_port" 10
}

# redis_calls: the commands Redis has run since its statistics were reset
# (0 without a Redis).
redis_calls() {
  if [ -z "${redis_port:-}" ]; then echo 0; return; fi
  redis-cli -p "$redis_port" info commandstats |
    awk -F'[=,]' '/^cmdstat_/ { total += $2 } END { print total + 0 }'
}

# measure NAME URL: `mcp bench` at $clients, legacy sessions; prints a row
# (with the Redis commands per call, setup and warm-up included) and
# records the throughput in $work/NAME.
measure() {
  local name="$1" url="$2" json
  [ -n "${redis_port:-}" ] && redis-cli -p "$redis_port" config resetstat >/dev/null
  json="$("$mcp" bench --server "$url" --concurrency "$clients" --duration "$seconds" \
    --warmup 2 --era legacy --json)"
  python3 - "$name" "$json" "$work" "$(redis_calls)" <<'PY'
import json, pathlib, sys
name, text, work, commands = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3], int(sys.argv[4])
pathlib.Path(work, name).write_text(str(text["throughput"]))
base = pathlib.Path(work, "direct")
ratio = text["throughput"] / float(base.read_text()) if base.exists() else 1.0
l = text["latency_ms"]
per_call = f"{commands / text['requests']:.3f}" if commands else "-"
print(f"| {name} | {text['throughput']:.0f} | {ratio:.2f} | {l['p50']:.2f} | {l['p99']:.2f} "
      f"| {per_call} | {text['errors'] + text['failed']} |")
PY
}

echo "binary: \`$mcp\` ($("$mcp" --version)), modified $(date -u -r "$mcp" '+%Y-%m-%d %H:%M UTC')"
echo "commit of this checkout: $(git rev-parse --short HEAD); $(nproc) cores; $clients clients, ${seconds} s per run"
echo
echo "| setup | calls/s | vs direct | p50 ms | p99 ms | Redis commands per call | errors |"
echo "| --- | --- | --- | --- | --- | --- | --- |"

redis_port=""
nginx_port="$(free_port)"
start_instance
measure direct "http://127.0.0.1:$port/mcp"
start_nginx "$port"
measure "nginx, 1 in-memory" "http://127.0.0.1:$nginx_port/mcp"
stop_all

start_redis
redis_url="redis://127.0.0.1:$redis_port/0"
for n in 1 2 3; do
  nginx_port="$(free_port)"
  ports=()
  for _ in $(seq 1 "$n"); do
    start_instance --redis "$redis_url"
    ports+=("$port")
  done
  start_nginx "${ports[@]}"
  measure "nginx, $n on Redis" "http://127.0.0.1:$nginx_port/mcp"
  # Keep Redis, stop the instances and nginx.
  for pid in "${pids[@]:1}"; do kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; done
  pids=("${pids[0]}")
  redis-cli -p "$redis_port" flushall >/dev/null
done

echo
echo "Idle legacy sessions in Redis ($sessions sessions, one instance):"
nginx_port="$(free_port)"
start_instance --redis "$redis_url"
python3 - "$redis_port" "http://127.0.0.1:$port/mcp" "$sessions" <<'PY'
import http.client, json, subprocess, sys, urllib.parse
redis_port, url, count = sys.argv[1], urllib.parse.urlsplit(sys.argv[2]), int(sys.argv[3])

def redis(*args):
    return subprocess.run(["redis-cli", "-p", redis_port, *args], capture_output=True, text=True, check=True).stdout

def used():
    info = dict(line.split(":", 1) for line in redis("info", "memory").split() if ":" in line)
    return int(info["used_memory"])

conn = http.client.HTTPConnection(url.hostname, url.port)
headers = {"content-type": "application/json", "accept": "application/json, text/event-stream",
           "mcp-protocol-version": "2025-11-25"}

def post(body, session=None):
    h = dict(headers, **({"mcp-session-id": session} if session else {}))
    conn.request("POST", url.path, json.dumps(body), h)
    response = conn.getresponse()
    response.read()
    return response

before = used()
ids = []
for _ in range(count):
    r = post({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}})
    assert r.status == 200, r.status
    sid = r.getheader("mcp-session-id")
    assert post({"jsonrpc": "2.0", "method": "notifications/initialized"}, sid).status == 202
    ids.append(sid)
after = used()
keys = [k for k in redis("--scan", "--pattern", f"*{ids[0]}*").split() if k]
sizes = {k: int(redis("memory", "usage", k, "samples", "0").strip() or 0) for k in keys}
print(f"- `INFO memory` used_memory: {before} bytes before, {after} after: "
      f"{(after - before) / count:.0f} bytes per session")
print(f"- `MEMORY USAGE` of one session's keys ({len(keys)}): "
      + ", ".join(f"`{k.replace(ids[0], '<id>')}` {v} B" for k, v in sizes.items())
      + f"; {sum(sizes.values())} bytes in all")
PY
