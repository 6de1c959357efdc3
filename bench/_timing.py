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
