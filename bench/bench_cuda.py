#!/usr/bin/env python
"""CUDA benchmark for dlbridge: host<->device transfers from/to pageable memory,
elementwise and sum kernels, and the per-call cost of CUDA exchanges, against PyTorch
(and CuPy) in one run.

    python bench/bench_cuda.py [--impl dlbridge|torch] [--quick] [--only transfers] [--check]

Prints a table (dlbridge, peer, ratio, target, PASS/FAIL per row) and writes the same
to bench/results/cuda.json. Exits 0 unless --check is given and a row fails. Without a
CUDA device (dlbridge.cuda.is_available() False, or torch without CUDA) it prints why
and exits 0, measuring nothing and writing nothing.
`--only transfers` runs rows 1-2 and the host references alone (to compare the two ways the
staging ring can store, DLBRIDGE_CUDA_PAGEABLE=staged|streamed, one
process each); its results go to cuda-transfers-<mode>.json.
`--impl torch` runs every "dlbridge" side with torch as a stand-in (to check the
script itself end to end on a GPU machine; ratios are then ~1).
"""
import argparse
import json
import os
import statistics
import sys
from pathlib import Path
from time import perf_counter_ns
from types import SimpleNamespace

import numpy as np
import torch

from _timing import load_impl, machine_info, per_call_ns, print_table

GiB_F32 = 2**28  # float32 elements in 1 GiB
MiB = 2**20
RESULTS = Path(__file__).resolve().parent / "results" / "cuda.json"
LEGEND = ("ratio: 'thru' rows = dlbridge / peer throughput (higher is better); "
          "'time' rows = dlbridge / peer time per call (lower is better); "
          "'O(1)' rows = time on 1 GiB / time on 1 element")


# ----------------------------------------------------------------- helpers
def gpu_seconds(fns, loops, samples, sync):
    """Median seconds per call of each fn, GPU work included.

    Each sample synchronises the device, runs fn `loops` times, synchronises again
    and divides the wall time (perf_counter_ns) by `loops`. The functions' samples
    are interleaved so drift (clocks, temperature) hits all sides alike. A warm-up
    call of each comes first (context start, kernel compilation, allocator pools).
    """
    for f in fns:
        f()
        sync()
    times = [[] for _ in fns]
    for _ in range(samples):
        for f, out in zip(fns, times):
            sync()
            t0 = perf_counter_ns()
            for _ in range(loops):
                f()
            sync()
            out.append((perf_counter_ns() - t0) / loops / 1e9)
    return [statistics.median(ts) for ts in times]


def gbps(nbytes, seconds):
    return nbytes / seconds / 1e9


def row(rows, name, ours, peer, ratio, target, ok, unit, kind, note=None):
    """ok None means skipped (the row is reported, not counted)."""
    rows.append(dict(row=name, dlbridge=ours, peer=peer, ratio=ratio, ratio_kind=kind,
                     target=target, unit=unit, passed=None if ok is None else bool(ok), note=note))


def thru_rows(rows, name, ours_gbps, peer_gbps, floor, correct, note=None):
    ratio = ours_gbps / peer_gbps
    row(rows, name, ours_gbps, peer_gbps, ratio, f"thru >= {floor}", ratio >= floor and correct,
        "GB/s", "thru", note if correct else "wrong result")


# ------------------------------------------------------------------- rows
def bench_h2d(db, cfg, rows, sync):
    """Rows 1a-1d: host (pageable NumPy memory) -> device, into new and into existing memory."""
    nbytes = cfg.xfer_mib * MiB
    a = np.random.default_rng(0).random(nbytes // 4, dtype=np.float32)  # pages touched: resident
    pinned = torch.empty(nbytes, dtype=torch.uint8, pin_memory=True)
    pinned.fill_(1)
    dev = torch.empty(nbytes, dtype=torch.uint8, device="cuda")
    x, ta = db.empty(a.size, device="cuda"), torch.from_numpy(a)
    tx = torch.empty(a.size, device="cuda")
    t_ours, t_torch, t_into, t_torch_into, t_pinned = gpu_seconds([
        lambda: db.from_numpy(a).to("cuda"),
        lambda: torch.from_numpy(a).to("cuda"),
        lambda: x.copy_(db.from_numpy(a)),
        lambda: tx.copy_(ta),
        lambda: dev.copy_(pinned, non_blocking=True),
    ], cfg.xfer_loops, cfg.xfer_samples, sync)
    step = max(1, a.size // 4096)
    correct = np.array_equal(db.from_numpy(a).to("cuda")[::step].cpu().numpy(), a[::step])
    x.fill_(0)
    x.copy_(db.from_numpy(a))
    into_correct = np.array_equal(x[::step].cpu().numpy(), a[::step])
    ours, into, pinned_bw = gbps(nbytes, t_ours), gbps(nbytes, t_into), gbps(nbytes, t_pinned)
    thru_rows(rows, "1a. H2D pageable: db vs torch .to('cuda')", ours, gbps(nbytes, t_torch), 1.0, correct)
    thru_rows(rows, "1b. H2D pageable: db vs pinned cudaMemcpy", ours, pinned_bw, 0.85, correct)
    thru_rows(rows, "1c. H2D into existing: x.copy_(a) vs torch", into, gbps(nbytes, t_torch_into), 1.0,
              into_correct)
    thru_rows(rows, "1d. H2D into existing: x.copy_(a) vs pinned", into, pinned_bw, 0.85, into_correct)
    return pinned_bw


def bench_d2h(db, cfg, rows, sync):
    """Rows 2a-2f: device -> host, into new pageable memory each call (2a-2d) and into an
    existing NumPy array (2e-2f: the link and the staging alone, no first touch of new pages)."""
    nbytes = cfg.xfer_mib * MiB
    a = np.random.default_rng(1).random(nbytes // 4, dtype=np.float32)
    x, tx = db.from_numpy(a).to("cuda"), torch.from_numpy(a).to("cuda")
    pinned = torch.empty(nbytes, dtype=torch.uint8, pin_memory=True)
    dev = torch.empty(nbytes, dtype=torch.uint8, device="cuda")
    out = np.empty_like(a)
    out.fill(0)  # pages touched: resident
    o, to = db.from_numpy(out), torch.from_numpy(out)
    t_cpu, t_numpy, t_torch, t_into, t_torch_into, t_pinned = gpu_seconds([
        lambda: x.cpu(),
        lambda: x.numpy(force=True),
        lambda: tx.cpu(),
        lambda: o.copy_(x),
        lambda: to.copy_(tx),
        lambda: pinned.copy_(dev, non_blocking=True),
    ], cfg.xfer_loops, cfg.xfer_samples, sync)
    correct = np.array_equal(x.cpu().numpy(), a) and np.array_equal(x.numpy(force=True), a)
    out.fill(0)
    o.copy_(x)
    into_correct = np.array_equal(out, a)
    peer, pinned_bw = gbps(nbytes, t_torch), gbps(nbytes, t_pinned)
    thru_rows(rows, "2a. D2H t.cpu() vs torch tt.cpu()", gbps(nbytes, t_cpu), peer, 1.0, correct)
    thru_rows(rows, "2b. D2H t.numpy(force=True) vs tt.cpu()", gbps(nbytes, t_numpy), peer, 1.0, correct)
    thru_rows(rows, "2c. D2H t.cpu() vs pinned cudaMemcpy", gbps(nbytes, t_cpu), pinned_bw, 0.85, correct)
    thru_rows(rows, "2d. D2H t.numpy(force=True) vs pinned", gbps(nbytes, t_numpy), pinned_bw, 0.85, correct)
    into = gbps(nbytes, t_into)
    thru_rows(rows, "2e. D2H into existing: out.copy_(t) vs torch", into, gbps(nbytes, t_torch_into), 1.0,
              into_correct)
    thru_rows(rows, "2f. D2H into existing: out.copy_(t) vs pinned", into, pinned_bw, 0.85, into_correct)
    return pinned_bw


def bench_host_copy(cfg, sync):
    """Host memory bandwidth (GB/s of one copy's size) for one thread (np.copyto) and for
    torch's threads (a CPU copy_): what the pinned staging of pageable memory can reach."""
    n = cfg.xfer_mib * MiB // 4
    a, b = np.ones(n, dtype=np.float32), np.zeros(n, dtype=np.float32)
    ta, tb = torch.from_numpy(a), torch.from_numpy(b)
    one, many = gpu_seconds([lambda: np.copyto(b, a), lambda: tb.copy_(ta)], cfg.xfer_loops, cfg.xfer_samples,
                            sync)
    return gbps(4 * n, one), gbps(4 * n, many)


def bench_registered(cfg, sync):
    """Pageable NumPy memory registered with the driver for each copy (cudaHostRegister,
    cudaMemcpy, cudaHostUnregister), both ways, GB/s including the pinning: whether
    DMA straight from the user's pages could beat the pinned staging's bound, the host's
    memcpy (rows 1b-2f). A reference for the next change, not a dlbridge row; None where
    torch's cudart refuses."""
    nbytes = cfg.xfer_mib * MiB
    a = np.random.default_rng(2).random(nbytes // 4, dtype=np.float32)
    back = np.zeros_like(a)
    dev = torch.empty(a.size, device="cuda")
    cudart = torch.cuda.cudart()

    def through_registered(host, copy):
        ptr = host.ctypes.data
        if int(cudart.cudaHostRegister(ptr, host.nbytes, 0)) != 0:
            raise RuntimeError("cudaHostRegister refused the pages")
        try:
            copy()
        finally:
            torch.cuda.synchronize()
            cudart.cudaHostUnregister(ptr)

    def h2d():
        through_registered(a, lambda: dev.copy_(torch.from_numpy(a), non_blocking=True))

    def d2h():
        through_registered(back, lambda: torch.from_numpy(back).copy_(dev, non_blocking=True))

    try:
        t_h2d, t_d2h = gpu_seconds([h2d, d2h], cfg.xfer_loops, cfg.xfer_samples, sync)
    except (RuntimeError, AttributeError) as e:
        print(f"pageable registered per call: not measured ({e})")
        return None, None
    if not np.array_equal(back, a):
        print("pageable registered per call: the copies came back wrong; not counted")
        return None, None
    return gbps(nbytes, t_h2d), gbps(nbytes, t_d2h)


def bench_copy_bw(cfg, sync):
    """Device-to-device copy bandwidth (torch dst.copy_(src)), read + write bytes."""
    n = cfg.elems
    src, dst = torch.rand(n, device="cuda"), torch.empty(n, device="cuda")
    (t,) = gpu_seconds([lambda: dst.copy_(src)], cfg.gpu_loops, cfg.gpu_samples, sync)
    return gbps(2 * n * 4, t)


def bench_elementwise(db, cfg, rows, sync, copy_bw):
    """Rows 3a-3h: a + b and a * b on float32 and bfloat16 (3 * n * itemsize bytes moved)."""
    n = cfg.elems
    letters = iter("abcdefgh")
    for dname, tag in (("float32", "f32"), ("bfloat16", "bf16")):
        a, b = (db.rand(n, dtype=getattr(db, dname), device="cuda") for _ in range(2))
        ta, tb = (torch.rand(n, dtype=getattr(torch, dname), device="cuda") for _ in range(2))
        nbytes = 3 * n * ta.element_size()
        for sym, op in (("+", lambda p, q: p + q), ("*", lambda p, q: p * q)):
            t_ours, t_torch = gpu_seconds([lambda: op(a, b), lambda: op(ta, tb)],
                                          cfg.gpu_loops, cfg.gpu_samples, sync)
            step = max(1, n // 4096)
            got = torch.from_dlpack(op(a, b))[::step]
            want = op(torch.from_dlpack(a)[::step], torch.from_dlpack(b)[::step])
            correct = bool(torch.equal(got, want))
            ours = gbps(nbytes, t_ours)
            thru_rows(rows, f"3{next(letters)}. a {sym} b {tag}: db vs torch", ours, gbps(nbytes, t_torch),
                      1.0, correct)
            thru_rows(rows, f"3{next(letters)}. a {sym} b {tag}: vs D2D copy bandwidth", ours, copy_bw, 0.85,
                      correct, note="peer = torch dst.copy_(src), read+write bytes")
        del a, b, ta, tb


def bench_sum(db, cfg, rows, sync, copy_bw):
    """Rows 4a-4b: t.sum() on float32 (n * 4 bytes read)."""
    n = cfg.elems
    a, ta = db.rand(n, device="cuda"), torch.rand(n, device="cuda")
    t_ours, t_torch = gpu_seconds([lambda: a.sum(), lambda: ta.sum()], cfg.gpu_loops, cfg.gpu_samples, sync)
    ref = torch.from_dlpack(a).double().sum().item()
    correct = abs(a.sum().item() - ref) <= 1e-6 * abs(ref)
    ours = gbps(n * 4, t_ours)
    thru_rows(rows, "4a. t.sum() f32: db vs torch", ours, gbps(n * 4, t_torch), 1.0, correct)
    thru_rows(rows, "4b. t.sum() f32: vs D2D copy bandwidth", ours, copy_bw, 0.85, correct,
              note="bytes read only; peer = torch dst.copy_(src), read+write bytes")


def bench_exchange(db, cfg, rows):
    """Rows 5a-5d: per-call exchange cost with torch, O(1) in size, vs torch <- CuPy."""
    t_small, t_big = db.empty(16, device="cuda"), db.empty(GiB_F32, device="cuda")
    tt_small, tt_big = torch.empty(16, device="cuda"), torch.empty(GiB_F32, device="cuda")
    assert torch.from_dlpack(t_small).data_ptr() == t_small.data_ptr()
    assert db.from_dlpack(tt_small).data_ptr() == tt_small.data_ptr()
    to_torch, from_torch = torch.from_dlpack, db.from_dlpack
    try:
        import cupy as cp
        c = cp.empty(16, dtype=cp.float32)
    except Exception as e:  # noqa: BLE001 - no CuPy, or no CuPy for this CUDA
        c, why = None, f"cupy unavailable: {type(e).__name__}: {e}"[:120]
    cases = [("5a. torch.from_dlpack(t) vs (cupy array)", "f(x)", dict(f=to_torch, x=t_small)),
             ("5b. db.from_dlpack(tt) vs torch<-cupy", "f(x)", dict(f=from_torch, x=tt_small))]
    for name, stmt, ns in cases:
        if c is None:
            (ours,) = per_call_ns([(stmt, ns)], cfg.call_loops, cfg.call_samples)
            row(rows, name, ours, None, None, "time <= 1.0", None, "ns", "time", note=why)
            continue
        ours, peer = per_call_ns([(stmt, ns), ("f(x)", dict(f=to_torch, x=c))], cfg.call_loops, cfg.call_samples)
        row(rows, name, ours, peer, ours / peer, "time <= 1.0", ours / peer <= 1.0, "ns", "time",
            note="peer = torch.from_dlpack(cupy 16-element array)")
    for name, f, big, small in (("5c. O(1) torch.from_dlpack(t): 1 GiB vs 1 elem", to_torch, t_big, t_small),
                                ("5d. O(1) db.from_dlpack(tt): 1 GiB vs 1 elem", from_torch, tt_big, tt_small)):
        t_b, t_s = per_call_ns([("f(x)", dict(f=f, x=big)), ("f(x)", dict(f=f, x=small))],
                               cfg.call_loops, cfg.call_samples * 2)
        ratio = t_b / t_s
        row(rows, name, t_b, t_s, ratio, "0.9 .. 1.1", 0.9 <= ratio <= 1.1, "ns", "O(1)",
            note="dlbridge column = 1 GiB tensor, peer column = 16-element tensor")


# ------------------------------------------------------------------- main
def gpu_info(db):
    props = torch.cuda.get_device_properties(0)
    info = machine_info(db, torch_cuda=torch.version.cuda, gpu=props.name,
                        gpu_memory_gib=round(props.total_memory / 2**30, 1),
                        gpu_l2_mib=round(getattr(props, "L2_cache_size", 0) / MiB, 1))
    nvrtc = getattr(db.cuda, "nvrtc_version", None)
    if nvrtc is not None:
        try:
            info["nvrtc"] = ".".join(map(str, nvrtc()))
        except Exception:  # noqa: BLE001 - informational only
            pass
    try:
        import cupy
        info["cupy"] = cupy.__version__
    except Exception:  # noqa: BLE001
        info["cupy"] = None
    return info


def fmt(v, unit):
    if v is None:
        return "-"
    if unit == "GB/s":
        return f"{v:.1f} GB/s"
    if v >= 1e6:
        return f"{v / 1e6:.2f} ms"
    return f"{v / 1e3:.2f} us" if v >= 1e4 else f"{v:.0f} ns"


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--impl", choices=["dlbridge", "torch"], default="dlbridge",
                   help="what runs the 'dlbridge' side (torch = stand-in)")
    p.add_argument("--quick", action="store_true", help="smaller buffers, few repetitions (smoke test)")
    p.add_argument("--only", choices=["transfers"], help="rows 1-2 and the host references alone")
    p.add_argument("--check", action="store_true", help="exit 1 if any target fails")
    args = p.parse_args()
    if args.quick:
        cfg = SimpleNamespace(xfer_mib=256, xfer_loops=2, xfer_samples=3, elems=2**26, gpu_loops=10,
                              gpu_samples=5, call_loops=500, call_samples=15)
    else:
        cfg = SimpleNamespace(xfer_mib=1024, xfer_loops=3, xfer_samples=7, elems=2**28, gpu_loops=20,
                              gpu_samples=15, call_loops=2000, call_samples=100)

    db = load_impl(args.impl, SimpleNamespace(
        from_numpy=torch.from_numpy, from_dlpack=torch.from_dlpack, rand=torch.rand, empty=torch.empty,
        float32=torch.float32, bfloat16=torch.bfloat16, cuda=torch.cuda,
        __version__=f"torch {torch.__version__} (stand-in)"))
    if not db.cuda.is_available():
        print("bench_cuda: skipped, no CUDA device (dlbridge.cuda.is_available() is False); nothing measured")
        return 0
    if not torch.cuda.is_available():
        print("bench_cuda: skipped, torch has no CUDA (the peer side needs a CUDA build of torch); nothing measured")
        return 0

    def sync():  # device-wide: covers dlbridge's legacy stream and torch's streams alike
        db.cuda.synchronize()
        torch.cuda.synchronize()

    info = gpu_info(db)
    print(f"machine: {info['cpu']}, {info['cores']} cores, {info['platform']}")
    print(f"gpu: {info['gpu']} ({info['gpu_memory_gib']} GiB, L2 {info['gpu_l2_mib']} MiB), "
          f"torch {info['torch']} (CUDA {info['torch_cuda']}), dlbridge {info['dlbridge']}, "
          f"nvrtc {info.get('nvrtc', '?')}, cupy {info['cupy']}")
    pageable = os.environ.get("DLBRIDGE_CUDA_PAGEABLE") or "default"
    info["pageable"] = pageable
    print(f"impl={args.impl} quick={args.quick} transfers={cfg.xfer_mib} MiB, kernels={cfg.elems:,} elements, "
          f"DLBRIDGE_CUDA_PAGEABLE={pageable}\n")

    rows = []
    pinned_h2d = bench_h2d(db, cfg, rows, sync)
    pinned_d2h = bench_d2h(db, cfg, rows, sync)
    copy_bw = bench_copy_bw(cfg, sync)
    host_one, host_many = bench_host_copy(cfg, sync)
    reg_h2d, reg_d2h = bench_registered(cfg, sync)
    if args.only is None:
        bench_elementwise(db, cfg, rows, sync, copy_bw)
        bench_sum(db, cfg, rows, sync, copy_bw)
        bench_exchange(db, cfg, rows)
    print_table(rows, fmt, 48, "SKIP")
    print(f"reference bandwidths: pinned H2D {pinned_h2d:.1f} GB/s, pinned D2H {pinned_d2h:.1f} GB/s, "
          f"D2D copy {copy_bw:.1f} GB/s (read+write); host memcpy {host_one:.1f} GB/s on one thread, "
          f"{host_many:.1f} GB/s on torch's {torch.get_num_threads()}")
    if reg_h2d is not None:
        print(f"pageable memory registered per call (register, copy, unregister): H2D {reg_h2d:.1f} GB/s, "
              f"D2H {reg_d2h:.1f} GB/s")

    counted = [r for r in rows if r["passed"] is not None]
    failed = [r["row"] for r in counted if not r["passed"]]
    skipped = len(rows) - len(counted)
    print(f"\n{len(counted) - len(failed)}/{len(counted)} rows pass" + (f", {skipped} skipped" if skipped else ""))
    results = RESULTS if args.only is None else RESULTS.with_name(f"cuda-{args.only}-{pageable}.json")
    results.parent.mkdir(parents=True, exist_ok=True)
    results.write_text(json.dumps(dict(impl=args.impl, quick=args.quick, machine=info, config=vars(cfg),
                                       reference_gbps=dict(pinned_h2d=pinned_h2d, pinned_d2h=pinned_d2h,
                                                           d2d_copy=copy_bw, host_copy_1_thread=host_one,
                                                           host_copy_torch_threads=host_many,
                                                           registered_h2d=reg_h2d, registered_d2h=reg_d2h),
                                       rows=rows), indent=2))
    print(f"wrote {results}")
    return 1 if args.check and failed else 0


if __name__ == "__main__":
    sys.exit(main())
