#!/usr/bin/env bash
# The README's run command and its first example: starts the command the
# README gives (in a debug build, on a free port), sends the README's curl
# request (headers and body taken from the README; sent with Python, so
# curl need not be installed) and checks the answer. Bounded in time;
# loopback only.
set -euo pipefail
cd "$(dirname "$0")/.."

run_line="$(grep -m1 -E '^cargo run --release -p mcp-cli -- host --http ' README.md)"
if [ -z "$run_line" ]; then
  echo "the README's run command was not found" >&2
  exit 1
fi
# The same command without --release (CI builds debug), on a free port.
read -r -a command <<<"${run_line/ --release/}"
command[${#command[@]} - 1]="127.0.0.1:0"

log="$(mktemp)"
"${command[@]}" >"$log" 2>&1 &
pid=$!
trap 'kill "$pid" 2>/dev/null || true; rm -f "$log"' EXIT

url=""
for _ in $(seq 1 1200); do
  url="$(sed -n 's/^MCP endpoint: \(http:[^ ]*\)$/\1/p' "$log" | head -1)"
  if [ -n "$url" ]; then break; fi
  if ! kill -0 "$pid" 2>/dev/null; then
    echo "the README's run command exited:" >&2
    cat "$log" >&2
    exit 1
  fi
  sleep 0.1
done
if [ -z "$url" ]; then
  echo "the README's run command printed no endpoint within 120 s:" >&2
  cat "$log" >&2
  exit 1
fi
echo "${command[*]}: $url"

python3 - "$url" <<'EOF'
import json
import shlex
import sys
import urllib.request

url = sys.argv[1]
readme = open("README.md").read()
start = readme.index("curl -s http://127.0.0.1:8080/mcp")
words = shlex.split(readme[start:readme.index("```", start)])
headers, body = {}, None
for flag, value in zip(words, words[1:]):
    if flag == "-H":
        name, _, text = value.partition(":")
        headers[name.strip()] = text.strip()
    elif flag == "-d":
        body = value
request = urllib.request.Request(url, data=body.encode(), headers=headers, method="POST")
with urllib.request.urlopen(request, timeout=30) as response:
    answer = json.load(response)
text = answer["result"]["content"][0]["text"]
print("the README's example answered:", text)
if "98" not in text:
    sys.exit("expected 2 * (3 + 4) ^ 2 = 98, got %r" % answer)
EOF
