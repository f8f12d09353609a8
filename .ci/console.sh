#!/usr/bin/env bash
# The web console of `mcp host` in a real headless Chromium (Debian's
# chromium, driven by npm playwright-core), against a real `mcp host` with
# our everything server and the official memory server (npm) behind it:
# tests/console/console.mjs. Screenshots of the main views are left in
# ${CARGO_TARGET_DIR:-target}/console/screenshots, and the page load with
# 500 tools is printed (not asserted).
set -euo pipefail
cd "$(dirname "$0")/.."
. .ci/retry.sh
. .ci/interop-install.sh

playwright_version="1.65.1"
chromium="$(command -v chromium || true)"
[ -n "$chromium" ] || { echo "console: no chromium on PATH (apt install chromium)" >&2; exit 1; }
"$chromium" --version

console_npm="$target_dir/console/npm"
if [ "$(node -e 'try { process.stdout.write(require(process.argv[1]).version) } catch {}' \
  "$console_npm/node_modules/playwright-core/package.json")" != "$playwright_version" ]; then
  rm -rf "$console_npm"
  mkdir -p "$console_npm"
  echo '{"name":"mcp-console-browser","private":true,"type":"module"}' >"$console_npm/package.json"
  retry npm install --prefix "$console_npm" --no-audit --no-fund --no-update-notifier --loglevel=error \
    --save-exact "playwright-core@$playwright_version"
fi

MCP="$target_dir/debug/mcp" CHROMIUM="$chromium" NODE_MODULES="$console_npm/node_modules" \
  MEMORY_SERVER="$npm_dir/node_modules/@modelcontextprotocol/server-memory/dist/index.js" \
  SHOTS="$target_dir/console/screenshots" MANY_TOOLS="$repo_root/bench/peers/many_tools.py" \
  timeout 600 node tests/console/console.mjs
