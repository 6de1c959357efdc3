#!/usr/bin/env bash
# Builds what the GPU batch needs, here (with Rust), and prints the device tool call that
# runs it on the GPU machine (which has no Rust):
#
#   tests/gpu/prepare.sh            (in the repository root)
#
# .wheels/ (git-ignored) gets the abi3 wheel (maturin, release), the pyo3 example's wheel, capi/libdlbridge.so (the C
# ABI, release, debug info stripped: the .a is too large to carry) and BUILD_INFO (commit,
# dirty or not, build time). The device tool sends the working tree plus the carried
# .wheels (64 MiB in all); tests/gpu/run_on_gpu.sh does the rest there. docs/testing.md
# says how to read what comes back.
set -euo pipefail
cd "$(dirname "$0")/../.."

WHEELS=.wheels
VENV=${VENV:-.venv}
git check-ignore -q "$WHEELS/x" || { echo "$WHEELS/ must be git-ignored (see .gitignore)" >&2; exit 1; }
[ -x "$VENV/bin/maturin" ] || make "$VENV/.installed"

rm -rf "$WHEELS" && mkdir -p "$WHEELS/capi"
echo "== building the abi3 wheel (maturin build --release)"
"$VENV/bin/maturin" build --release -o "$WHEELS"
echo "== building the pyo3 example's wheel (examples/pyo3-scale, for gpu/test_pyo3_example_cuda.py)"
"$VENV/bin/maturin" build --release -m examples/pyo3-scale/Cargo.toml -o "$WHEELS"
echo "== building the C ABI (cargo build --release -p dlbridge-capi)"
cargo build --release -p dlbridge-capi
strip --strip-unneeded -o "$WHEELS/capi/libdlbridge.so" target/release/libdlbridge.so
{
  echo "commit: $(git rev-parse --short HEAD)$(git diff --quiet HEAD || echo ' (with uncommitted changes)')"
  echo "built: $(date -u '+%Y-%m-%d %H:%M UTC') on $(uname -m), $(rustc --version)"
} > "$WHEELS/BUILD_INFO"

size=$(du -sm "$WHEELS" | cut -f1)
echo
echo "Built $(ls "$WHEELS"/*.whl) and $WHEELS/capi/libdlbridge.so (${size} MiB to carry)."
echo "Run the batch with the device tool (one call, at most 600 s):"
echo
echo '  run(carry=[".wheels"], timeout_s=600,'
echo '      command="bash tests/gpu/run_on_gpu.sh .wheels")'
echo
echo "and the rest of the Python suite, if wanted, in a second call:"
echo
echo '  run(carry=[".wheels"], timeout_s=600,'
echo '      command="GPU_BATCH_STEPS=rest bash tests/gpu/run_on_gpu.sh .wheels")'
echo
echo "What comes back: summary.md (one page), logs.tar.gz (every log), cuda.json (benchmark)."
