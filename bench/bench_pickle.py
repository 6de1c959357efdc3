#!/usr/bin/env python
"""Pickle benchmark for dlbridge: the protocol-5 round trip (dumps + loads) with
the bytes out of band, as Ray, Dask's distributed scheduler and other engines
that speak protocol 5 do it, against a NumPy array the same way; O(1) in size;
and, for information, in-band protocol 5 and protocol 4, which copy every byte.

    python bench/bench_pickle.py [--impl dlbridge|torch] [--quick] [--check]

Prints a table (dlbridge, peer, ratio, target, PASS/FAIL per row; "info" where
a row has no target) and writes the same to bench/results/pickle.json. Exits 0
unless --check is given and a row fails. `--impl torch` runs the "dlbridge" side
with torch tensors (to check the script itself; torch pickles its bytes in band,
so the out-of-band rows then fail).
"""
import argparse
import json
import os
import pickle
import sys
from pathlib import Path
from types import SimpleNamespace

from time import perf_counter_ns

import numpy as np
import torch

from _timing import load_impl, machine_info, per_call_ns, print_table

MiB = 2**20
BIG = 256 * MiB // 4  # float32 elements in 256 MiB
MID = 16 * MiB // 4
RESULTS = Path(__file__).resolve().parent / "results" / "pickle.json"


def out_of_band(x):
    """Protocol 5 with a buffer_callback: the bytes travel beside the pickle, as
    PickleBuffers, and loads hands the same buffers back (what an engine's shared
    memory or socket would carry)."""
    bufs = []
    return pickle.loads(pickle.dumps(x, protocol=5, buffer_callback=bufs.append), buffers=bufs)


def in_band(x, protocol):
    """Every byte inside the pickle: one copy out, one copy in."""
    return pickle.loads(pickle.dumps(x, protocol=protocol))


def loops_for(cfg, *calls):
    """cfg.loops, or fewer so that one sample of the slowest call takes about
    cfg.sample_ns (a path that copies must not make the script run for minutes)."""
    slowest = 0
    for f, x in calls:
        start = perf_counter_ns()
        f(x)
        slowest = max(slowest, perf_counter_ns() - start)
    return max(1, min(cfg.loops, cfg.sample_ns // max(slowest, 1)))


def address(x):
    return x.__array_interface__["data"][0] if isinstance(x, np.ndarray) else x.data_ptr()


def row(rows, name, ours, peer, ratio, target, ok, unit="ns", **extra):
    rows.append(dict(row=name, dlbridge=ours, peer=peer, ratio=ratio, target=target, unit=unit,
                     passed=None if ok is None else bool(ok), **extra))


def bench_out_of_band(impl, cfg, rows):
    """Row 1: 256 MiB, dlbridge vs NumPy; rows 2-3: O(1) in size."""
    t_big, t_mid, t_one = impl.ones(BIG), impl.ones(MID), impl.ones(1)
    a_big = np.ones(BIG, dtype=np.float32)
    stream = len(pickle.dumps(t_big, protocol=5, buffer_callback=lambda b: None))
    shared = address(out_of_band(t_big)) == address(t_big)
    ours, peer = per_call_ns([("f(x)", dict(f=out_of_band, x=t_big)), ("f(x)", dict(f=out_of_band, x=a_big))],
                             loops_for(cfg, (out_of_band, t_big), (out_of_band, a_big)), cfg.samples)
    ratio = ours / peer
    row(rows, "1. p5 out of band, 256 MiB vs NumPy", ours, peer, ratio, "<= 1.5", ratio <= 1.5 and shared,
        stream_bytes=stream, zero_copy=shared)
    for n, label in ((BIG, "256 MiB"), (MID, "16 MiB")):
        big = t_big if n == BIG else t_mid
        big_ns, one_ns = per_call_ns([("f(x)", dict(f=out_of_band, x=big)), ("f(x)", dict(f=out_of_band, x=t_one))],
                                     loops_for(cfg, (out_of_band, big)), cfg.samples)
        ratio = big_ns / one_ns
        row(rows, f"{2 if n == BIG else 3}. O(1) p5 out of band: {label} vs 1 elem", big_ns, one_ns, ratio,
            "0.9 .. 1.1", 0.9 <= ratio <= 1.1)


def bench_in_band(impl, cfg, rows):
    """Rows 4-5, for information: the in-band pickles copy all 256 MiB, both sides."""
    t_big, a_big = impl.ones(BIG), np.ones(BIG, dtype=np.float32)
    for n, protocol in ((4, 5), (5, 4)):
        ours, peer = per_call_ns([("f(x, p)", dict(f=in_band, x=t_big, p=protocol)),
                                  ("f(x, p)", dict(f=in_band, x=a_big, p=protocol))],
                                 1, cfg.big_samples)
        row(rows, f"{n}. p{protocol} in band, 256 MiB vs NumPy", ours, peer, ours / peer, None, None)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--impl", choices=["dlbridge", "torch"], default="dlbridge",
                   help="what runs the 'dlbridge' side (torch = stand-in)")
    p.add_argument("--quick", action="store_true", help="few repetitions (smoke test)")
    p.add_argument("--check", action="store_true", help="exit 1 if any target fails")
    args = p.parse_args()
    cfg = (SimpleNamespace(loops=500, samples=15, big_samples=3, sample_ns=5 * 10**6) if args.quick
           else SimpleNamespace(loops=2000, samples=100, big_samples=5, sample_ns=20 * 10**6))

    impl = load_impl(args.impl, SimpleNamespace(ones=torch.ones, __version__=f"torch {torch.__version__} (stand-in)"))
    info = machine_info(impl, usable_cores=len(os.sched_getaffinity(0)))
    print(f"machine: {info['cpu']}, {info['cores']} cores ({info['usable_cores']} usable), {info['platform']}")
    print(f"python {info['python']}, numpy {info['numpy']}, dlbridge {info['dlbridge']}")
    print(f"impl={args.impl} quick={args.quick} loops={cfg.loops} samples={cfg.samples}\n")

    rows = []
    bench_out_of_band(impl, cfg, rows)
    bench_in_band(impl, cfg, rows)
    print_table(rows)
    print(f"\nrow 1: the pickle stream is {rows[0]['stream_bytes']} bytes; the loaded tensor "
          f"{'shares' if rows[0]['zero_copy'] else 'does NOT share'} the original's memory")

    failed = [r["row"] for r in rows if r["passed"] is False]
    scored = sum(r["passed"] is not None for r in rows)
    print(f"{scored - len(failed)}/{scored} rows pass")
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(dict(impl=args.impl, quick=args.quick, machine=info, config=vars(cfg),
                                       rows=rows), indent=2))
    print(f"wrote {RESULTS}")
    return 1 if args.check and failed else 0


if __name__ == "__main__":
    sys.exit(main())
