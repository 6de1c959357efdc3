"""Timing and machine facts shared by the benchmarks (imported from bench/, where they run)."""

import statistics
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
