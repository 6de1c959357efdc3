#!/usr/bin/env python
"""Every CPU op against the faster of NumPy and torch, at the same thread count.

    python bench/bench_ops.py [--quick] [--filter REGEX] [--threads N] [--samples N]

One row per (op, dtype, size): the median time of dlbridge, of NumPy and of
torch (samples interleaved), the faster peer, the ratio dlbridge / peer, the
target (1.0 at 10^5 and 10^7 elements and for the 2-D/3-D rows, 1.5 at 10^3:
call overhead) and whether it is met. For float16 and bfloat16 the peer is
torch alone (NumPy has no native math for them). Ops dlbridge lacks are
skipped with a note. Then the memory rows: the peak each side adds beyond
the output for the ops that cast their operands (target: no temporary larger
than the output). Writes bench/results/ops.json (read by bench/plot.py);
a --filter run writes bench/results/ops-filtered.json instead, so that it
leaves the full run's results (and the chart drawn from them) alone.
Exits 0: it reports, it does not test.
"""
import argparse
import json
import math
import os
import re
import statistics
import sys
from pathlib import Path
from time import perf_counter_ns

RESULTS = Path(__file__).resolve().parent / "results" / "ops.json"
FILTERED_RESULTS = RESULTS.with_name("ops-filtered.json")


def parse():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="10^3 and 10^5 elements, smaller 2-D/3-D shapes, fewer samples")
    p.add_argument("--filter", default=None, help="only rows whose 'op dtype size' matches this regex")
    p.add_argument("--threads", type=int, default=min(2, os.cpu_count() or 1), help="threads for every side (2)")
    p.add_argument("--samples", type=int, default=None, help="samples per side (default 9, 5 with --quick)")
    return p.parse_args()


ARGS = parse()
# Every side gets the same threads: rayon (dlbridge's reductions and casts),
# dlbridge's elementwise loops, torch's intra-op pool.
os.environ.setdefault("RAYON_NUM_THREADS", str(ARGS.threads))
os.environ.setdefault("DLBRIDGE_NUM_THREADS", str(ARGS.threads))

import numpy as np  # noqa: E402
import torch  # noqa: E402

from _timing import load_impl, machine_info  # noqa: E402

torch.set_num_threads(ARGS.threads)
db = load_impl("dlbridge", None)

DT = {  # name: (dlbridge dtype, torch dtype, NumPy dtype or None: torch is then the only peer)
    "float32": (db.float32, torch.float32, np.float32),
    "float64": (db.float64, torch.float64, np.float64),
    "float16": (db.float16, torch.float16, None),
    "bfloat16": (db.bfloat16, torch.bfloat16, None),
    "int32": (db.int32, torch.int32, np.int32),
    "int64": (db.int64, torch.int64, np.int64),
    "bool": (db.bool, torch.bool, np.bool_),
}
FLOATS = ["float32", "float64", "float16", "bfloat16"]
INTS = ["int32", "int64"]
NUMERIC = FLOATS + INTS
SIZES = [10**3, 10**5] if ARGS.quick else [10**3, 10**5, 10**7]
SHAPES_2D = [(300, 300)] if ARGS.quick else [(2000, 2000)]
SHAPES_3D = [(40, 20, 40)] if ARGS.quick else [(200, 100, 200)]
SAMPLES = ARGS.samples or (5 if ARGS.quick else 9)


def make(dtype, shape, seed=0, positive=False):
    """The same values as a torch tensor, a dlbridge tensor over its memory
    and (where NumPy has the dtype) a NumPy array over it too."""
    g = torch.Generator().manual_seed(seed)
    if dtype == "bool":
        t = torch.rand(shape, generator=g) > 0.5
    elif dtype in INTS:
        t = torch.randint(1, 100, shape, generator=g, dtype=DT[dtype][1])
    else:
        t = (torch.rand(shape, generator=g, dtype=torch.float64) + (0.5 if positive else -0.5)).to(DT[dtype][1])
    return wrap(t, dtype)


def wrap(t, dtype):
    """The torch tensor `t`, a dlbridge tensor over its memory and a NumPy
    array over it where NumPy has the dtype."""
    d = db.from_dlpack(t)
    n = t.numpy() if DT[dtype][2] is not None else None
    return {"db": d, "torch": t, "np": n}


# Untimed calls of a contender before each of its samples. torch's OpenMP
# workers spin after its last parallel loop (libgomp's GOMP_SPINCOUNT): about
# 6 ms on Sapphire Rapids, about 10 ms on Zen 3 (measured from the process's
# CPU time while it sleeps). On a 2-core machine they share the cores with the
# next contender's sample; with 10 ms of settling, dlbridge's 2-thread column
# sums read 1.5-3x torch's in one sample and 0.9x in the next. Settling for
# well past the spin lets each side run in its own steady state.
SETTLE_NS = 25_000_000


def median_ns(fns, samples):
    """Median ns per call of each callable; samples interleaved, each after
    SETTLE_NS of untimed calls of the same callable."""
    loops = []
    for f in fns:
        f()  # warm-up, and an estimate of the cost
        t0 = perf_counter_ns()
        f()
        dt = max(perf_counter_ns() - t0, 1)
        loops.append(max(1, min(2000, int(2e6 / dt))))  # ~2 ms a sample
    times = [[] for _ in fns]
    for _ in range(samples):
        for f, n, out in zip(fns, loops, times):
            t0 = perf_counter_ns()
            while perf_counter_ns() - t0 < SETTLE_NS:
                f()
            t0 = perf_counter_ns()
            for _ in range(n):
                f()
            out.append((perf_counter_ns() - t0) / n)
    return [statistics.median(t) for t in times]


ROWS = []


def row(op, dtype, size, sides, nd=False):
    """Times one row. `sides` maps 'db'/'np'/'torch' to a callable (or None
    where that side has no such op); NumPy is skipped for the half floats."""
    label = f"{op} {dtype} {size}"
    if ARGS.filter and not re.search(ARGS.filter, label):
        return
    if DT.get(dtype, (0, 0, 1))[2] is None:
        sides = {k: v for k, v in sides.items() if k != "np"}
    sides = {k: v for k, v in sides.items() if v is not None}
    if "db" not in sides:
        ROWS.append(dict(op=op, dtype=dtype, size=str(size), note="dlbridge lacks it: skipped"))
        print(f"{op:<34} {dtype:<9} {str(size):>13}  skipped (dlbridge lacks it)", flush=True)
        return
    names = list(sides)
    try:
        times = dict(zip(names, median_ns([sides[k] for k in names], SAMPLES)))
    except Exception as e:  # noqa: BLE001 - a report, not a test
        ROWS.append(dict(op=op, dtype=dtype, size=str(size), note=f"error: {e}"))
        print(f"{op:<34} {dtype:<9} {str(size):>13}  error: {e}", flush=True)
        return
    peers = {k: v for k, v in times.items() if k != "db"}
    peer = min(peers, key=peers.get)
    ratio = times["db"] / peers[peer]
    target = 1.5 if (not nd and isinstance(size, int) and size <= 10**3) else 1.0
    r = dict(op=op, dtype=dtype, size=str(size), db=times["db"], peer=peer, peer_ns=peers[peer],
             ratio=ratio, target=target, met=ratio <= target)
    ROWS.append(r)
    print(f"{op:<34} {dtype:<9} {str(size):>13} {fmt(times['db']):>10} {fmt(peers[peer]):>10} {peer:<6}"
          f" {ratio:6.2f} {target:6.1f}  {'yes' if r['met'] else 'NO'}", flush=True)


def fmt(ns):
    if ns >= 1e6:
        return f"{ns / 1e6:.2f} ms"
    if ns >= 1e3:
        return f"{ns / 1e3:.1f} us"
    return f"{ns:.0f} ns"


def has(obj, name):
    return hasattr(obj, name)


# ---------------------------------------------------------------- elementwise
def elementwise():
    for dtype in NUMERIC:
        for n in SIZES:
            a, b = make(dtype, (n,), 1), make(dtype, (n,), 2)
            A, B = a["db"], b["db"]
            ta, tb = a["torch"], b["torch"]
            na, nb = a["np"], b["np"]
            row("a + b", dtype, n, {"db": lambda: A + B, "torch": lambda: ta + tb, "np": lambda: na + nb})
            row("a - b", dtype, n, {"db": lambda: A - B, "torch": lambda: ta - tb, "np": lambda: na - nb})
            row("a * b", dtype, n, {"db": lambda: A * B, "torch": lambda: ta * tb, "np": lambda: na * nb})
            row("a / b", dtype, n, {"db": lambda: A / B, "torch": lambda: ta / tb, "np": lambda: na / nb})
            row("a + 1", dtype, n, {"db": lambda: A + 1, "torch": lambda: ta + 1, "np": lambda: na + 1})
            row("a - 1", dtype, n, {"db": lambda: A - 1, "torch": lambda: ta - 1, "np": lambda: na - 1})
            row("a * 3", dtype, n, {"db": lambda: A * 3, "torch": lambda: ta * 3, "np": lambda: na * 3})
            row("a / 2", dtype, n, {"db": lambda: A / 2, "torch": lambda: ta / 2, "np": lambda: na / 2})
            # In place, tensor and number operands (the values drift over the
            # calls, within each dtype's range).
            row("a.add_(b)", dtype, n, {"db": lambda: A.add_(B), "torch": lambda: ta.add_(tb),
                                       "np": lambda: np.add(na, nb, out=na)})
            row("a.sub_(b)", dtype, n, {"db": lambda: A.sub_(B), "torch": lambda: ta.sub_(tb),
                                       "np": lambda: np.subtract(na, nb, out=na)})
            row("a.add_(1)", dtype, n, {"db": lambda: A.add_(1), "torch": lambda: ta.add_(1),
                                       "np": lambda: np.add(na, 1, out=na)})
            row("a.mul_(1)", dtype, n, {"db": lambda: A.mul_(1), "torch": lambda: ta.mul_(1),
                                       "np": lambda: np.multiply(na, 1, out=na)})
            if dtype in FLOATS:  # in-place division of integers is refused (a float result)
                row("a.div_(1)", dtype, n, {"db": lambda: A.div_(1), "torch": lambda: ta.div_(1),
                                           "np": lambda: np.divide(na, 1, out=na)})
            row("a ** 2", dtype, n, {"db": lambda: A**2, "torch": lambda: ta**2, "np": lambda: na**2})
            # A general power: positive bases, exponents of either sign (small
            # integer ones for integers).
            if dtype in FLOATS:
                base, e = make(dtype, (n,), 5, positive=True), make(dtype, (n,), 4)
            else:
                base, e = a, wrap(torch.randint(0, 5, (n,), generator=torch.Generator().manual_seed(4),
                                                dtype=DT[dtype][1]), dtype)
            X, Y, tx, ty, nx, ny = base["db"], e["db"], base["torch"], e["torch"], base["np"], e["np"]
            row("a ** b", dtype, n, {"db": lambda: X**Y, "torch": lambda: tx**ty,
                                    "np": (lambda: nx**ny) if nx is not None else None})
            row("abs(a)", dtype, n, {"db": lambda: abs(A), "torch": lambda: ta.abs(), "np": lambda: np.abs(na)})
            row("-a", dtype, n, {"db": lambda: -A, "torch": lambda: -ta, "np": lambda: -na})
            row("a < b", dtype, n, {"db": lambda: A < B, "torch": lambda: ta < tb, "np": lambda: na < nb})
            row("a <= b", dtype, n, {"db": lambda: A <= B, "torch": lambda: ta <= tb, "np": lambda: na <= nb})
            row("a > b", dtype, n, {"db": lambda: A > B, "torch": lambda: ta > tb, "np": lambda: na > nb})
            row("a >= b", dtype, n, {"db": lambda: A >= B, "torch": lambda: ta >= tb, "np": lambda: na >= nb})
            row("a == b", dtype, n, {"db": lambda: A == B, "torch": lambda: ta == tb, "np": lambda: na == nb})
            row("a != b", dtype, n, {"db": lambda: A != B, "torch": lambda: ta != tb, "np": lambda: na != nb})
            row("a < 0", dtype, n, {"db": lambda: A < 0, "torch": lambda: ta < 0, "np": lambda: na < 0})
            # The new ops (skipped where this dlbridge lacks them).
            row("maximum(a, b)", dtype, n, {"db": (lambda: db.maximum(A, B)) if has(db, "maximum") else None,
                                            "torch": lambda: torch.maximum(ta, tb), "np": lambda: np.maximum(na, nb)})
            row("minimum(a, b)", dtype, n, {"db": (lambda: db.minimum(A, B)) if has(db, "minimum") else None,
                                            "torch": lambda: torch.minimum(ta, tb), "np": lambda: np.minimum(na, nb)})
            row("a // b", dtype, n, {"db": (lambda: A // B) if has(A, "__floordiv__") else None,
                                     "torch": lambda: ta // tb, "np": lambda: na // nb})
            row("a % b", dtype, n, {"db": (lambda: A % B) if has(A, "__mod__") else None,
                                    "torch": lambda: ta % tb, "np": lambda: na % nb})
            if dtype in FLOATS:  # an optimizer's step; NumPy has no alpha: its idiom makes 2 * b
                row("a.add_(b, alpha=2)", dtype, n, {
                    "db": (lambda: A.add_(B, alpha=2)) if has(db, "add") else None,
                    "torch": lambda: ta.add_(tb, alpha=2), "np": lambda: np.add(na, 2 * nb, out=na)})
            if dtype in INTS:
                row("a & b", dtype, n, {"db": (lambda: A & B) if has(A, "__and__") else None,
                                        "torch": lambda: ta & tb, "np": lambda: na & nb})
                row("~a", dtype, n, {"db": (lambda: ~A) if has(A, "__invert__") else None,
                                     "torch": lambda: ~ta, "np": lambda: ~na})
            if dtype in FLOATS:
                p = make(dtype, (n,), 3, positive=True)
                P, tp, npp = p["db"], p["torch"], p["np"]
                for name in ("exp", "log", "sqrt"):
                    row(f"{name}(a)", dtype, n, {
                        "db": (lambda name=name: getattr(P, name)()) if has(P, name) else None,
                        "torch": lambda name=name: getattr(tp, name)(),
                        "np": lambda name=name: getattr(np, name)(npp)})
    for n in SIZES:
        a, b = make("bool", (n,), 1), make("bool", (n,), 2)
        A, B, ta, tb, na, nb = a["db"], b["db"], a["torch"], b["torch"], a["np"], b["np"]
        row("a == b", "bool", n, {"db": lambda: A == B, "torch": lambda: ta == tb, "np": lambda: na == nb})
        row("a != b", "bool", n, {"db": lambda: A != B, "torch": lambda: ta != tb, "np": lambda: na != nb})
        row("a < b", "bool", n, {"db": lambda: A < B, "torch": lambda: ta < tb, "np": lambda: na < nb})
        row("a + b", "bool", n, {"db": lambda: A + B, "torch": lambda: ta + tb, "np": lambda: na | nb})
        row("a * b", "bool", n, {"db": lambda: A * B, "torch": lambda: ta * tb, "np": lambda: na & nb})
        row("maximum(a, b)", "bool", n, {"db": (lambda: db.maximum(A, B)) if has(db, "maximum") else None,
                                         "torch": lambda: torch.maximum(ta, tb), "np": lambda: np.maximum(na, nb)})
        row("a & b", "bool", n, {"db": (lambda: A & B) if has(A, "__and__") else None,
                                 "torch": lambda: ta & tb, "np": lambda: na & nb})
        row("a | b", "bool", n, {"db": (lambda: A | B) if has(A, "__or__") else None,
                                 "torch": lambda: ta | tb, "np": lambda: na | nb})
        row("~a", "bool", n, {"db": (lambda: ~A) if has(A, "__invert__") else None,
                              "torch": lambda: ~ta, "np": lambda: ~na})


# ------------------------------------------------------------------ reductions
def reductions():
    for dtype in NUMERIC + ["bool"]:
        for n in SIZES:
            a = make(dtype, (n,), 1)
            A, ta, na = a["db"], a["torch"], a["np"]
            row("sum()", dtype, n, {"db": lambda: A.sum(), "torch": lambda: ta.sum(), "np": lambda: na.sum()})
            if dtype in FLOATS:
                row("mean()", dtype, n, {"db": lambda: A.mean(), "torch": lambda: ta.mean(), "np": lambda: na.mean()})
            if dtype != "bool":
                row("amax()", dtype, n, {"db": lambda: A.amax(), "torch": lambda: ta.amax(), "np": lambda: na.max()})
                row("max()", dtype, n, {"db": lambda: A.max(), "torch": lambda: ta.max(), "np": lambda: na.max()})
    for dtype in NUMERIC + ["bool"]:
        for shape in SHAPES_2D + SHAPES_3D:
            a = make(dtype, shape, 1)
            A, ta, na = a["db"], a["torch"], a["np"]
            size = "x".join(map(str, shape))
            for d in range(len(shape)):
                row(f"sum(dim={d})", dtype, size, {"db": lambda d=d: A.sum(d), "torch": lambda d=d: ta.sum(d),
                                                   "np": lambda d=d: na.sum(d)}, nd=True)
                if dtype in FLOATS:
                    row(f"mean(dim={d})", dtype, size, {"db": lambda d=d: A.mean(d), "torch": lambda d=d: ta.mean(d),
                                                        "np": lambda d=d: na.mean(d)}, nd=True)
                if dtype == "bool":  # a count along a dim; bools have no max in torch's amax
                    continue
                row(f"amax(dim={d})", dtype, size, {"db": lambda d=d: A.amax(d), "torch": lambda d=d: ta.amax(d),
                                                    "np": lambda d=d: na.max(d)}, nd=True)
                row(f"max(dim={d})", dtype, size, {"db": lambda d=d: A.max(d), "torch": lambda d=d: ta.max(d),
                                                   "np": lambda d=d: (na.max(d), na.argmax(d))}, nd=True)


# ------------------------------------------------------------- casts, copies
def casts():
    names = ["float16", "bfloat16", "float32", "float64", "int32", "int64"]
    for src in names:
        for dst in names:
            if src == dst:
                continue
            for n in SIZES:
                a = make(src, (n,), 1)
                A, ta, na = a["db"], a["torch"], a["np"]
                ddb, dt, dn = DT[dst]
                np_side = (lambda: na.astype(dn)) if (na is not None and dn is not None) else None
                row(f"cast -> {dst}", src, n, {"db": lambda: A.to(ddb), "torch": lambda: ta.to(dt), "np": np_side})


def copies():
    for dtype in ["float32", "float64", "float16", "bfloat16", "int32", "int64", "bool"]:
        for shape in SHAPES_2D:
            a, b = make(dtype, shape, 1), make(dtype, shape, 2)
            A, ta, na = a["db"], a["torch"], a["np"]
            B, tb, nb = b["db"], b["torch"], b["np"]
            size = "x".join(map(str, shape))
            row("m.T.contiguous()", dtype, size, {"db": lambda: A.T.contiguous(), "torch": lambda: ta.T.contiguous(),
                                                  "np": lambda: np.ascontiguousarray(na.T)}, nd=True)
            row("m[::2, ::2].contiguous()", dtype, size, {
                "db": lambda: A[::2, ::2].contiguous(), "torch": lambda: ta[::2, ::2].contiguous(),
                "np": lambda: np.ascontiguousarray(na[::2, ::2])}, nd=True)
            row("m + m[0] (broadcast)", dtype, size, {"db": lambda: A + A[0], "torch": lambda: ta + ta[0],
                                                     "np": lambda: na + na[0]}, nd=True)
            row("m + m[:, :1] (broadcast)", dtype, size, {"db": lambda: A + A[:, :1], "torch": lambda: ta + ta[:, :1],
                                                         "np": lambda: na + na[:, :1]}, nd=True)
            row("m[::2, ::2] + m[1::2, 1::2]", dtype, size, {
                "db": lambda: A[::2, ::2] + A[1::2, 1::2], "torch": lambda: ta[::2, ::2] + ta[1::2, 1::2],
                "np": lambda: na[::2, ::2] + na[1::2, 1::2]}, nd=True)
            row("m.T + m2", dtype, size, {"db": lambda: A.T + B, "torch": lambda: ta.T + tb,
                                          "np": lambda: na.T + nb}, nd=True)
            # New tensors keep a transpose's strides (torch's preserve_format,
            # NumPy's order='K'): one pass over memory, no transpose.
            row("m.T.clone()", dtype, size, {"db": lambda: A.T.clone(), "torch": lambda: ta.T.clone(),
                                             "np": lambda: na.T.copy(order="K")}, nd=True)
            other = "float32" if dtype == "float64" else "float64"
            ddb, dt, dn = DT[other]
            row(f"m.T.to({other})", dtype, size, {"db": lambda: A.T.to(ddb), "torch": lambda: ta.T.to(dt),
                                                  "np": lambda: na.T.astype(dn)}, nd=True)
        for shape in SHAPES_3D:
            a = make(dtype, shape, 1)
            A, ta, na = a["db"], a["torch"], a["np"]
            size = "x".join(map(str, shape))
            row("permute(2,0,1).contiguous()", dtype, size, {
                "db": lambda: A.permute(2, 0, 1).contiguous(), "torch": lambda: ta.permute(2, 0, 1).contiguous(),
                "np": lambda: np.ascontiguousarray(na.transpose(2, 0, 1))}, nd=True)


# ---------------------------------------------------------------------- memory
# The peak resident memory an op adds beyond its output, each side in a fresh
# process that resets its peak (/proc/self/clear_refs) before the op; the
# target is no temporary larger than the output (plus 1 MiB for the
# allocator's pages and a block of src/ops/blocks.rs).
PEAK_SCRIPT = '''
import sys
sys.path.insert(0, {bench!r})
import numpy as np, torch
from _timing import load_impl
db = load_impl("dlbridge", None)
torch.set_num_threads({threads})

def status(key):
    for line in open("/proc/self/status"):
        if line.startswith(key):
            return int(line.split()[1]) * 1024

lib = {{"db": db.from_dlpack, "torch": lambda t: t, "np": lambda t: t.numpy()}}[{side!r}]
k = {{"db": dict(dtype=db.float64), "torch": dict(dtype=torch.float64), "np": dict(dtype=np.float64)}}[{side!r}]

def inputs(n):
    x = torch.arange(n, dtype=torch.int32) % 7
    y = torch.full((n,), 3.0, dtype=torch.float64)
    f = torch.rand(n, dtype=torch.float32)
    return lib(x), lib(y), lib(f), lib(f.view(-1, 2000))

# The op once on small inputs (threads, first-call set-up), then on large
# ones: nothing freed at the large size is cached yet, so every byte the
# op takes shows in the peak.
X, Y, F, M = inputs(200_000)
r = {stmt}
del r
X, Y, F, M = inputs(10**7)
base = status("VmRSS")
open("/proc/self/clear_refs", "w").write("5")
r = {stmt}
print(status("VmHWM") - base)
'''
MEMORY_ROWS = [  # label, statement (X int32, Y float64, F float32, M float32 5000x2000; k the dtype keyword), output bytes
    ("int32 < float64 (10^7)", "X < Y", 10**7),
    ("sum(dtype=float64) of float32 (10^7)", "F.sum(**k)", 8),
    ("mean(dtype=float64) of float32 (10^7)", "F.mean(**k)", 8),
    ("sum(1, dtype=float64) of float32 5000x2000", "M.sum(1, **k)", 5000 * 8),
]


def memory():
    import subprocess

    label = "memory"
    if ARGS.filter and not re.search(ARGS.filter, label):
        return
    try:
        open("/proc/self/clear_refs", "w").write("5")
    except OSError:
        print("\nmemory: skipped (the peak resident size is reset through Linux's /proc/self/clear_refs)")
        return
    print(f"\n{'memory: peak added beyond the output':<44} {'dlbridge':>10} {'torch':>10} {'NumPy':>10}  target met?")
    bench = str(Path(__file__).resolve().parent)
    for name, stmt, out_bytes in MEMORY_ROWS:
        grew = {}
        for side in ("db", "torch", "np"):
            code = PEAK_SCRIPT.format(bench=bench, threads=ARGS.threads, side=side, stmt=stmt)
            try:
                p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
                grew[side] = max(int(p.stdout.split()[-1]) - out_bytes, 0) if p.returncode == 0 else None
            except subprocess.TimeoutExpired:
                grew[side] = None
        met = grew["db"] is not None and grew["db"] <= max(out_bytes, 0) + 2**20
        MEMORY.append(dict(op=name, out_bytes=out_bytes, met=met, **grew))
        mib = lambda v: "-" if v is None else f"{v / 2**20:.1f} MiB"  # noqa: E731
        print(f"{name:<44} {mib(grew['db']):>10} {mib(grew['torch']):>10} {mib(grew['np']):>10}"
              f"  {'yes' if met else 'NO'}", flush=True)


MEMORY = []


def summary():
    timed = [r for r in ROWS if "ratio" in r]
    met = sum(r["met"] for r in timed)
    gm = math.exp(statistics.fmean(math.log(r["ratio"]) for r in timed)) if timed else float("nan")
    skipped = len(ROWS) - len(timed)
    print(f"\n{met} of {len(timed)} rows within target; geometric mean of ratios {gm:.2f}"
          + (f"; {skipped} skipped" if skipped else ""))
    out = FILTERED_RESULTS if ARGS.filter else RESULTS
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(dict(machine=machine_info(db, threads=ARGS.threads, quick=ARGS.quick),
                                       rows=ROWS, met=met, timed=len(timed), geomean=gm, memory=MEMORY), indent=1))


def main():
    print(f"threads: {ARGS.threads} (torch.set_num_threads, RAYON_NUM_THREADS, DLBRIDGE_NUM_THREADS); "
          f"{SAMPLES} interleaved samples per side, medians")
    print(f"{'op':<34} {'dtype':<9} {'size':>13} {'dlbridge':>10} {'peer':>10} {'(which)':<6} {'ratio':>6}"
          f" {'target':>6}  met?")
    print("-" * 104)
    elementwise()
    reductions()
    casts()
    copies()
    memory()
    summary()


if __name__ == "__main__":
    sys.exit(main())
