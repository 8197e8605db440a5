#!/usr/bin/env bash
# The adapters inside the real engines, on CPU:
#
#   bash python/test-engines.sh [pytest args...]
#
# Installs transformers (with torch), vLLM and SGLang (each pinned, in a
# virtual environment of its own: vLLM's and SGLang's pins conflict) and
# builds llama.cpp from llama-cpp-python's sdist (about 5 minutes once) into a cache outside the checkout, keyed by
# their versions and reused across runs ($TOOLDEC_ENGINES, default
# ~/.cache/tooldec/engines; a fresh machine downloads about 14 GB, hard
# links shared by uv's cache, in about two minutes), installs the tooldec
# wheel built by python/test.sh's environment into each, and runs the
# real-engine tests there with TOOLDEC_REQUIRE_ENGINES=1 (no skipping),
# together with the adapters' own tests (which python/test.sh runs against
# tests/standins).
# Needs TOOLDEC_DATA (SmolLM2's GGUF and tokenizer) and network access to
# PyPI on the first run. Run after python/test.sh, whose compiled test
# environment (python/target/venv, with maturin) it uses.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
PYTHON="${PYTHON:-python3}"
CACHE="${TOOLDEC_ENGINES:-$HOME/.cache/tooldec/engines}"
VLLM=0.33.0
SGLANG=0.5.23
TRANSFORMERS=5.24.0
TORCH=2.14.1
# llama.cpp as llama-cpp-python vendors it (0.3.36: llama.cpp @0c1e570).
LLAMA_CPP_PYTHON=0.3.36
start=$(date +%s)
say() { printf '== %s (%ss)\n' "$*" "$(($(date +%s) - start))"; }

if [ -z "${TOOLDEC_DATA:-}" ]; then
  echo "TOOLDEC_DATA unset: the real-engine tests need SmolLM2 from the data" >&2
  exit 1
fi
DATA="$(cd "$ROOT" && cd "$TOOLDEC_DATA" && pwd)"
export TOOLDEC_DATA="$DATA" TOOLDEC_REQUIRE_ENGINES=1 OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1

# uv installs from its cache by hard links: the engines' shared wheels
# (torch's CUDA libraries above all) are stored once.
mkdir -p "$CACHE"
UV="$CACHE/uv/bin/uv"
if [ ! -x "$UV" ]; then
  say "installing uv into $CACHE/uv"
  "$PYTHON" -m venv "$CACHE/uv"
  "$CACHE/uv/bin/python" -m pip install -q uv==0.13.9
fi
# uv's default cache (~/.cache/uv) is on the same filesystem: hard links.

engine_env() { # dir requirement... (installed once, then reused)
  local dir="$1"
  shift
  if [ ! -f "$dir/.complete" ]; then
    say "installing $* into $dir"
    rm -rf "$dir"
    "$UV" venv -q --python "$(command -v "$PYTHON")" "$dir"
    "$UV" pip install -q --python "$dir/bin/python" "$@"
    touch "$dir/.complete"
  fi
}

say "building the tooldec wheel"
VPY="${TOOLDEC_VENV:-$HERE/target/venv}/bin/python"
[ -x "$VPY" ] || { echo "no $VPY: run python/test.sh first" >&2; exit 1; }
rm -rf "$HERE/target/engine-wheel"
(cd "$HERE" && "$VPY" -m maturin build --release -q -o "$HERE/target/engine-wheel")
WHEEL="$(ls "$HERE"/target/engine-wheel/tooldec-*.whl)"

run() { # dir "test-file..." [pytest args...]
  local dir="$1" tests
  read -r -a tests <<<"$2"
  "$UV" pip install -q --python "$dir/bin/python" --no-deps --reinstall "$WHEEL"
  say "pytest ${tests[*]} in $(basename "$dir")"
  (cd "$HERE/tests" && "$dir/bin/python" -m pytest -q -p no:cacheprovider -W ignore "${tests[@]}" "${@:3}")
}

HF_ENV="$CACHE/transformers-$TRANSFORMERS"
SG_ENV="$CACHE/sglang-$SGLANG"
VL_ENV="$CACHE/vllm-$VLLM"
# With what the tests use: gguf (SmolLM2 in transformers), pytest, jsonschema.
TEST_DEPS=(gguf accelerate pytest jsonschema)
engine_env "$HF_ENV" "torch==$TORCH" "transformers==$TRANSFORMERS" "${TEST_DEPS[@]}"
engine_env "$SG_ENV" "sglang==$SGLANG" "${TEST_DEPS[@]}"
engine_env "$VL_ENV" "vllm==$VLLM" "${TEST_DEPS[@]}"
# Python users need no Rust: the built wheel alone, in a fresh virtual
# environment (numpy from the index), gives the compiler and the runtime.
say "the wheel in a fresh virtual environment"
CLEAN="$HERE/target/clean-venv"
rm -rf "$CLEAN"
"$UV" venv -q --python "$(command -v "$PYTHON")" "$CLEAN"
"$UV" pip install -q --python "$CLEAN/bin/python" "$WHEEL"
(
  cd "$(mktemp -d)"
  PATH="/usr/bin:/bin" "$CLEAN/bin/tooldec-compile" "$ROOT/grammars/examples/weather.json" \
    --format hermes -q -o weather.tdm
  PATH="/usr/bin:/bin" "$CLEAN/bin/python" - "$ROOT/grammars/examples/weather.json" <<'PY'
import json, sys
import tooldec

art = tooldec.Artifact.open("weather.tdm")
tools = json.load(open(sys.argv[1]))
again = tooldec.Compiler.gpt2().compile(tools, format="hermes")
assert again.metadata_json == art.metadata_json, "the command and tooldec.Compiler differ"
call = '<tool_call>\n{"name": "get_time", "arguments": {"timezone": "UTC"}}\n</tool_call>'
assert art.parse(call)[0]["name"] == "get_time"
print("fresh venv: tooldec-compile and tooldec.Compiler agree;", len(art.tools), "tools")
PY
)

# llama.cpp's libllama, from the sources llama-cpp-python vendors. These
# machines' CPUs have AMX, which a native build uses and which dies with
# SIGILL here: disabled.
LL="$CACHE/llama.cpp-$LLAMA_CPP_PYTHON"
if [ ! -f "$LL/.complete" ]; then
  say "building llama.cpp from llama-cpp-python $LLAMA_CPP_PYTHON into $LL"
  rm -rf "$LL"
  mkdir -p "$LL"
  engine_env "$CACHE/buildtools" cmake ninja
  "$PYTHON" -m pip download -q --no-binary llama-cpp-python --no-deps \
    "llama-cpp-python==$LLAMA_CPP_PYTHON" -d "$LL"
  tar xzf "$LL/llama_cpp_python-$LLAMA_CPP_PYTHON.tar.gz" -C "$LL"
  ln -sfn "llama_cpp_python-$LLAMA_CPP_PYTHON/vendor/llama.cpp" "$LL/src"
  NOAMX="-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"
  PATH="$CACHE/buildtools/bin:$PATH" cmake -S "$LL/src" -B "$LL/build" -G Ninja \
    -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=ON -DGGML_NATIVE=ON \
    -DCMAKE_C_FLAGS="$NOAMX" -DCMAKE_CXX_FLAGS="$NOAMX" -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF \
    -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF \
    -DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_COMMON=OFF >/dev/null
  PATH="$CACHE/buildtools/bin:$PATH" cmake --build "$LL/build" -j2 --target llama >/dev/null
  touch "$LL/.complete"
fi
say "building libtooldec (release)"
(cd "$ROOT" && cargo build --release -q -p tooldec-capi)
export TOOLDEC_LLAMA_CPP="$LL" TOOLDEC_LIB="${CARGO_TARGET_DIR:-$ROOT/target}/release"
say "pytest test_real_llama.py"
(cd "$HERE/tests" && "$VPY" -m pytest -q -p no:cacheprovider -W ignore test_real_llama.py "$@")

# The adapters' own tests (test_hf.py, test_sglang.py, test_vllm.py, which
# python/test.sh runs against tests/standins) run here against the real
# packages too: what the stand-ins claim of the engines is checked.
ART="$HERE/target/test-artifacts"
mkdir -p "$ART"
"$CLEAN/bin/tooldec-compile" "$ROOT/grammars/examples/weather.json" --format hermes \
  --vocab-size 50304 --max-tokens 96 -q -o "$ART/weather-hermes-padded.tdm"
export TOOLDEC_HERMES_TDM="$ART/weather-hermes-padded.tdm"
run "$HF_ENV" "test_hf.py test_real_hf.py" "$@"
run "$SG_ENV" "test_sglang.py test_real_sglang.py" "$@"
run "$VL_ENV" "test_vllm.py test_real_vllm.py" "$@"
say "done"
