"""CUDA tensors between processes on one machine, through CUDA IPC: dlbridge's memory pool
is exportable (POSIX file descriptors) and a CUDA tensor sent through a multiprocessing
queue or pipe travels as the pool's descriptor plus the driver's record of its
allocation; the receiver opens the same device memory.

Spawn and forkserver only: a forked child cannot use CUDA once its parent has (PyTorch's
rule too). Every wait is bounded and every child joined or killed (mp_channels).
"""

import multiprocessing as mp
import pickle
from multiprocessing.reduction import DupFd, ForkingPickler

import numpy as np
import pytest
import torch

import dlbridge as db
from conftest import collect
from mp_channels import channel, reply, reporting, start  # noqa: F401 - start is a fixture

from .conftest import DEV

METHODS = ["spawn", "forkserver"]


def test_share_memory_is_a_no_op_and_cuda_tensors_are_shared():
    t = db.arange(6, dtype=db.float32, device=DEV)
    ptr = t.data_ptr()
    assert t.is_shared()  # as torch: always true on CUDA
    assert t.share_memory_() is t and t.data_ptr() == ptr


def test_a_same_process_round_trip_is_the_same_memory(no_leak):
    t = db.arange(6, dtype=db.float32, device=DEV)
    u = pickle.loads(ForkingPickler.dumps(t[1:]))
    assert u.device == t.device and u.data_ptr() == t.data_ptr() + 4
    u.add_(10)
    assert t.cpu().tolist() == [0, 11, 12, 13, 14, 15]
    del t, u
    collect()


def test_foreign_cuda_memory_is_refused_naming_the_fix(tcuda):
    x = db.from_dlpack(torch.arange(4.0, device="cuda"))
    with pytest.raises(RuntimeError, match=r"belongs to another library.*send t\.clone\(\) instead"):
        ForkingPickler.dumps(x)
    assert pickle.loads(ForkingPickler.dumps(x.clone())).cpu().tolist() == [0, 1, 2, 3]


@reporting
def cuda_child(end):
    t = end.recv()
    end.send(("seen", str(t.device), tuple(t.shape), t.stride(), t.cpu().tolist(), t.is_shared()))
    t.add_(100)
    db.cuda.synchronize()
    end.send(("wrote",))
    try:
        ForkingPickler.dumps(t)
        resend = "sent"
    except RuntimeError as e:
        resend = str(e)
    end.send(("resend", resend))
    mine = db.arange(5, dtype=db.int64, device="cuda")
    end.send(mine)
    reply(end, "done")  # keeps `mine` alive while the parent uses it (the producer's rule)


@pytest.mark.parametrize("kind", ["queue", "pipe"])
@pytest.mark.parametrize("method", METHODS)
def test_cuda_tensors_travel_as_ipc_handles(method, kind, start, no_leak):
    t = db.arange(12, dtype=db.float32, device=DEV).reshape(3, 4)
    view = t[:, 1::2]
    parent, child = channel(mp.get_context(method), kind)
    start(method, cuda_child, child)
    before = view.cpu().tolist()  # (the child adds 100 as soon as it has replied)
    parent.send(view)
    assert reply(parent, "seen")[1:] == ("cuda:0", (3, 2), (4, 2), before, True)
    reply(parent, "wrote")
    expected = np.arange(12, dtype=np.float32).reshape(3, 4)
    expected[:, 1::2] += 100
    assert t.cpu().tolist() == expected.tolist(), "the child's write shows here"
    assert "itself received" in reply(parent, "resend")[1]
    mine = parent.recv()
    assert mine.is_cuda and mine.cpu().tolist() == list(range(5))
    del mine  # before the child lets go of it
    collect()
    parent.send(("done",))
    del t, view
    collect()


@reporting
def dtypes_child(end):
    ts = end.recv()
    end.send(("seen", [t.cpu().view(db.uint8 if t.itemsize == 1 else db.int16).numpy().tobytes()
                       if t.itemsize <= 2 else t.cpu().numpy().tobytes() for t in ts]))


def test_dtypes_travel_bit_for_bit(start, rng):
    names = ["bool", "int8", "float16", "bfloat16", "float8_e4m3fn", "float4_e2m1fn_x2", "complex64", "int64"]
    ts = []
    for name in names:
        dt = getattr(db, name)
        raw = rng.integers(0, 2 if name == "bool" else 256, size=7 * dt.itemsize, dtype=np.uint8)
        host = db.from_numpy(raw.view({1: np.uint8, 2: np.int16, 8: np.int64}[dt.itemsize])).view(dt)
        ts.append(host.to(DEV))
    parent, child = channel(mp.get_context("spawn"), "queue")
    start("spawn", dtypes_child, child)
    parent.send(ts)
    got = reply(parent, "seen")[1]
    for name, t, bits in zip(names, ts, got):
        host = t.cpu()
        want = (host.view(db.uint8 if t.itemsize == 1 else db.int16).numpy().tobytes()
                if t.itemsize <= 2 else host.numpy().tobytes())
        assert bits == want, name


@reporting
def bad_handle_child(end):
    fd_wrapper, rest = end.recv()
    fd = fd_wrapper.detach()
    try:
        db._core._rebuild_shared_cuda(fd, *rest)
        end.send(("opened",))
    except Exception as e:  # noqa: BLE001 - reported to the parent
        end.send(("refused", type(e).__name__, str(e)))


def test_a_handle_claiming_more_bytes_than_its_allocation_is_refused(start):
    t = db.zeros(256, dtype=db.float32, device=DEV)
    handle = t._share_handle()
    assert handle[0] == "cuda"
    fd, rest = handle[1], list(handle[2:])
    rest[5] = 1 << 40  # the storage's byte count
    rest[7] = (1 << 38,)  # a shape that fits the claimed bytes, so only the allocation check stops it
    parent, child = channel(mp.get_context("spawn"), "pipe")
    start("spawn", bad_handle_child, child)
    parent.send((DupFd(fd), tuple(rest)))
    msg = reply(parent)
    assert msg[:2] == ("refused", "BufferError") and "not the 1099511627776" in msg[2], msg
    del t
