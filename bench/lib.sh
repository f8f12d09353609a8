# Shared by the benchmark scripts (sourced, from the repository's root,
# with $target_dir set to an absolute or root-relative target directory).

# mcp_binary: the absolute path of the `mcp` to measure: $MCP if set, else
# the release build in the target directory, else the debug one; exits
# when there is none.
mcp_binary() {
  local mcp="${MCP:-}"
  if [ -z "$mcp" ]; then
    mcp="$target_dir/release/mcp"
    [ -x "$mcp" ] || mcp="$target_dir/debug/mcp"
  fi
  case "$mcp" in /*) ;; *) mcp="$(pwd)/$mcp" ;; esac
  [ -x "$mcp" ] || {
    echo "no mcp binary at $mcp: build one (cargo build --release -p mcp-cli) or set MCP" >&2
    exit 2
  }
  echo "$mcp"
}

# build_mcp [PROFILE]: the `mcp` command in the release profile, or in
# PROFILE as well (`profiling`: release code with line tables); an hour
# at most each.
build_mcp() {
  timeout 3600 cargo build --release --quiet -p mcp-cli
  if [ -n "${1:-}" ]; then
    timeout 3600 cargo build --profile "$1" --quiet -p mcp-cli
  fi
}

# build_rmcp_echo: rmcp-echo in release, its own project outside the
# workspace, built into the same target directory; an hour at most.
build_rmcp_echo() {
  timeout 3600 cargo build --release --quiet \
    --manifest-path bench/peers/rmcp-echo/Cargo.toml --target-dir "$target_dir"
}

# write_host_config MCP FILE: the config file of the `mcp host` rows, one
# server, `MCP serve everything` over stdio, with its tools unprefixed.
write_host_config() {
  python3 -c 'import json, sys
print(json.dumps({"mcpServers": {"everything": {
    "command": sys.argv[1], "args": ["serve", "everything"], "namespace": ""}}}))' \
    "$1" >"$2"
}

# free_port: a TCP port on 127.0.0.1 that nothing listens on now, below
# the ephemeral range (see tests/free_port.py).
free_port() {
  python3 tests/free_port.py
}

# listening PORT: whether something accepts connections on 127.0.0.1:PORT.
listening() {
  (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# await_listening PID PORT SECONDS: waits until something listens on
# 127.0.0.1:PORT (status 0), the process PID has exited (1), or SECONDS
# have passed (2).
await_listening() {
  local _
  for _ in $(seq 1 $(($3 * 10))); do
    if listening "$2"; then return 0; fi
    if ! kill -0 "$1" 2>/dev/null; then return 1; fi
    sleep 0.1
  done
  return 2
}

# whole NAME VALUE: exits 2, saying so, unless VALUE (the setting NAME) is
# a positive whole number.
whole() {
  if ! [[ "$2" =~ ^[1-9][0-9]*$ ]]; then
    echo "$1 must be a positive whole number, not \"$2\"" >&2
    exit 2
  fi
}
