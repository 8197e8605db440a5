#!/usr/bin/env bash
# XGrammar against tooldec's Python binding, in one Python process:
#
#   bash bench/python/run-xgrammar.sh [--limit N] [--out FILE] [...]
#
# (the arguments are xgrammar_peer.py's; `--help` lists them). Needs a Rust
# toolchain, CPython >= 3.9 (python3, or $PYTHON), network access to PyPI on
# the first run, and the project's data ($TOOLDEC_DATA, default
# ../shared/data from the repository root).
#
# The virtual environment lives outside the checkout, in
# ${TOOLDEC_PY_CACHE:-$HOME/.cache/tooldec}/venv-peers, and is reused while
# its pinned versions match: XGrammar drags in torch, far too large to
# reinstall on every run. Each run reinstalls the tooldec package from this
# checkout (`pip install ./python`, quick when nothing changed) and builds
# tooldec-compile, whose --print-regex gives XGrammar the exact language
# tooldec compiles.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
PYTHON="${PYTHON:-python3}"
CACHE="${TOOLDEC_PY_CACHE:-$HOME/.cache/tooldec}"
VENV="$CACHE/venv-peers"
start=$(date +%s)

say() { printf '== %s (%ss)\n' "$*" "$(($(date +%s) - start))" >&2; }

# torch is what XGrammar imports for its bitmask tensors. The PyTorch CPU
# index has a CPU-only wheel; PyPI has only the CUDA build, whose nvidia-*
# libraries (several GB) torch loads at import even without a GPU.
TORCH=2.15.0
TORCH_CPU_INDEX="${TOOLDEC_TORCH_INDEX:-https://download.pytorch.org/whl/cpu}"
# The packages this script checks and installs. XGrammar goes in without
# its declared dependencies, so that it does not pull in triton (a GPU
# kernel compiler it uses only to apply masks on CUDA); the others are its
# remaining dependencies, maturin (to build tooldec) and numpy.
PINS="xgrammar==0.2.8
apache-tvm-ffi==0.1.15.post2
pydantic==2.14.4
transformers==5.24.0
tokenizers==0.23.3
numpy==2.4.6
maturin==1.16.0"
# Their own dependencies, pinned too but not checked.
DEPS="huggingface-hub==2.4.0
safetensors==0.8.0
regex==2026.11.19
pyyaml==6.0.4
tqdm==4.70.1
packaging==26.4
pydantic-core==2.50.5
annotated-types==0.8.0
typing-inspection==0.4.5
typing-extensions==4.16.0"
mkdir -p "$CACHE"
CONSTRAINTS="$CACHE/peers-constraints.txt"
printf '%s\n%s\n' "$PINS" "$DEPS" > "$CONSTRAINTS"
# Also read by pip's isolated build environment (the maturin it installs).
export PIP_CONSTRAINT="$CONSTRAINTS"
export PIP_DISABLE_PIP_VERSION_CHECK=1

if [ ! -x "$VENV/bin/python" ]; then
  say "creating $VENV with $("$PYTHON" --version)"
  "$PYTHON" -m venv "$VENV"
fi
VPY="$VENV/bin/python"

# The pins and what the environment has, as sorted "name==version" lines
# (torch's local version, +cpu or +cu132, is not compared).
want="$(printf 'torch==%s\n%s\n' "$TORCH" "$PINS" | sort)"
have="$(printf 'torch\n%s\n' "$PINS" | cut -d= -f1 | "$VPY" -c '
import sys
from importlib import metadata
for name in sys.stdin.read().split():
    try:
        version = metadata.version(name).split("+")[0]
    except metadata.PackageNotFoundError:
        version = "missing"
    print(f"{name}=={version}")
' | sort)"
if [ "$want" != "$have" ]; then
  t0=$(date +%s)
  if ! grep -qx "torch==$TORCH" <<<"$have"; then
    say "installing torch $TORCH, the CPU build from $TORCH_CPU_INDEX"
    if ! "$VPY" -m pip install -q --retries 0 --timeout 20 --index-url "$TORCH_CPU_INDEX" \
      "torch==$TORCH"; then
      say "that index is out of reach: torch $TORCH from PyPI (the CUDA build, several GB)"
      "$VPY" -m pip install -q "torch==$TORCH"
    fi
  fi
  say "installing xgrammar and its dependencies but triton"
  "$VPY" -m pip install -q --no-deps xgrammar
  # shellcheck disable=SC2046 # one argument per pinned name
  "$VPY" -m pip install -q $(cut -d= -f1 <<<"$PINS" | grep -vx xgrammar)
  say "installed in $(($(date +%s) - t0)) s; $(du -sh "$VENV" | cut -f1) in $VENV"
fi

say "pip install ./python"
(cd "$ROOT" && "$VPY" -m pip install -q ./python)

say "building tooldec-compile (release)"
(cd "$ROOT" && cargo build -q --release -p tooldec-cli)
export TOOLDEC_COMPILE="${CARGO_TARGET_DIR:-$ROOT/target}/release/tooldec-compile"

# The data, absolute (a relative $TOOLDEC_DATA is read from the repository
# root, as the README's commands are).
TOOLDEC_DATA="$(cd "$ROOT" && cd "${TOOLDEC_DATA:-../shared/data}" && pwd)"
export TOOLDEC_DATA
# One thread for torch's own kernels: the cores go to the two engines.
export OMP_NUM_THREADS=1

say "running xgrammar_peer.py"
cd "$ROOT"
exec "$VPY" "$HERE/xgrammar_peer.py" "$@"
