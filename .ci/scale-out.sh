#!/usr/bin/env bash
# Scale-out: one redis-server, three `mcp serve everything --redis`
# instances behind nginx (round-robin, no affinity), then the same with
# three `mcp host --redis` instances; tests/scale-out/driver.py checks both
# eras through nginx with the official Python SDK client and the mcp
# command line: calls spread over the instances, an SSE stream resumed on
# another instance after SIGKILL, cross-instance notifications and answers,
# a Redis restart. Cases listed in tests/scale-out/expected-failures.txt
# must fail, all others pass. Needs redis-server, nginx and the venv of
# .ci/run (mcp==2.3.0); every child is stopped on exit; bounded in time.
set -euo pipefail
cd "$(dirname "$0")/.."
. .ci/retry.sh

target_dir="${CARGO_TARGET_DIR:-target}"
case "$target_dir" in /*) ;; *) target_dir="$(pwd)/$target_dir" ;; esac
mcp="$target_dir/debug/mcp"
venv="$target_dir/interop-venv"
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/python" -c 'import httpx, mcp' 2>/dev/null ||
  retry "$venv/bin/pip" install --quiet --disable-pip-version-check "mcp==2.3.0" httpx
work="$(mktemp -d)"
# The driver's children: nginx may run as nobody, who must reach the files.
chmod 755 "$work"
driver=""
cleanup() {
  if [ -n "$driver" ]; then kill "$driver" 2>/dev/null || true; wait "$driver" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

status=0
for mode in serve host; do
  echo "-- scale-out: three mcp $mode --redis instances behind nginx"
  timeout --kill-after=10 110 "$venv/bin/python" tests/scale-out/driver.py \
    --mcp "$mcp" --mode "$mode" --work "$work/$mode" \
    --expected-failures tests/scale-out/expected-failures.txt &
  driver=$!
  if ! wait "$driver"; then
    status=1
    for log in "$work/$mode"/*.log "$work/$mode"/nginx/logs/error.log; do
      [ -f "$log" ] || continue
      echo "--- $log (last lines)"
      tail -n 20 "$log"
    done
  fi
  driver=""
done
exit "$status"
