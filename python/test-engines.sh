#!/usr/bin/env bash
# The adapters inside the real engines, on CPU:
#
#   bash python/test-engines.sh [pytest args...]
#
# Installs vLLM and SGLang (each pinned, in a virtual environment of its
# own: their pins conflict) into a cache outside the checkout, keyed by
# their versions and reused across runs ($TOOLDEC_ENGINES, default
# ~/.cache/tooldec/engines; a fresh machine downloads about 14 GB, hard
# links shared by uv's cache, in about two minutes), installs the tooldec
# wheel built by python/test.sh's environment into each, and runs the
# real-engine tests there with TOOLDEC_REQUIRE_ENGINES=1 (no skipping).
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

engine_env() { # dir requirement...
  local dir="$1"
  shift
  if [ ! -f "$dir/.complete" ]; then
    say "installing $* into $dir"
    rm -rf "$dir"
    "$UV" venv -q --python "$(command -v "$PYTHON")" "$dir"
    "$UV" pip install -q --python "$dir/bin/python" "$@" gguf accelerate pytest
    touch "$dir/.complete"
  fi
}

say "building the tooldec wheel"
VPY="${TOOLDEC_VENV:-$HERE/target/venv}/bin/python"
[ -x "$VPY" ] || { echo "no $VPY: run python/test.sh first" >&2; exit 1; }
rm -rf "$HERE/target/engine-wheel"
(cd "$HERE" && "$VPY" -m maturin build --release -q -o "$HERE/target/engine-wheel")
WHEEL="$(ls "$HERE"/target/engine-wheel/tooldec-*.whl)"

run() { # dir test-file
  local dir="$1" test="$2"
  "$UV" pip install -q --python "$dir/bin/python" --no-deps --reinstall "$WHEEL"
  say "pytest $test in $(basename "$dir")"
  (cd "$HERE/tests" && "$dir/bin/python" -m pytest -q -p no:cacheprovider -W ignore "$test" "${@:3}")
}

SG_ENV="$CACHE/sglang-$SGLANG"
VL_ENV="$CACHE/vllm-$VLLM"
engine_env "$SG_ENV" "sglang==$SGLANG"
engine_env "$VL_ENV" "vllm==$VLLM"
run "$SG_ENV" test_real_sglang.py "$@"
run "$VL_ENV" test_real_vllm.py "$@"
say "done"
