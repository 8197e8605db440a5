#!/usr/bin/env bash
# Builds and tests the tooldec Python package from scratch:
#
#   bash python/test.sh [pytest args...]
#
# Needs a Rust toolchain, CPython >= 3.9 (python3, or $PYTHON) and network
# access to PyPI on the first run. Creates a virtual environment under
# python/target/venv (kept between runs), installs the pinned test tools,
# installs the package with the one documented command (pip install ./python),
# compiles the test artifacts it does not find committed, and runs pytest.
# With $TOOLDEC_DATA set, the real-tokenizer tests run too; without it they
# say so and skip.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
PYTHON="${PYTHON:-python3}"
VENV="${TOOLDEC_VENV:-$HERE/target/venv}"
ART="$HERE/target/test-artifacts"
start=$(date +%s)

say() { printf '== %s (%ss)\n' "$*" "$(($(date +%s) - start))"; }

# Pinned tools (numpy by interpreter: its wheels follow CPython releases).
PYV="$("$PYTHON" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
case "$PYV" in
  3.9) NUMPY=2.0.2 ;;
  3.10) NUMPY=2.2.6 ;;
  *) NUMPY=2.4.6 ;;
esac
mkdir -p "$HERE/target"
cat > "$HERE/target/constraints.txt" <<EOF
maturin==1.16.0
numpy==$NUMPY
pytest==8.4.2
EOF
# Also used by pip's isolated build environment (the maturin it installs).
export PIP_CONSTRAINT="$HERE/target/constraints.txt"
export PIP_DISABLE_PIP_VERSION_CHECK=1

if [ ! -x "$VENV/bin/python" ]; then
  say "creating $VENV with $("$PYTHON" --version)"
  "$PYTHON" -m venv "$VENV"
fi
VPY="$VENV/bin/python"
if ! "$VPY" -c 'import numpy, pytest, maturin' 2>/dev/null \
  || [ "$("$VPY" -c 'import numpy; print(numpy.__version__)')" != "$NUMPY" ]; then
  say "installing maturin, numpy $NUMPY, pytest"
  "$VPY" -m pip install -q maturin numpy pytest
fi

say "pip install ./python"
(cd "$ROOT" && "$VPY" -m pip install -q ./python)

# Test artifacts: the committed golden one, and a hermes artifact with a
# model logits size wider than the tokenizer (padding ids), compiled here.
mkdir -p "$ART"
export TOOLDEC_WEATHER_TDM="${TOOLDEC_WEATHER_TDM:-$ROOT/artifacts/weather-gpt2.tdm}"
# The compiler as `cargo test --workspace` built it (its CLI test needs the
# binary): after the README's test command this is a no-op, not a second,
# release build of the compiler and its dependencies.
say "building tooldec-compile (test profile)"
(cd "$ROOT" && cargo test --workspace --no-run -q 2>/dev/null || cargo test --workspace --no-run)
TDC="${CARGO_TARGET_DIR:-$ROOT/target}/debug/tooldec-compile"
[ -x "$TDC" ] || { echo "no $TDC after cargo test --no-run" >&2; exit 1; }
# tests/test_compiler.py compares tooldec.Compiler with this CLI.
export TOOLDEC_COMPILE="$TDC"
compile() { # out.tdm args...
  local out="$1"
  shift
  (cd "$ROOT" && "$TDC" grammars/examples/weather.json -q -o "$out" "$@")
}
say "compiling test artifacts"
compile "$ART/weather-hermes-padded.tdm" --format hermes --vocab-size 50304 --max-tokens 96
export TOOLDEC_HERMES_TDM="$ART/weather-hermes-padded.tdm"
# The weather tools for a small committed tokenizer.json, so that the
# vocabulary checks of every adapter run against a tokenizer the tests hold.
compile "$ART/weather-bytes.tdm" --tokenizer "$HERE/tests/fixtures/bytes-tokenizer.json" \
  --eos "<|endoftext|>"
export TOOLDEC_BYTES_TDM="$ART/weather-bytes.tdm"
# A relative $TOOLDEC_DATA is read from the repository root, as the README's
# commands are (TOOLDEC_DATA=../shared/data).
DATA=""
if [ -n "${TOOLDEC_DATA:-}" ]; then
  DATA="$(cd "$ROOT" && cd "$TOOLDEC_DATA" 2>/dev/null && pwd || true)"
fi
if [ -n "${TOOLDEC_DATA:-}" ] && { [ -z "$DATA" ] || [ ! -f "$DATA/tokenizers/qwen2.5/tokenizer.json" ]; }; then
  # The project's data rule (testkit/src/data.rs): unset, the real-data
  # tests say so and skip; set, missing data is a failure, never a skip.
  echo "TOOLDEC_DATA=$TOOLDEC_DATA has no tokenizers/qwen2.5/tokenizer.json (unset TOOLDEC_DATA to skip the real-tokenizer tests)" >&2
  exit 1
fi
if [ -z "${TOOLDEC_DATA:-}" ]; then
  echo "TOOLDEC_DATA unset: the real-tokenizer tests skip" >&2
fi
if [ -n "$DATA" ]; then
  compile "$ART/weather-qwen.tdm" --format hermes \
    --tokenizer "$DATA/tokenizers/qwen2.5/tokenizer.json" --vocab-size 151936
  export TOOLDEC_QWEN_TDM="$ART/weather-qwen.tdm"
  export TOOLDEC_DATA="$DATA" # absolute: pytest runs from tests/
else
  unset TOOLDEC_QWEN_TDM TOOLDEC_DATA
fi

say "pytest"
# From tests/, so that the installed package (not the source tree) is imported.
cd "$HERE/tests"
"$VPY" -m pytest -q -p no:cacheprovider "$@"
say "done"
