#!/usr/bin/env bash
# `mcp host` with a large catalog: 10, 1,000 and 10,000 tools (1 server x
# 10 tools, 20 servers x 50, 200 servers x 50; each server is
# bench/peers/many_tools.py, a stdio server on Python's standard library).
# For each, the host serves Streamable HTTP with a discovery view
# (`[views.find] discovery = true`), and `mcp bench` (1 client, 2026-07-28
# era) measures:
#   - tools/list, the first page and the last page (calls/s, p50);
#   - a walk of every page: pages x the mean of those two p50s, and timed
#     directly (Python, one keep-alive connection, median of 5 walks);
#   - tools/call of the last server's last tool (the name resolved end to
#     end; the upstream's own time is in it);
#   - search_tools {"query": "archive a folder report"} at /views/find/mcp
#     (and, once, the first search, which builds the view's index);
#   - the host process's VmRSS (not its children's) once every tool is
#     listed and again after the load;
# and how long the host took from its start until tools/list held every
# tool. Prints one Markdown table on stdout (progress on stderr).
#
# Usage: bash bench/catalog-scale.sh   (from anywhere; runs from the repo root)
#   MCP=PATH             the mcp binary (default: the release build in the
#                        target directory, else the debug one)
#   BENCH_DURATION=3     seconds measured per `mcp bench` run
#   BENCH_WARMUP=1       seconds of warm-up before each
#   READY_TIMEOUT=120    seconds allowed for a host to list every tool
#   CATALOG_SHAPES="1x10 20x50 200x50"   SERVERSxTOOLS per column; the last
#                        column is divided by the one before it
#   BENCH_KEEP=1         keep the work directory (configs, logs, JSON)
# Needs python3 and Linux (/proc).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh

target_dir="${CARGO_TARGET_DIR:-target}"
case "$target_dir" in /*) ;; *) target_dir="$(pwd)/$target_dir" ;; esac
mcp="$(mcp_binary)"
duration="${BENCH_DURATION:-3}"
warmup="${BENCH_WARMUP:-1}"
ready_timeout="${READY_TIMEOUT:-120}"
shapes="${CATALOG_SHAPES:-1x10 20x50 200x50}"
whole BENCH_DURATION "$duration"
[[ "$warmup" =~ ^[0-9]+$ ]] || { echo "BENCH_WARMUP must be a whole number, not \"$warmup\"" >&2; exit 2; }
whole READY_TIMEOUT "$ready_timeout"
for shape in $shapes; do
  [[ "$shape" =~ ^[1-9][0-9]*x[1-9][0-9]*$ ]] ||
    { echo "CATALOG_SHAPES: \"$shape\" is not SERVERSxTOOLS (such as 20x50)" >&2; exit 2; }
done
fixture="$(pwd)/bench/peers/many_tools.py"

work="$(mktemp -d "${TMPDIR:-/tmp}/catalog-scale.XXXXXX")"
host_pid=""

say() { echo "[catalog-scale] $*" >&2; }

# stop_host: stops the running host (SIGTERM: it stops its servers; after
# 15 s SIGKILL), then kills any of its servers still running, each in the
# process group the host gave it.
stop_host() {
  [ -n "$host_pid" ] || return 0
  local pid="$host_pid" kids kid _
  host_pid=""
  kids="$(ps -o pid= --ppid "$pid" 2>/dev/null || true)"
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 1 150); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  kill -KILL "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  for kid in $kids; do
    # Only a server of ours (the pid may have been reused since).
    if grep -qs many_tools "/proc/$kid/cmdline"; then
      kill -KILL -- "-$kid" 2>/dev/null || kill -KILL "$kid" 2>/dev/null || true
    fi
  done
}
cleanup() {
  stop_host
  if [ -n "${BENCH_KEEP:-}" ]; then say "kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# The helper: configs, waiting for the catalog, walking pages, the table.
cat >"$work/helper.py" <<'PY'
import http.client, importlib.util, json, os, pathlib, statistics, sys, time, urllib.parse

META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "catalog-scale", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {}}


class Modern:
    """2026-07-28 requests over one keep-alive connection."""

    def __init__(self, url):
        self.url = urllib.parse.urlsplit(url)
        self.conn = http.client.HTTPConnection(self.url.hostname, self.url.port, timeout=60)
        self.id = 0

    def request(self, method, params=None, name=None):
        self.id += 1
        params = dict(params or {}, _meta=META)
        headers = {"content-type": "application/json",
                   "accept": "application/json, text/event-stream",
                   "mcp-protocol-version": "2026-07-28", "mcp-method": method}
        if name:
            headers["mcp-name"] = name
        body = json.dumps({"jsonrpc": "2.0", "id": self.id, "method": method, "params": params})
        self.conn.request("POST", self.url.path, body, headers)
        response = self.conn.getresponse()
        text = response.read().decode()
        if response.getheader("content-type", "").startswith("text/event-stream"):
            message = None
            for line in text.splitlines():
                if line.startswith("data:"):
                    data = json.loads(line[5:])
                    if data.get("id") == self.id:
                        message = data
            if message is None:
                raise RuntimeError(f"{method}: no answer in the SSE stream")
        else:
            message = json.loads(text)
        if "error" in message:
            raise RuntimeError(f"{method}: HTTP {response.status}: {message['error']}")
        return message["result"]

    def walk(self):
        """Every page of tools/list: (pages, tools, the last page's cursor or None)."""
        pages, tools, cursor, last = 0, 0, None, None
        while True:
            result = self.request("tools/list", {"cursor": cursor} if cursor else {})
            pages += 1
            tools += len(result.get("tools", []))
            last = cursor
            cursor = result.get("nextCursor")
            if not cursor:
                return pages, tools, last


def config(servers, tools, fixture, out):
    entries = {f"s{i}": {"command": "python3", "args": [fixture, f"s{i}", str(tools)]}
               for i in range(servers)}
    pathlib.Path(out).write_text(json.dumps({"mcpServers": entries}, indent=1))


def last_tool(servers, tools, fixture):
    spec = importlib.util.spec_from_file_location("many_tools", fixture)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    print(f"s{servers - 1}__{module.tool(f's{servers - 1}', tools - 1)['name']}")


def wait(base, expected, timeout, pid, started, out):
    """Waits until tools/list holds `expected` tools; writes what it found."""
    deadline = started + timeout
    status, seen = {}, None
    while time.time() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            print(f"the host (pid {pid}) exited before listing its tools", file=sys.stderr)
            return 1
        try:
            conn = http.client.HTTPConnection("127.0.0.1", int(urllib.parse.urlsplit(base).port), timeout=10)
            conn.request("GET", "/status")
            status = json.loads(conn.getresponse().read())
            conn.close()
            if status.get("tools") == expected:
                pages, seen, cursor = Modern(base + "/mcp").walk()
                if seen == expected:
                    pathlib.Path(out).write_text(json.dumps({
                        "ready_s": time.time() - started, "pages": pages, "cursor": cursor}))
                    return 0
        except (OSError, ValueError, RuntimeError, http.client.HTTPException):
            pass
        time.sleep(0.2)
    states = {}
    for server in status.get("servers", []):
        states.setdefault(server.get("state"), []).append(server.get("name"))
    print(f"after {timeout} s the host lists {status.get('tools')} tools of {expected}"
          f" (by /status; {seen} by tools/list); servers: "
          + "; ".join(f"{k}: {len(v)} ({', '.join(v[:5])}{', ...' if len(v) > 5 else ''})"
                      for k, v in states.items())
          + (f"; problems: {status.get('problems')}" if status.get("problems") else ""),
          file=sys.stderr)
    return 2


def timed_walks(base, out, walks=5):
    client = Modern(base + "/mcp")
    client.walk()  # the connection opened, and warm
    times = []
    for _ in range(walks):
        t = time.perf_counter()
        client.walk()
        times.append((time.perf_counter() - t) * 1000)
    # The first search of the view builds its index.
    view = Modern(base + "/views/find/mcp")
    t = time.perf_counter()
    found = view.request("tools/call", {"name": "search_tools",
                                        "arguments": {"query": "archive a folder report"}},
                         name="search_tools")
    first_search = (time.perf_counter() - t) * 1000
    top = (found.get("structuredContent") or {}).get("tools") or [{}]
    pathlib.Path(out).write_text(json.dumps({
        "walk_ms": statistics.median(times), "walks_ms": times,
        "first_search_ms": first_search, "top_match": top[0].get("name")}))


def table(work, shapes):
    rows = [
        ("host up until tools/list holds every tool, s", "ready", "ready_s", 2),
        ("tools/list pages (100 tools each)", "ready", "pages", 0),
        ("tools/list first page, calls/s", "first", "rate", 0),
        ("tools/list first page, p50 ms", "first", "p50", 3),
        ("tools/list last page, calls/s", "last", "rate", 0),
        ("tools/list last page, p50 ms", "last", "p50", 3),
        ("full walk, pages x mean p50 of first and last, ms", "derived", "walk_est", 2),
        ("full walk, timed (Python, 1 keep-alive connection, median of 5), ms", "walk", "walk_ms", 2),
        ("tools/call of the last server's last tool, calls/s", "call", "rate", 0),
        ("tools/call of the last server's last tool, p50 ms", "call", "p50", 3),
        ("search_tools at /views/find/mcp, calls/s", "search", "rate", 0),
        ("search_tools at /views/find/mcp, p50 ms", "search", "p50", 3),
        ("first search_tools (builds the view's index), ms", "walk", "first_search_ms", 2),
        ("host VmRSS with every tool listed, MiB", "rss", "loaded", 1),
        ("host VmRSS after the load, MiB", "rss", "after", 1),
    ]
    data, notes = {}, []
    for shape in shapes:
        d = {}
        for part in ("ready", "walk", "rss"):
            p = pathlib.Path(work, shape, part + ".json")
            d[part] = json.loads(p.read_text()) if p.exists() else {}
        for run in ("first", "last", "call", "search"):
            p = pathlib.Path(work, shape, run + ".json")
            d[run] = {}
            if not p.exists() or not p.read_text().strip():
                err = pathlib.Path(work, shape, run + ".err")
                why = err.read_text().strip().splitlines()[-1:] if err.exists() else []
                notes.append(f"{shape} {run}: the run failed{': ' + why[0] if why else ''}")
                continue
            r = json.loads(p.read_text())
            d[run] = {"rate": r["throughput"], "p50": r["latency_ms"]["p50"]}
            bad = r.get("errors", 0) + r.get("tool_errors", 0) + r.get("failed", 0)
            if bad:
                notes.append(f"{shape} {run}: {r.get('errors', 0)} errors, {r.get('tool_errors', 0)} "
                             f"tool errors, {r.get('failed', 0)} without an answer of {r['requests']}")
        if d["first"] and d["last"] and d["ready"]:
            d["derived"] = {"walk_est": d["ready"]["pages"] * (d["first"]["p50"] + d["last"]["p50"]) / 2}
        else:
            d["derived"] = {}
        if d["walk"].get("top_match"):
            notes.append(f"{shape}: search_tools' best match: {d['walk']['top_match']}")
        data[shape] = d

    def tools(shape):
        s, t = shape.split("x")
        return int(s) * int(t)

    def cell(value, places):
        if value is None:
            return "n/a"
        return f"{value:,.{places}f}"

    heads = [f"{tools(s):,} tools ({s.replace('x', ' x ')})" for s in shapes]
    ratio = len(shapes) >= 2
    if ratio:
        heads.append(f"{tools(shapes[-1]):,} / {tools(shapes[-2]):,}")
    print("| measure | " + " | ".join(heads) + " |")
    print("| --- |" + " --- |" * len(heads))
    for label, part, key, places in rows:
        values = [data[s][part].get(key) for s in shapes]
        cells = [cell(v, places) for v in values]
        if ratio:
            a, b = values[-1], values[-2]
            cells.append(f"{a / b:.2f}" if a is not None and b else "n/a")
        print(f"| {label} | " + " | ".join(cells) + " |")
    print()
    one_page = [f"{tools(s):,}" for s in shapes if data[s]["ready"].get("pages") == 1]
    if one_page:
        notes.insert(0, f"{', '.join(one_page)} tools: one page, so the first page is the last.")
    notes.insert(0, "The estimated walk counts p50s only; the timed one also holds the latency's"
                 " tail and the client's JSON decoding.")
    for n in notes:
        print(f"- {n}")


if __name__ == "__main__":
    what, args = sys.argv[1], sys.argv[2:]
    if what == "config":
        config(int(args[0]), int(args[1]), args[2], args[3])
    elif what == "last-tool":
        last_tool(int(args[0]), int(args[1]), args[2])
    elif what == "wait":
        sys.exit(wait(args[0], int(args[1]), float(args[2]), int(args[3]), float(args[4]), args[5]))
    elif what == "walks":
        timed_walks(args[0], args[1])
    elif what == "table":
        table(args[0], args[1:])
PY
helper() { python3 "$work/helper.py" "$@"; }

# rss_mib PID: the VmRSS of process PID alone, in MiB.
rss_mib() {
  awk '/^VmRSS:/ { printf "%.1f", $2 / 1024 }' "/proc/$1/status"
}

# bench NAME URL ARGS...: one `mcp bench` run at 1 client in the 2026-07-28
# era, its JSON in $dir/NAME.json (empty if it failed; why in NAME.err).
bench() {
  local name="$1" url="$2"
  shift 2
  if ! "$mcp" bench --server "$url" --era modern --concurrency 1 \
    --duration "$duration" --warmup "$warmup" --json "$@" \
    >"$dir/$name.json" 2>"$dir/$name.err"; then
    say "$shape $name: mcp bench failed: $(tail -n 3 "$dir/$name.err" | tr '\n' ' ')"
    : >"$dir/$name.json"
  fi
}

say "binary $mcp; ${duration} s runs after ${warmup} s of warm-up; shapes: $shapes"
load_avg="$(cut -d' ' -f1-3 /proc/loadavg)"
run_started=$SECONDS
for shape in $shapes; do
  servers="${shape%x*}"
  per_server="${shape#*x}"
  expected=$((servers * per_server))
  dir="$work/$shape"
  mkdir -p "$dir"
  helper config "$servers" "$per_server" "$fixture" "$dir/config.json"
  printf '[views.find]\ndiscovery = true\n' >"$dir/settings.toml"
  port="$(free_port)"
  base="http://127.0.0.1:$port"

  started="$(date +%s.%N)"
  "$mcp" host --config "$dir/config.json" --settings "$dir/settings.toml" \
    --http "127.0.0.1:$port" >"$dir/host.log" 2>&1 &
  host_pid=$!
  say "$shape: host pid $host_pid on port $port, waiting for $expected tools (up to ${ready_timeout} s)"
  if ! helper wait "$base" "$expected" "$ready_timeout" "$host_pid" "$started" "$dir/ready.json"; then
    echo "catalog-scale: the host did not come up with $expected tools ($shape); the end of its log:" >&2
    tail -n 20 "$dir/host.log" >&2
    exit 1
  fi
  say "$shape: every tool listed after $(python3 -c 'import json,sys; print(round(json.load(open(sys.argv[1]))["ready_s"], 2))' "$dir/ready.json") s"
  loaded="$(rss_mib "$host_pid")"

  cursor="$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["cursor"] or "")' "$dir/ready.json")"
  bench first "$base/mcp" --method tools/list
  if [ -n "$cursor" ]; then
    bench last "$base/mcp" --method tools/list --params "{\"cursor\":\"$cursor\"}"
  else
    cp "$dir/first.json" "$dir/last.json" # one page: the first is the last
  fi
  helper walks "$base" "$dir/walk.json" || say "$shape: the timed walk failed"
  bench call "$base/mcp" --tool "$(helper last-tool "$servers" "$per_server" "$fixture")" --args '{"id":"x"}'
  bench search "$base/views/find/mcp" --tool search_tools --args '{"query":"archive a folder report"}'
  printf '{"loaded": %s, "after": %s}\n' "$loaded" "$(rss_mib "$host_pid")" >"$dir/rss.json"
  # The host's own complaints (not its "starting (no error yet)" lines,
  # which say which servers were still starting after --start-timeout).
  if grep -iE 'error|warn|panic' "$dir/host.log" | grep -qv 'no error yet'; then
    say "$shape: the host's log has errors or warnings:"
    grep -iE 'error|warn|panic' "$dir/host.log" | grep -v 'no error yet' | head -n 5 >&2
  fi
  stop_host
done

echo "\`mcp host\` with a large catalog: \`$mcp\` ($("$mcp" --version 2>/dev/null || echo "?")),"
echo "built $(date -u -r "$mcp" "+%Y-%m-%d %H:%M UTC"), checkout at commit $(git rev-parse --short HEAD 2>/dev/null || echo "?"); $(nproc) cores, load average $load_avg at the start;"
echo "\`mcp bench\` at 1 client, 2026-07-28 era, ${duration} s after ${warmup} s of warm-up; $((SECONDS - run_started)) s in all."
echo
# shellcheck disable=SC2086
helper table "$work" $shapes
