#!/usr/bin/env python
"""Shared-memory benchmark for dlbridge: sending a shared host tensor through a
multiprocessing queue, 1 GiB against 1 element (O(1) in size) and against
torch.multiprocessing doing the same.

    python bench/bench_shared.py [--quick] [--check]

Prints a table (dlbridge, peer, ratio, target, PASS/FAIL per row) and writes the
same to bench/results/shared.json. Exits 0 unless --check is given and a row fails.

Method: one spawned child process receives on one multiprocessing Queue and
answers on another (it unpickles the tensor, which maps the segment, replies with
its element count and drops it). A round trip is `q_in.put(t); q_out.get()`; both
libraries use the same queues, the same child and the same start method (spawn),
and their samples are interleaved. Each tensor is moved into shared memory once,
before timing (`share_memory_()`), so only the sending is timed: the handle (a
file descriptor passed with SCM_RIGHTS) and the mapping in the child.
"""
import argparse
import json
import multiprocessing as mp
import statistics
import sys
from pathlib import Path
from time import perf_counter_ns

import torch
import torch.multiprocessing  # noqa: F401 - registers torch's reducers with ForkingPickler

from _timing import load_impl, machine_info

GiB_F32 = 2**28  # float32 elements in 1 GiB
RESULTS = Path(__file__).resolve().parent / "results" / "shared.json"
TIMEOUT = 60


def child(q_in, q_out):
    while True:
        t = q_in.get(timeout=TIMEOUT)
        if t is None:
            return
        q_out.put(t.numel())
        del t


def round_trip_ns(q_in, q_out, t, n):
    """Median ns of n round trips of t (each checked: the child saw every element)."""
    times = []
    for _ in range(n):
        start = perf_counter_ns()
        q_in.put(t)
        got = q_out.get(timeout=TIMEOUT)
        times.append(perf_counter_ns() - start)
        assert got == t.numel(), (got, t.numel())
    return times


def row(rows, name, ours, peer, target, ok):
    rows.append(dict(row=name, dlbridge=ours, peer=peer, ratio=ours / peer, target=target,
                     unit="ns", passed=bool(ok)))


def fmt(ns):
    return f"{ns / 1e6:.2f} ms" if ns >= 1e6 else f"{ns / 1e3:.1f} us"


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="few repetitions (smoke test)")
    p.add_argument("--check", action="store_true", help="exit 1 if any target fails")
    args = p.parse_args()
    samples, warmup = (10, 3) if args.quick else (60, 10)

    db = load_impl("dlbridge", None)
    info = machine_info(db, start_method="spawn", samples=samples)
    print(f"machine: {info['cpu']}, {info['cores']} cores, {info['platform']}")
    print(f"python {info['python']}, torch {info['torch']}, dlbridge {info['dlbridge']}; "
          f"spawn, {samples} round trips each (median)\n")

    tensors = {
        "db 1 GiB": db.empty(GiB_F32, dtype=db.float32).share_memory_(),
        "db 1 elem": db.empty(1, dtype=db.float32).share_memory_(),
        "torch 1 GiB": torch.empty(GiB_F32, dtype=torch.float32).share_memory_(),
        "torch 1 elem": torch.empty(1, dtype=torch.float32).share_memory_(),
    }
    ctx = mp.get_context("spawn")
    q_in, q_out = ctx.Queue(), ctx.Queue()
    proc = ctx.Process(target=child, args=(q_in, q_out), daemon=True)
    proc.start()
    try:
        times = {k: [] for k in tensors}
        for name, t in tensors.items():
            round_trip_ns(q_in, q_out, t, warmup)
        for _ in range(samples):  # interleaved, so drift hits every side alike
            for name, t in tensors.items():
                times[name] += round_trip_ns(q_in, q_out, t, 1)
        q_in.put(None)
        proc.join(TIMEOUT)
    finally:
        if proc.is_alive():
            proc.kill()
    med = {k: statistics.median(v) for k, v in times.items()}

    rows = []
    r = med["db 1 GiB"] / med["db 1 elem"]
    row(rows, "1. O(1): send shared 1 GiB vs 1 element", med["db 1 GiB"], med["db 1 elem"], "<= 2.0",
        r <= 2.0)
    row(rows, "2. send shared 1 GiB vs torch.multiprocessing", med["db 1 GiB"], med["torch 1 GiB"],
        "<= 1.0", med["db 1 GiB"] <= med["torch 1 GiB"])
    row(rows, "3. send shared 1 element vs torch.multiprocessing", med["db 1 elem"], med["torch 1 elem"],
        "<= 1.0", med["db 1 elem"] <= med["torch 1 elem"])

    print(f"{'row':<52} {'dlbridge':>10} {'peer':>10} {'ratio':>7} {'target':>8}  result")
    print("-" * 98)
    for x in rows:
        print(f"{x['row']:<52} {fmt(x['dlbridge']):>10} {fmt(x['peer']):>10} {x['ratio']:>7.3f} "
              f"{x['target']:>8}  {'PASS' if x['passed'] else 'FAIL'}")
    print(f"\ntorch: 1 GiB {fmt(med['torch 1 GiB'])}, 1 element {fmt(med['torch 1 elem'])} "
          f"(its own ratio {med['torch 1 GiB'] / med['torch 1 elem']:.3f})")
    failed = [x["row"] for x in rows if not x["passed"]]
    print(f"{len(rows) - len(failed)}/{len(rows)} rows pass")
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(dict(quick=args.quick, machine=info, medians_ns=med, rows=rows), indent=2))
    print(f"wrote {RESULTS}")
    return 1 if args.check and failed else 0


if __name__ == "__main__":
    sys.exit(main())
