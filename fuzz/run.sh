#!/usr/bin/env bash
# Builds the fuzz targets (cargo-fuzz, libFuzzer, AddressSanitizer) and runs
# each for SECONDS (default 60) on one core, seeded from the protocol's
# example messages in ../shared/spec and from the inputs below. The corpus
# each run grows, and any crash found, stay under the target directory:
#   ${CARGO_TARGET_DIR:-target}/fuzz/corpus/TARGET
#   ${CARGO_TARGET_DIR:-target}/fuzz/artifacts/TARGET
# Fails when a target crashes (the input that did is printed).
#
# Usage: fuzz/run.sh [SECONDS] [TARGET...]   (every target when none given)
# FUZZ_DEV=1 builds without optimisation: quicker to build, slower to run
# (what CI's short runs use).
# Needs cargo-fuzz on PATH; the machine's stable toolchain builds it with
# RUSTC_BOOTSTRAP=1 (libFuzzer's instrumentation flags are unstable ones).
set -euo pipefail
cd "$(dirname "$0")/.."
repo_root="$(pwd)"
seconds="${1:-60}"
shift || true
target_dir="${CARGO_TARGET_DIR:-target}"
case "$target_dir" in /*) ;; *) target_dir="$repo_root/$target_dir" ;; esac
work="$target_dir/fuzz"
export CARGO_TARGET_DIR="$work/build"
export RUSTC_BOOTSTRAP=1

all_targets=(jsonrpc_frame header_value sse uri_template cursor host_config oauth session)
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  targets=("${all_targets[@]}")
fi

profile="--release"
if [ "${FUZZ_DEV:-0}" = 1 ]; then
  profile="--dev"
fi
(cd fuzz && cargo fuzz build "$profile")

# seed TARGET NAME TEXT: one seed input.
seed() {
  mkdir -p "$work/corpus/$1"
  printf '%s' "$3" >"$work/corpus/$1/seed-$2"
}

spec="$repo_root/../shared/spec"
if [ -d "$spec" ]; then
  mkdir -p "$work/corpus/jsonrpc_frame" "$work/corpus/header_value"
  for file in "$spec"/*/examples/*/*.json; do
    name="$(basename "$(dirname "$file")")-$(basename "$file")"
    cp "$file" "$work/corpus/jsonrpc_frame/spec-$name"
    case "$name" in
      Tool-*|CallToolRequest*) cp "$file" "$work/corpus/header_value/spec-$name" ;;
    esac
  done
fi
seed jsonrpc_frame batch '[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/initialized"}]'
seed header_value base64 '=?base64?SGVsbG8sIOS4lueVjA==?='
seed header_value schema '{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"},"n":{"type":["integer","null"],"x-mcp-header":"N"}}}'
seed sse stream $'\x05: comment\r\nid: s:1-00ff\nevent: message\ndata: {"jsonrpc":"2.0"}\ndata: more\nretry: 3000\n\nid\ndata:\n\r\n'
seed uri_template plain $'test://template/{id}/data\ntest://template/7/data'
seed uri_template operators $'file:///{+path}{?q,lang}{#frag}{/seg*}{;p}{&x}\nfile:///a/b%20c?q=1&lang=en#top/x/y;p=2&x=3'
seed cursor bytes 'list-kind-and-a-cursor-text-of-some-length-0123456789'
seed host_config claude $'\x00{"mcpServers":{"fs":{"command":"npx","args":["-y","@modelcontextprotocol/server-filesystem","${workspaceFolder}"],"env":{"T":"${TOKEN}","H":"${env:HOME}","D":"${UNSET:-d}"}},"web":{"type":"http","url":"https://example.com/mcp","headers":{"Authorization":"Bearer ${input:tok}"}}}}'
seed host_config vscode $'\x00// comment\n{"servers":{"s":{"type":"sse","url":"http://127.0.0.1:1/sse"}},"inputs":[{"id":"tok","type":"promptString","password":true}],}'
seed host_config zed $'\x00{"context_servers":{"z":{"command":{"path":"z","args":[]},"settings":{}}}}'
seed host_config settings $'\x01[serve]\nhttp = "127.0.0.1:8080"\nallow = ["localhost"]\nmax_connections = 100\nsession_idle_timeout = 600\n[servers]\nrequest_timeout = 30.5\nbackoff_max = 1e300\n'
# oauth: a route byte, then the arbitrary-built request; plain text
# seeds still steer the fuzzer to the forms' shapes.
seed oauth authorize 'response_type=code&client_id=app&redirect_uri=http%3A%2F%2F127.0.0.1%3A9%2Fcallback&code_challenge=E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM&code_challenge_method=S256&state=s&scope=mcp&resource=http%3A%2F%2F127.0.0.1%3A8080%2Fmcp'
seed oauth token 'grant_type=authorization_code&code=abc&redirect_uri=http%3A%2F%2F127.0.0.1%3A9%2Fcallback&client_id=app&code_verifier=dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk'
seed oauth register '{"redirect_uris":["http://127.0.0.1:9/cb"],"token_endpoint_auth_method":"none","grant_types":["authorization_code","refresh_token"],"client_name":"x","jwks":{"keys":[]}}'

failed=0
for target in "${targets[@]}"; do
  mkdir -p "$work/corpus/$target" "$work/artifacts/$target"
  echo "-- fuzz $target: ${seconds}s"
  log="$work/$target.log"
  if (cd fuzz && cargo fuzz run "$profile" "$target" "$work/corpus/$target" -- \
      -max_total_time="$seconds" -max_len=65536 -rss_limit_mb=4096 -timeout=30 \
      -artifact_prefix="$work/artifacts/$target/" -print_final_stats=1) >"$log" 2>&1; then
    grep -E '^(stat::number_of_executed_units|stat::peak_rss_mb)|cov: ' "$log" | tail -3
  else
    failed=1
    echo "fuzz $target: FAILED; the log's end:"
    tail -40 "$log"
    ls -l "$work/artifacts/$target/"
  fi
done
exit "$failed"
