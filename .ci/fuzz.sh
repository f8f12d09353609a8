#!/usr/bin/env bash
# The fuzz targets (fuzz/, cargo-fuzz with libFuzzer), each run for a short
# bounded time: a crash fails CI. cargo-fuzz is installed from crates.io
# into the target directory once (pinned); the long runs are in FUZZING.md.
set -euo pipefail
cd "$(dirname "$0")/.."
. .ci/retry.sh

cargo_fuzz_version="0.13.2"
target_dir="${CARGO_TARGET_DIR:-target}"
case "$target_dir" in /*) ;; *) target_dir="$(pwd)/$target_dir" ;; esac
tools="$target_dir/tools"
if ! "$tools/bin/cargo-fuzz" --version 2>/dev/null | grep -q "$cargo_fuzz_version"; then
  retry cargo install --quiet --locked --root "$tools" cargo-fuzz --version "$cargo_fuzz_version"
fi
export PATH="$tools/bin:$PATH"
FUZZ_DEV=1 bash fuzz/run.sh "${FUZZ_SECONDS:-15}"
