#!/usr/bin/env bash
# `make test` in two lanes: the make targets given run in the foreground, in
# order; `make test-miri fuzz` runs beside them, its output in
# target/test-logs/beside.log.
#
# Why: Miri and libFuzzer use one core each, and so does most of the release
# build (its one codegen unit) that starts the foreground lane. On a
# 2-core machine the side lane fills the idle core instead of adding its
# minutes to the run.
#
# The exit status is the first failure's: the foreground lane's (the side
# lane is then stopped), else the side lane's. The side lane's log is
# printed in full when it failed, its last lines when it passed.
set -uo pipefail
cd "$(dirname "$0")/.."

MAKE=${MAKE:-make}
LOGS=target/test-logs
LOG=$LOGS/beside.log
mkdir -p "$LOGS"

echo "==> beside the rest: make test-miri fuzz (one core each; output in $LOG)"
set -m  # the side lane in its own process group, so it can be stopped whole
$MAKE --no-print-directory test-miri fuzz >"$LOG" 2>&1 &
beside=$!
set +m
# However this script ends (Ctrl-C included), the side lane ends with it.
trap 'kill -TERM -- "-$beside" 2>/dev/null' EXIT
trap 'exit 130' INT TERM

$MAKE --no-print-directory "$@"
main=$?
if ((main != 0)); then
  echo "==> make $*: failed (exit $main); the side lane was stopped (its output so far: $LOG)"
  exit "$main"
fi

if kill -0 "$beside" 2>/dev/null; then
  echo "==> waiting for the side lane (make test-miri fuzz)"
fi
wait "$beside"
side=$?
if ((side != 0)); then
  echo "==> make test-miri fuzz: failed (exit $side); its output:"
  cat "$LOG"
  exit "$side"
fi
echo "==> make test-miri fuzz: passed; the end of its output ($LOG):"
tail -n 25 "$LOG"
