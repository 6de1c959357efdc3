"""A short run through every CUDA path of dlbridge, for compute-sanitizer (memcheck,
racecheck) on a GPU machine: tests/gpu/run_on_gpu.sh runs it under each tool.

    python tests/gpu/sanitizer_workload.py [--only kernels|transfers|exchange|ipc] [--device cpu]

The pytest GPU suite is too slow under the sanitizers (each launch is instrumented), so this
touches each path once or twice, small, and still checks the values against NumPy: every
kernel family (binary ops with tensor and scalar operands, contiguous, strided and
broadcast; comparisons; abs, neg; casts between every pair of a dtype set; strided copies,
fill, rand; reductions over all and over each dim), the pinned staging ring (transfers
larger than one staging buffer, both ways), exchange with PyTorch and CuPy both ways with
the stream handshake, and CUDA IPC to a spawned child. Without a CUDA device it prints
why and exits 0. Exits 1 on a wrong value. `--device cpu` runs the kernel and transfer
parts on the host instead, which checks this script itself on a machine without a GPU
(tests/python/test_gpu_batch.py does).
"""

import argparse
import multiprocessing as mp
import sys

import numpy as np

import dlbridge as db

DTYPES = ["float32", "float64", "float16", "bfloat16", "int32", "int64", "uint8", "bool"]
DEV = "cuda:0"
FAILURES = []


def check(what, got, want, tol=0.0):
    if isinstance(got, db.Tensor):  # (a CUDA tensor has no __array__, as torch's)
        got = host(got)
    got = np.asarray(got, dtype=np.float64)
    want = np.asarray(want, dtype=np.float64)
    if got.shape != want.shape or not np.allclose(got, want, rtol=tol, atol=tol, equal_nan=True):
        FAILURES.append(what)
        print(f"WRONG: {what}", file=sys.stderr)


def host(t):
    return np.asarray(t.cpu().to(db.float64).numpy())


def kernels():
    rng = np.random.default_rng(0)
    base = rng.integers(1, 5, size=(37, 19)).astype(np.float64)
    for name in DTYPES:
        dt = getattr(db, name)
        tol = {"float16": 1e-2, "bfloat16": 5e-2}.get(name, 1e-6)
        a = db.from_numpy(base).to(dt).to(DEV)
        b = db.from_numpy(base[::-1].copy()).to(dt).to(DEV)
        ref_a, ref_b = host(a), host(b)
        wrap = (lambda x: np.mod(x, 256)) if name == "uint8" else (lambda x: x)  # uint8 wraps
        if name != "bool":
            check(f"{name} add", a + b, ref_a + ref_b, tol)
            check(f"{name} mul scalar", a * 3, ref_a * 3, tol)
            check(f"{name} sub strided", a[:36:2, ::3] - b[1::2, ::3], wrap(ref_a[:36:2, ::3] - ref_b[1::2, ::3]), tol)
            check(f"{name} broadcast", a + b[0], ref_a + ref_b[0], tol)
            check(f"{name} pow", a ** 2, ref_a ** 2, tol)
            check(f"{name} abs", (-a if name != "uint8" else a).abs(), ref_a, tol)
            c = a.clone()
            c.add_(1)
            check(f"{name} add_", c, ref_a + 1, tol)
            check(f"{name} sum", a.sum(), ref_a.sum(), max(tol, 1e-6) * ref_a.size)
            check(f"{name} sum dim0", a.sum(dim=0), ref_a.sum(axis=0), max(tol, 1e-6) * 37)
            check(f"{name} amax dim1", a.amax(dim=1), ref_a.max(axis=1), tol)
            values, indices = a.max(dim=0)
            check(f"{name} max dim0", values, ref_a.max(axis=0), tol)
            check(f"{name} min", a.min(), ref_a.min(), tol)
        if name.startswith("float") or name == "bfloat16":
            check(f"{name} div", a / b, ref_a / ref_b, max(tol, 1e-6))
            check(f"{name} mean dim1", a.mean(dim=1), ref_a.mean(axis=1), max(tol, 1e-6))
            r = db.rand(1000, dtype=dt, device=DEV)
            rr = host(r)
            if not (rr.min() >= 0 and rr.max() <= 1):
                FAILURES.append(f"{name} rand range")
        check(f"{name} lt", a < b, ref_a < ref_b)
        check(f"{name} eq scalar", a == 2, ref_a == 2)
        check(f"{name} contiguous of T", a.T.contiguous(), ref_a.T, tol)
        f = db.empty((5, 7), dtype=dt, device=DEV)
        f.fill_(1)
        check(f"{name} fill_", f, np.ones((5, 7)))
        for other in DTYPES:
            check(f"cast {name}->{other}", a.to(getattr(db, other)), host(a.cpu().to(getattr(db, other))), 1e-2)


def transfers():
    # Larger than one pinned staging buffer, so the ring wraps; pageable and strided sources.
    big = np.arange(3 * 2**22, dtype=np.float32)
    t = db.from_numpy(big).to(DEV)
    check("h2d/d2h 48 MiB", t.cpu().numpy()[::4097], big[::4097])
    s = db.from_numpy(big.reshape(-1, 3)[:, 1]).to(DEV)
    check("h2d strided", s.numpy(force=True)[::999], big.reshape(-1, 3)[:, 1][::999])
    check("same-device copy", t.to(DEV, copy=True).cpu().numpy()[-5:], big[-5:])


def exchange():
    import torch

    x = torch.arange(1000, dtype=torch.float32, device="cuda")
    t = db.from_dlpack(x)
    t.mul_(2)
    torch.cuda.synchronize()
    check("torch -> dlbridge, edit seen", x[:3].cpu().numpy(), [0, 2, 4])
    y = torch.from_dlpack(db.arange(10, dtype=db.float32, device=DEV))
    check("dlbridge -> torch", y.cpu().numpy(), np.arange(10))
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        z = torch.from_dlpack(db.ones(10, device=DEV) * 5)
    check("dlbridge -> torch on a side stream", z.cpu().numpy(), np.full(10, 5))
    try:
        import cupy
    except ImportError:
        print("cupy not importable: its exchange is not covered")
        return
    c = cupy.arange(8, dtype=cupy.float32)
    u = db.from_dlpack(c)
    u.add_(1)
    cupy.cuda.runtime.deviceSynchronize()
    check("cupy -> dlbridge, edit seen", cupy.asnumpy(c), np.arange(8) + 1)
    check("dlbridge -> cupy", cupy.asnumpy(cupy.from_dlpack(db.arange(4, dtype=db.int32, device=DEV))), np.arange(4))


def ipc_child(queue, done):
    t = queue.get()
    t.add_(1)
    db.cuda.synchronize()
    done.put(t.cpu().tolist())


def ipc():
    ctx = mp.get_context("spawn")
    queue, done = ctx.Queue(), ctx.Queue()
    t = db.arange(4, dtype=db.float32, device=DEV)
    child = ctx.Process(target=ipc_child, args=(queue, done))
    child.start()
    queue.put(t)
    seen = done.get(timeout=120)
    child.join(60)
    check("ipc child view", seen, [1, 2, 3, 4])
    check("ipc write seen by the sender", host(t), [1, 2, 3, 4])


PARTS = {"kernels": kernels, "transfers": transfers, "exchange": exchange, "ipc": ipc}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", choices=sorted(PARTS))
    parser.add_argument("--device", default="cuda:0", help="cpu checks the script without a GPU")
    args = parser.parse_args()
    global DEV
    DEV = args.device
    if DEV == "cpu":
        PARTS.pop("exchange"), PARTS.pop("ipc")
    elif not db.cuda.is_available():
        print(f"no CUDA device ({db.cuda.unavailable_reason()}): nothing to run")
        return 0
    for name, part in PARTS.items():
        if args.only in (None, name):
            print(f"-- {name}", flush=True)
            try:
                part()
            except Exception as e:  # noqa: BLE001 - reported, and the other parts still run
                FAILURES.append(f"{name}: {type(e).__name__}: {e}")
                print(f"ERROR in {name}: {type(e).__name__}: {e}", file=sys.stderr)
    if DEV != "cpu":
        db.cuda.synchronize()
    print(f"{len(FAILURES)} failures" + (": " + "; ".join(FAILURES) if FAILURES else ""))
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
