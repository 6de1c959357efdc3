#!/usr/bin/env bash
# The whole GPU batch, in one command, on a machine with a CUDA GPU and no Rust.
#
#   tests/gpu/run_on_gpu.sh [WHEEL_DIR]        (in the repository root; WHEEL_DIR defaults to .wheels)
#
# WHEEL_DIR is what tests/gpu/prepare.sh built: the abi3 wheel, and capi/ with a prebuilt
# libdlbridge.so. The wheel is installed into a private folder (nothing else is touched), then
# each step runs under its own time limit, its full log kept:
#
#   env        device, driver and CUDA versions, the peers' versions, which dlbridge is imported
#   gpu        pytest tests/python/gpu and test_cuda_nogpu.py (the GPU suite)
#   seeds      pytest tests/python/test_seeds.py (the tutorials)
#   capi       pytest tests/python/test_capi.py with DLB_TEST_HAVE_CUDA=1 (needs `cc`; skips without)
#   sanitizer  compute-sanitizer memcheck over tests/gpu/sanitizer_workload.py (every kernel, the
#              staging ring, exchange with torch and CuPy, CUDA IPC), racecheck over its kernels
#   bench      bench/bench_cuda.py (GPU_BENCH_ARGS, default --quick)
#   pageable   bench_cuda.py --only transfers three times per DLBRIDGE_CUDA_PAGEABLE mode
#              (staged, streamed), alternating: how the staging ring's stores compare, on one machine
#   rest       pytest on the rest of tests/python (what this machine's peers allow)
#
# GPU_BATCH_USE_INSTALLED=1 skips the install and tests the importable dlbridge (how
# tests/python/test_gpu_batch.py checks this script without a GPU).
# GPU_BATCH_K passes `-k EXPR` to every pytest step (to rerun what failed after a fix).
# GPU_BATCH_TEST_TIMEOUT bounds each test (default 300 s; pytest-timeout), GPU_BATCH_WORKERS
# the gpu step's processes where pytest-xdist is installed (default 4).
# GPU_BATCH_STEPS picks steps (default: all but rest, which fits a second call:
# GPU_BATCH_STEPS=rest). GPU_BATCH_SECONDS (default 570) bounds the whole batch, so one
# device call of at most 600 s ends with every log. Results go to $OUT (the device tool's
# folder; ./gpu-out elsewhere): summary.md (one page: versions, each step's counts, the
# failures' last lines, the benchmark table), logs.tar.gz (every full log) and cuda.json (the
# benchmark's figures). summary.md is rewritten after every step, so a cut-off batch still
# leaves one. Exits 0 when every step that ran passed.
set -uo pipefail

WHEELS=${1:-.wheels}
OUT=${OUT:-$PWD/gpu-out}
PY=${PYTHON:-python3}
BUDGET=${GPU_BATCH_SECONDS:-570}
STEPS=${GPU_BATCH_STEPS:-env gpu seeds capi sanitizer bench}
BENCH_ARGS=${GPU_BENCH_ARGS---quick}  # set but empty: the full run
SITE=${GPU_BATCH_SITE:-/tmp/dlbridge-site}
START=$(date +%s)
LOGS=$(mktemp -d /tmp/dlbridge-gpu-logs.XXXXXX)
SUMMARY=$OUT/summary.md
ROWS=()
FAILED=()
mkdir -p "$OUT"

remaining() { echo $((BUDGET - ($(date +%s) - START))); }

# The last pytest summary line ("3 passed, 2 skipped in 1.2s"), or what a step's log ends with.
result_of() {
  local log=$1 line
  line=$(grep -E '^=*\s*[0-9]+ (passed|failed|skipped|error|errors|deselected|xfailed)' "$log" | tail -1)
  [ -n "$line" ] || line=$(grep -E 'ERROR SUMMARY' "$log" | tr '\n' ' ')
  [ -n "$line" ] || line=$(grep -E '^(within target|summary|[0-9]+ of [0-9]+ rows)' "$log" | tail -1)
  [ -n "$line" ] || line=$(tail -1 "$log" 2>/dev/null)
  echo "$line" | sed -e 's/=//g' -e 's/|/\\|/g' | cut -c1-200
}

write_summary() {
  {
    echo "# dlbridge GPU batch"
    echo
    echo "- started: $(date -u -d "@$START" '+%Y-%m-%d %H:%M:%S UTC'), $(( $(date +%s) - START )) s so far (budget ${BUDGET} s)"
    [ -f "$WHEELS/BUILD_INFO" ] && sed 's/^/- /' "$WHEELS/BUILD_INFO"
    [ -f "$LOGS/versions.txt" ] && sed 's/^/- /' "$LOGS/versions.txt"
    echo
    echo "| step | exit | seconds | result |"
    echo "| --- | ---: | ---: | --- |"
    printf '%s\n' "${ROWS[@]}"
    local reasons
    reasons=$(grep -h '^SKIPPED' "$LOGS"/*.log 2>/dev/null | cut -c1-300 | head -15)
    if [ -n "$reasons" ]; then
      echo
      echo "## Why tests skipped (first 15 reasons)"
      echo '```'
      echo "$reasons"
      echo '```'
    fi
    for step in "${FAILED[@]}"; do
      echo
      echo "## $step: last lines"
      echo '```'
      tail -40 "$LOGS/$step.log"
      echo '```'
    done
    if [ -f "$LOGS/bench.log" ]; then
      echo
      echo "## bench/bench_cuda.py"
      echo '```'
      tail -60 "$LOGS/bench.log"
      echo '```'
    fi
    for log in "$LOGS"/pageable-*.log; do
      [ -f "$log" ] || continue
      echo
      echo "## $(basename "$log" .log): bench_cuda.py --only transfers"
      echo '```'
      grep -E 'impl=|[12][a-f]\. |reference|pageable|rows pass' "$log"
      echo '```'
    done
  } > "$SUMMARY.tmp" && mv "$SUMMARY.tmp" "$SUMMARY"
  tar -C "$LOGS" -czf "$OUT/logs.tar.gz" . 2>/dev/null
}

# run_step NAME CAP_SECONDS COMMAND...: the command under `timeout`, its output in logs/NAME.log.
run_step() {
  local name=$1 cap=$2; shift 2
  local left; left=$(remaining)
  if [ "$left" -lt 15 ]; then
    ROWS+=("| $name | - | 0 | not run: the batch's ${BUDGET} s were spent |")
    write_summary
    return
  fi
  [ "$cap" -gt "$left" ] && cap=$left
  echo "== $name (at most ${cap} s)"
  local t0 rc; t0=$(date +%s)
  timeout --signal=INT --kill-after=10 "$cap" "$@" > "$LOGS/$name.log" 2>&1
  rc=$?
  local took=$(( $(date +%s) - t0 )) result
  result=$(result_of "$LOGS/$name.log")
  if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then result="TIMED OUT after ${cap} s; $result"; fi
  ROWS+=("| $name | $rc | $took | $result |")
  [ "$rc" -ne 0 ] && FAILED+=("$name")
  echo "   exit $rc in ${took} s: $result"
  write_summary
}

# --- install the wheel into a private folder ------------------------------------------------------
# (GPU_BATCH_USE_INSTALLED=1: test the installed dlbridge instead; tests/python/test_gpu_batch.py.)
if [ -n "${GPU_BATCH_USE_INSTALLED:-}" ]; then
  ROWS+=("| install | - | 0 | skipped: GPU_BATCH_USE_INSTALLED, the importable dlbridge is tested |")
else
  wheel=$(ls "$WHEELS"/dlbridge-*.whl 2>/dev/null | head -1)
  if [ -z "$wheel" ]; then
    echo "no dlbridge-*.whl in $WHEELS: run tests/gpu/prepare.sh first" > "$LOGS/install.log"
    ROWS+=("| install | 1 | 0 | no dlbridge-*.whl in $WHEELS: run tests/gpu/prepare.sh first |")
    FAILED+=("install"); write_summary; exit 1
  fi
  # The pyo3 example's wheel, when prepare.sh built one, goes beside it.
  example=$(ls "$WHEELS"/dlbridge_scale-*.whl 2>/dev/null | head -1)
  run_step install 120 "$PY" -m pip install --no-deps --no-index --no-compile --upgrade --target "$SITE" "$wheel" ${example:+"$example"}
  export PYTHONPATH="$SITE${PYTHONPATH:+:$PYTHONPATH}"
fi
export PYTHONUNBUFFERED=1
PYTEST=("$PY" -m pytest -ra -p no:cacheprovider)
"$PY" -c 'import pytest_timeout' 2>/dev/null && PYTEST+=(--timeout="${GPU_BATCH_TEST_TIMEOUT:-300}")
# The GPU suite runs in 4 processes where pytest-xdist is installed: a crash (a bad pointer
# in never-run code) then loses one worker's test, not the rest of the suite.
XDIST=()
"$PY" -c 'import xdist' 2>/dev/null && XDIST=(-n "${GPU_BATCH_WORKERS:-4}" --dist loadfile)
[ -n "${GPU_BATCH_K:-}" ] && PYTEST+=(-k "$GPU_BATCH_K")

versions() {
  if command -v nvidia-smi >/dev/null; then
    nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv,noheader \
      | sed 's/^/GPU (name, driver, memory, capability): /'
    nvidia-smi | grep -o 'CUDA Version: [0-9.]*' | sed 's/^/driver'"'"'s /'
  else
    echo "nvidia-smi: not found (no NVIDIA driver)"
  fi
  command -v nvcc >/dev/null && nvcc --version | tail -1 | sed 's/^/nvcc: /'
  command -v compute-sanitizer >/dev/null && compute-sanitizer --version | grep -i version | head -1 | sed 's/^/compute-sanitizer: /'
  "$PY" - <<'PY'
import importlib, platform
print(f"python: {platform.python_version()}")
for name in ("numpy", "torch", "cupy", "jax", "ml_dtypes"):
    try:
        m = importlib.import_module(name)
        extra = f" (CUDA {m.version.cuda})" if name == "torch" else ""
        print(f"{name}: {m.__version__}{extra}")
    except Exception as e:  # noqa: BLE001 - a missing peer is reported, not fatal
        print(f"{name}: not importable ({type(e).__name__})")
import dlbridge
print(f"dlbridge: {dlbridge.__file__}; cuda available: {dlbridge.cuda.is_available()}"
      f" ({dlbridge.cuda.unavailable_reason() or dlbridge.cuda.get_device_name(0)})")
PY
}

for step in $STEPS; do
  case $step in
    env)
      export -f versions && export PY
      run_step env 60 bash -c versions
      grep -vE '^==' "$LOGS/env.log" > "$LOGS/versions.txt"; write_summary ;;
    gpu)
      run_step gpu 240 "${PYTEST[@]}" "${XDIST[@]}" -q tests/python/gpu tests/python/test_cuda_nogpu.py ;;
    seeds)
      run_step seeds 60 "${PYTEST[@]}" -q tests/python/test_seeds.py ;;
    capi)
      run_step capi 120 env DLB_TEST_HAVE_CUDA=1 DLB_CAPI_LIB_DIR="$WHEELS/capi" \
        "${PYTEST[@]}" -q tests/python/test_capi.py ;;
    sanitizer)
      if ! command -v compute-sanitizer >/dev/null; then
        ROWS+=("| sanitizer | - | 0 | skipped: compute-sanitizer is not on PATH |"); write_summary; continue
      fi
      run_step memcheck 150 compute-sanitizer --tool memcheck --error-exitcode 9 --target-processes all \
        "$PY" tests/gpu/sanitizer_workload.py
      run_step racecheck 90 compute-sanitizer --tool racecheck --error-exitcode 9 \
        "$PY" tests/gpu/sanitizer_workload.py --only kernels ;;
    bench)
      # shellcheck disable=SC2086 # GPU_BENCH_ARGS is a list of arguments
      run_step bench 150 "$PY" bench/bench_cuda.py $BENCH_ARGS
      [ -f bench/results/cuda.json ] && cp bench/results/cuda.json "$OUT/cuda.json" ;;
    pageable)
      for round in 1 2 3; do
        for mode in staged streamed; do
          # shellcheck disable=SC2086 # GPU_BENCH_ARGS is a list of arguments
          run_step "pageable-$mode-$round" 60 env DLBRIDGE_CUDA_PAGEABLE=$mode \
            "$PY" bench/bench_cuda.py --only transfers $BENCH_ARGS
          f=bench/results/cuda-transfers-$mode.json
          [ -f "$f" ] && cp "$f" "$OUT/cuda-transfers-$mode-$round.json"
        done
      done ;;
    rest)
      run_step rest 560 "${PYTEST[@]}" -q tests/python --ignore=tests/python/gpu \
        --ignore=tests/python/test_cuda_nogpu.py ;;
    *)
      ROWS+=("| $step | - | 0 | unknown step (known: env gpu seeds capi sanitizer bench pageable rest) |"); write_summary ;;
  esac
done

echo "summary: $SUMMARY"
[ "${#FAILED[@]}" -eq 0 ]
