#!/usr/bin/env bash
# Runs tooldec-eval built for x86-64-v3 (AVX2, FMA, F16C).
#
# candle picks its quantized-matmul SIMD kernels at compile time: SmolLM2
# decodes a token in ~19 ms with them and ~60 ms without. Only the
# evaluation wants that, so the flag is set here and not for the workspace
# (the C library and the Python wheel must run on any x86-64). The build
# goes to its own target directory so that it does not evict the
# workspace's ordinary build. Arguments are tooldec-eval's.
set -euo pipefail
cd "$(dirname "$0")/.."
flags="${RUSTFLAGS:-}"
if [ "$(uname -m)" = x86_64 ]; then
    flags="$flags -C target-cpu=x86-64-v3"
fi
RUSTFLAGS="$flags" exec cargo run --release --locked -p tooldec-eval \
    --target-dir target/x86-64-v3 -- "$@"
