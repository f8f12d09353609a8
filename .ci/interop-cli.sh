#!/usr/bin/env bash
# Interop of the `mcp` command line (tools, tool, resources, read, prompts,
# prompt, info) with real MCP servers from npm and PyPI, checked on what it
# prints:
#
#   filesystem       @modelcontextprotocol/server-filesystem, stdio, a temp
#                    fixture dir: its tools, read_text_file and list_directory
#                    of the fixture, no resources told as such, info --json
#   memory           @modelcontextprotocol/server-memory, stdio, a temp memory
#                    file (-e MEMORY_FILE_PATH): create_entities, then
#                    search_nodes and read_graph in later sessions find it
#   everything       @modelcontextprotocol/server-everything over stdio and in
#                    its Streamable HTTP mode (started here): tools, echo, a
#                    resource found by `resources --json` read back as the
#                    file it serves, prompts, simple-prompt and args-prompt,
#                    trigger-long-running-operation (and its progress bar on a
#                    terminal), toggle-simulated-logging's log line on stderr
#                    (--server-log debug), the task-only simulate-research-query
#                    with --era 2025-11-25, and its elicitation: refused
#                    without a terminal, answered on one (a pseudo-terminal)
#   time             mcp-server-time (PyPI): get_current_time timezone=UTC
#   git              mcp-server-git (PyPI), a temp repo with one commit and a
#                    change: git_status, git_log
#
# Uses the pinned packages of interop-host.sh (.ci/interop-install.sh, under
# ${CARGO_TARGET_DIR:-target}/interop-host), installing them if missing;
# nothing is fetched at run time. Every command is bounded by `timeout`;
# every process started is ended on exit. MCP_BIN=PATH uses that mcp binary
# instead of building mcp-cli. Each command's output:
# ${CARGO_TARGET_DIR:-target}/interop-cli/logs/.
set -euo pipefail
cd "$(dirname "$0")/.."
. .ci/retry.sh
. .ci/ports.sh

started=$SECONDS
. .ci/interop-install.sh

if [ -n "${MCP_BIN:-}" ]; then
  mcp="$MCP_BIN"
else
  cargo build -p mcp-cli
  mcp="$target_dir/debug/mcp"
fi
node_bin="$(command -v node)"
modules="$npm_dir/node_modules/@modelcontextprotocol"
everything_js="$modules/server-everything/dist/index.js"

logs="$target_dir/interop-cli/logs"
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

passed=0
fail() {
  echo "FAILED: $*" >&2
  echo "interop-cli: $passed passed, 1 failed" >&2
  exit 1
}

# expect WHAT [-o TEXT | -O REGEX | -e TEXT | -E REGEX | -x STATUS]... -- COMMAND...:
# runs COMMAND (30 s at most, stdin empty); it must exit with STATUS (0
# unless told), its stdout hold each TEXT (-o) and match each extended
# REGEX (-O), its stderr likewise (-e, -E). Prints `ok: WHAT`, or fails
# showing the command, its status, stdout and stderr. Leaves the output in
# $out and $err (files).
n=0
expect() {
  local what="$1" want=0 status bad="" flag pattern file
  local -a checks=()
  shift
  while [ "$1" != -- ]; do
    case "$1" in
      -x) want="$2" ;;
      -o | -O | -e | -E) checks+=("$1" "$2") ;;
      *) fail "expect: unknown option $1" ;;
    esac
    shift 2
  done
  shift
  n=$((n + 1))
  out="$logs/$n.out"
  err="$logs/$n.err"
  printf '%q ' "$@" >"$logs/$n.cmd"
  timeout 30 "$@" >"$out" 2>"$err" </dev/null && status=0 || status=$?
  [ "$status" = "$want" ] || bad="exit status $status, expected $want"
  set -- "${checks[@]}"
  while [ -z "$bad" ] && [ $# -gt 0 ]; do
    flag="$1" pattern="$2"
    shift 2
    case "$flag" in -o | -O) file="$out" ;; *) file="$err" ;; esac
    case "$flag" in
      -o | -e) grep -qF -- "$pattern" "$file" || bad="$(basename "$file" | cut -d. -f2) lacks: $pattern" ;;
      *) grep -qE -- "$pattern" "$file" || bad="$(basename "$file" | cut -d. -f2) does not match: $pattern" ;;
    esac
  done
  if [ -n "$bad" ]; then
    [ "$status" = 124 ] && bad="$bad (timed out after 30 s)"
    {
      echo "command: $(cat "$logs/$n.cmd")"
      echo "--- stdout:"
      cat "$out"
      echo "--- stderr:"
      cat "$err"
      echo "---"
    } >&2
    fail "$what: $bad"
  fi
  echo "ok: $what"
  passed=$((passed + 1))
}

# python3 $on_terminal TIMEOUT [EXPECT KEYS]... -- COMMAND...: runs COMMAND on a
# pseudo-terminal; whenever the next EXPECT shows in its output, types its
# KEYS (backslash escapes: '\r' is Enter, '\x1b[B' the down arrow). Prints
# the output; exits with the command's status, 124 when it outlives TIMEOUT
# seconds (its process group is then killed).
cat >"$tmp/on_terminal.py" <<'EOF'
import os, pty, select, signal, sys, time
sep = sys.argv.index("--")
limit, pairs, command = float(sys.argv[1]), sys.argv[2:sep], sys.argv[sep + 1:]
script = [(pairs[i].encode(), pairs[i + 1].encode().decode("unicode_escape").encode())
          for i in range(0, len(pairs), 2)]
pid, fd = pty.fork()
if pid == 0:
    os.execvp(command[0], command)
out, seen, end = b"", 0, time.time() + limit
while time.time() < end:
    if select.select([fd], [], [], 0.2)[0]:
        try:
            data = os.read(fd, 4096)
        except OSError:
            break
        if not data:
            break
        out += data
    while script and script[0][0] in out[seen:]:
        seen = out.index(script[0][0], seen) + len(script[0][0])
        os.write(fd, script.pop(0)[1])
sys.stdout.write(out.decode(errors="replace"))
if time.time() >= end:
    os.killpg(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    sys.exit(124)
sys.exit(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
EOF
on_terminal="$tmp/on_terminal.py"

# server-everything over stdio does not exit when its stdin closes once a
# call left a timer running in it (toggle-simulated-logging's interval, a
# task's time to live), and `mcp` waits for a stdio server's stdout to
# close before its SIGTERM and SIGKILL steps, with no bound: the call's
# result is never printed. Those calls run the server through this
# wrapper, which ends it 2 s after stdin closes.
cat >"$tmp/ends_at_eof.py" <<'EOF'
import os, subprocess, sys
child = subprocess.Popen(sys.argv[1:], stdin=subprocess.PIPE)
while chunk := os.read(0, 65536):
    child.stdin.write(chunk)
    child.stdin.flush()
child.stdin.close()
try:
    child.wait(2)
except subprocess.TimeoutExpired:
    child.terminate()
    child.wait()
EOF

# The fixtures: a directory with one file, a memory file, a git repo with
# one commit and a changed file.
fixture_dir="$tmp/files"
fixture_text="hello from the mcp cli interop fixture"
mkdir -p "$fixture_dir"
printf '%s\n' "$fixture_text" >"$fixture_dir/hello.txt"
memory_file="$tmp/memory.jsonl"
repo="$tmp/repo"
commit_message="interop cli fixture commit"
git init --quiet "$repo"
printf 'fixture\n' >"$repo/README"
git -C "$repo" add README
git -C "$repo" -c user.name=interop -c user.email=interop@example.invalid \
  commit --quiet -m "$commit_message"
printf 'changed\n' >>"$repo/README"

echo "-- filesystem (stdio)"
filesystem="$node_bin $modules/server-filesystem/dist/index.js $fixture_dir"
expect "filesystem: mcp tools lists read_text_file and list_directory" \
  -O '^read_text_file +.*path\*' -O '^list_directory ' -- "$mcp" tools -s "$filesystem"
expect "filesystem: mcp tool read_text_file prints the fixture's text" \
  -o "$fixture_text" -- "$mcp" tool -s "$filesystem" read_text_file path="$fixture_dir/hello.txt"
expect "filesystem: mcp tool list_directory lists the fixture" \
  -o "[FILE] hello.txt" -- "$mcp" tool -s "$filesystem" list_directory path="$fixture_dir"
expect "filesystem: mcp resources tells that the server has none" \
  -o "The server offers no resources." -- "$mcp" resources -s "$filesystem"
expect "filesystem: mcp info --json names the server" \
  -o '"name": "secure-filesystem-server"' -o '"protocolVersion": "2025-11-25"' -- "$mcp" info --json -s "$filesystem"

echo "-- filesystem parity: the official server and mcp serve filesystem, the same operations"
python3 .ci/filesystem-parity.py "$mcp" "$node_bin $modules/server-filesystem/dist/index.js" ||
  fail "filesystem parity"
passed=$((passed + 1))

echo "-- memory (stdio)"
memory="$node_bin $modules/server-memory/dist/index.js"
expect "memory: mcp tool create_entities creates an entity" \
  -o '"name": "interop_fixture"' -- "$mcp" tool -s "$memory" -e MEMORY_FILE_PATH="$memory_file" \
  create_entities 'entities=[{"name":"interop_fixture","entityType":"test","observations":["made by mcp tool"]}]'
grep -qF '"name":"interop_fixture"' "$memory_file" || fail "memory: $memory_file lacks the entity"
echo "ok: memory: the memory file holds the entity"
passed=$((passed + 1))
expect "memory: mcp tool search_nodes finds it in a new session" \
  -o '"name": "interop_fixture"' -o "made by mcp tool" -- \
  "$mcp" tool -s "$memory" -e MEMORY_FILE_PATH="$memory_file" search_nodes query=interop_fixture
expect "memory: mcp tool read_graph holds it" \
  -o '"name": "interop_fixture"' -- "$mcp" tool -s "$memory" -e MEMORY_FILE_PATH="$memory_file" read_graph

# server-everything's Streamable HTTP mode: `index.js streamableHttp`, its
# port from $PORT.
http_port="$(free_port)"
PORT="$http_port" "$node_bin" "$everything_js" streamableHttp >"$logs/everything-http.log" 2>&1 &
pids+=($!)
wait_for_port "$http_port" "$!" ||
  { cat "$logs/everything-http.log" >&2; fail "server-everything (streamableHttp) does not listen on $http_port"; }

everything_stdio="$node_bin $everything_js stdio"
for transport in stdio http; do
  if [ "$transport" = stdio ]; then
    server="$everything_stdio"
    lasting="python3 $tmp/ends_at_eof.py $everything_stdio"
  else
    server="http://127.0.0.1:$http_port/mcp"
    lasting="$server"
  fi
  echo "-- everything ($transport)"
  e="everything ($transport)"
  expect "$e: mcp info names the server" \
    -O '^Server: +mcp-servers/everything ' -- "$mcp" info -s "$server"
  expect "$e: mcp tools lists echo, trigger-long-running-operation, simulate-research-query" \
    -O '^echo +message\*' -O '^trigger-long-running-operation ' -O '^simulate-research-query ' -- \
    "$mcp" tools -s "$server"
  expect "$e: mcp tool echo message=hi" -O '^Echo: hi$' -- "$mcp" tool -s "$server" echo message=hi

  expect "$e: mcp resources --json" -o '"uri":' -- "$mcp" resources --json -s "$server"
  uri="$(python3 -c 'import json, sys
print(next(r["uri"] for r in json.load(open(sys.argv[1]))["resources"] if r["mimeType"] == "text/markdown"))' "$out")" ||
    fail "$e: mcp resources --json lists no text/markdown resource"
  doc="$(dirname "$everything_js")/docs/${uri##*/}"
  [ -f "$doc" ] || fail "$e: $uri is not one of the server's docs/ files"
  expect "$e: mcp read $uri prints the file it serves" \
    -o "$(head -n 1 "$doc")" -o "$(grep -v '^\s*$' "$doc" | tail -n 1)" -- "$mcp" read -s "$server" "$uri"

  expect "$e: mcp prompts lists simple-prompt and args-prompt" \
    -O '^simple-prompt ' -O '^args-prompt +city\* state' -- "$mcp" prompts -s "$server"
  expect "$e: mcp prompt simple-prompt" \
    -o "[user]" -o "This is a simple prompt without arguments." -- "$mcp" prompt -s "$server" simple-prompt
  expect "$e: mcp prompt args-prompt city=Lyon" -o "Lyon" -- "$mcp" prompt -s "$server" args-prompt city=Lyon

  expect "$e: mcp tool trigger-long-running-operation (2 s, 4 steps) succeeds" \
    -o "Long running operation completed. Duration: 2 seconds, Steps: 4." -- \
    "$mcp" tool -s "$server" trigger-long-running-operation duration=2 steps=4
  expect "$e: on a terminal, its progress bar reaches 100%" \
    -O '\] +100%' -o "Long running operation completed." -- \
    python3 "$on_terminal" 25 -- "$mcp" tool -s "$server" trigger-long-running-operation duration=2 steps=4

  # The server sends one log message, of a random level, at once.
  expect "$e: mcp tool toggle-simulated-logging --server-log debug shows its log line on stderr" \
    -o "Started simulated, random-leveled logging" \
    -E '^\[(debug|info|notice|warning|error|critical|alert|emergency)\] .*[Mm]essage' -- \
    "$mcp" tool -s "$lasting" --server-log debug toggle-simulated-logging

  expect "$e: mcp tool --era 2025-11-25 simulate-research-query runs it as a task" \
    -o "# Research Report: rust" -E '^simulate-research-query runs as task [^ ]+$' -E '^task [^ ]+: working \(Gathering sources' -- \
    "$mcp" tool -s "$lasting" --era 2025-11-25 simulate-research-query topic=rust
done

echo "-- everything (stdio): simulate-research-query's elicitation"
# Without a terminal mcp refuses the server's question and notes it on stderr;
# this server then goes on with its default interpretation. (Whether a poll
# sees the task waiting for input first depends on timing, so that is not
# checked.)
expect "everything (stdio): without a terminal, no form is answered and the task completes with the default" \
  -o "# Research Report: python (technical (default - elicitation unavailable))" \
  -E '^note: the server asked for user input' -- \
  "$mcp" tool -s "python3 $tmp/ends_at_eof.py $everything_stdio" --era 2025-11-25 \
  simulate-research-query topic=python ambiguous=true
# On a terminal: Answer, then the second choice of the list.
expect "everything (stdio): on a terminal, the elicitation form is answered and the task goes on with it" \
  -o 'The server asks: The research query "python" could have multiple interpretations' \
  -o "# Research Report: python (snake)" -- \
  python3 "$on_terminal" 25 "Answer it?" '\r' "Clarification" '\x1b[B\r' -- \
  "$mcp" tool -s "python3 $tmp/ends_at_eof.py $everything_stdio" --era 2025-11-25 \
  simulate-research-query topic=python ambiguous=true

echo "-- time (PyPI, stdio)"
expect "time: mcp tool get_current_time timezone=UTC prints the time" \
  -o '"timezone": "UTC"' -O '"datetime": "[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\+00:00"' -- \
  "$mcp" tool -s "$venv/bin/mcp-server-time --local-timezone UTC" get_current_time timezone=UTC

echo "-- git (PyPI, stdio)"
git_server="$venv/bin/mcp-server-git --repository $repo"
expect "git: mcp tool git_status shows the changed file" \
  -o "Repository status:" -O 'modified: +README' -- "$mcp" tool -s "$git_server" git_status repo_path="$repo"
expect "git: mcp tool git_log shows the commit" \
  -o "Message: $commit_message" -o "Commit: $(git -C "$repo" rev-parse HEAD)" -- \
  "$mcp" tool -s "$git_server" git_log repo_path="$repo" max_count=1

echo "interop with the mcp command line: all $passed checks passed in $((SECONDS - started)) s"
