#!/usr/bin/env bash
# Runs the Python suite against an AddressSanitizer build of the extension
# (`make test-asan`). Arguments go to pytest.
#
# The extension (and its Rust dependencies) is built by nightly rustc with
# -Zsanitizer=address. Python itself is not instrumented, so the ASan runtime
# must be loaded first, with LD_PRELOAD. rustc links its runtime only into
# executables, so this script turns rustc's own static runtime (the one that
# matches its LLVM) into a shared library, leaving out the one object that
# only an executable may hold (.preinit_array).
#
# The instrumented build goes into target/asan/site/dlbridge, which comes
# first on PYTHONPATH; the suite checks it really runs that build
# (tests/python/test_asan.py).
set -euo pipefail
cd "$(dirname "$0")/../.."

PY=$(realpath -s "${PY:-.venv/bin/python}")  # -s: keep the venv's own path
TRIPLE=$(rustc +nightly -vV | sed -n "s/^host: //p")  # the host, so the ASan runtime matches
OUT=target/asan
ROOT=$(pwd)

# 1. The instrumented extension (debug: overflow checks and debug assertions on
# too). `dlbridge_asan` makes host buffers of every size come from the
# allocator, since ASan cannot see overruns of raw mmap pages.
RUSTFLAGS="-Zsanitizer=address --cfg dlbridge_asan" \
PYO3_BUILD_EXTENSION_MODULE=1 \
PYO3_PYTHON="$PY" \
CARGO_TARGET_DIR=$OUT \
  cargo +nightly build --quiet -p dlbridge-python --no-default-features --features cuda --target $TRIPLE

# 2. The ASan runtime as a shared library.
RT_ARCHIVE="$(rustc +nightly --print sysroot)/lib/rustlib/$TRIPLE/lib/librustc-nightly_rt.asan.a"
RT="$ROOT/$OUT/rt/libasan_rt.so"
if [[ ! -f $RT || $RT_ARCHIVE -nt $RT ]]; then
  rm -rf "$OUT/rt" && mkdir -p "$OUT/rt/obj"
  (cd "$OUT/rt/obj" && ar x "$RT_ARCHIVE" && rm -f asan_preinit.cpp.o)
  # libstdc++ stays a dependency (--no-as-needed): the __cxa_throw
  # interceptor must find the real one when C++ code (torch) throws.
  ${CC:-cc} -shared -o "$RT" "$OUT"/rt/obj/*.o -Wl,--no-as-needed -lstdc++ -lpthread -ldl -lm -lrt
fi

# 3. The package with the instrumented extension in place of the release one.
rm -rf "$OUT/site" && mkdir -p "$OUT/site"
cp -r python/dlbridge "$OUT/site/"
rm -f "$OUT"/site/dlbridge/*.so
cp "$OUT/$TRIPLE/debug/libdlbridge_python.so" "$OUT/site/dlbridge/_core.abi3.so"

# 4. The suite.
# - Python's own allocations are never freed at exit, so leak detection is
#   off (the suite's leak tests count dlbridge's allocations themselves).
# - allocator_may_return_null keeps "allocation too large" an error, as with
#   the system allocator.
# - protect_shadow_gap=0 leaves the CUDA driver room for its address-space
#   reservation (with the gap protected, cuInit fails and the GPU tests
#   would skip).
# - PYTHONMALLOC=malloc sends Python's small objects to malloc too (pymalloc
#   would hide a refcount bug in the bindings from ASan).
export DLBRIDGE_ASAN_RUNTIME="$RT"
export DLBRIDGE_ASAN_CORE="$ROOT/$OUT/site/dlbridge/_core.abi3.so"
export ASAN_OPTIONS="detect_leaks=0:allocator_may_return_null=1:protect_shadow_gap=0:halt_on_error=1:abort_on_error=1:${ASAN_OPTIONS:-}"
export PYTHONMALLOC=malloc
LD_PRELOAD="$RT" PYTHONPATH="$ROOT/$OUT/site" "$PY" -m pytest tests/python -p no:cacheprovider --capture=sys "$@"
