"""What the benchmarks share: timing, the implementation under test, and machine facts
(imported from bench/, where they run)."""

import os
import platform
import statistics
import sys
import timeit
from time import perf_counter_ns


def per_call_ns(pairs, loops, samples):
    """Median per-call ns of each (stmt, namespace) pair.

    Each sample runs `stmt` `loops` times in a tight loop (timeit inlines the
    statement, so there is no extra function-call overhead) timed with
    perf_counter_ns. Samples of the different pairs are interleaved so drift
    (frequency scaling, other load) hits all sides alike.
    """
    timers = [timeit.Timer(stmt, timer=perf_counter_ns, globals=ns) for stmt, ns in pairs]
    for t in timers:  # warm-up
        t.timeit(max(1, loops // 10))
    times = [[] for _ in timers]
    for _ in range(samples):
        for t, out in zip(timers, times):
            out.append(t.timeit(loops) / loops)
    return [statistics.median(ts) for ts in times]


def cpu_model():
    """The CPU's model name from /proc/cpuinfo, or "unknown"."""
    try:
        with open("/proc/cpuinfo") as f:
            return next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        return "unknown"


def load_impl(name, stand_in):
    """dlbridge, or with --impl torch the given namespace of torch stand-ins."""
    if name == "torch":
        return stand_in
    try:
        import dlbridge
    except ImportError as e:
        sys.exit(f"cannot import dlbridge ({e}); build it (maturin develop) or use --impl torch")
    return dlbridge


def machine_info(db, **extra):
    """The machine and library facts every benchmark records, plus `extra`."""
    import numpy as np
    import torch

    return dict(cpu=cpu_model(), cores=os.cpu_count(), platform=platform.platform(),
                python=platform.python_version(), numpy=np.__version__, torch=torch.__version__,
                dlbridge=getattr(db, "__version__", "?"), **extra)


def fmt(v, unit):
    """A measured value: nanoseconds as ns or ms, memory as MiB, None as '-'."""
    if v is None:
        return "-"
    if unit == "MiB":
        return f"{v:.3f} MiB"
    return f"{v / 1e6:.2f} ms" if v >= 1e6 else f"{v:.0f} ns"


def print_table(rows, fmt=fmt, width=44, no_result="info"):
    """The table every benchmark prints: row, dlbridge, peer, ratio, target and
    result (`no_result` for rows without a target), with the row's note when it
    did not pass. `fmt(value, unit)` writes a value."""
    print(f"{'row':<{width}} {'dlbridge':>12} {'peer':>12} {'ratio':>7} {'target':>12}  result")
    print("-" * (width + 56))
    for r in rows:
        ratio = "-" if r.get("ratio") is None else f"{r['ratio']:.3f}"
        passed = r.get("passed")
        result = no_result if passed is None else ("PASS" if passed else "FAIL")
        note = f"  ({r['note']})" if r.get("note") and passed is not True else ""
        print(f"{r['row']:<{width}} {fmt(r['dlbridge'], r['unit']):>12} {fmt(r['peer'], r['unit']):>12} "
              f"{ratio:>7} {r.get('target') or '-':>12}  {result}{note}")
