"""Shared memory between processes: share_memory_(), is_shared(), and tensors through
real multiprocessing queues and pipes (spawn, forkserver and fork) as handles.

Every wait is bounded (mp_channels.TIMEOUT) and every child is joined or killed at the
end of its test; nothing sleeps to synchronise: parent and child take turns over the
channel itself, and a child's failure comes back as its traceback.
"""

import contextlib
import multiprocessing as mp
import os
import pickle
import signal
from multiprocessing.reduction import ForkingPickler

import numpy as np
import pytest

import dlbridge as db
from conftest import collect
from mp_channels import TIMEOUT, channel, reply, reporting, start  # noqa: F401 - start is a fixture

pytestmark = [
    pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs Linux's /proc"),
    # JAX (imported by earlier test files) warns about every fork; the forked
    # children here never touch JAX.
    pytest.mark.filterwarnings("ignore:os.fork\\(\\) was called:RuntimeWarning"),
]

METHODS = [m for m in ("spawn", "forkserver", "fork") if m in mp.get_all_start_methods()]
SEGMENT_NAME = "memfd:dlbridge-shared"

DTYPES = sorted({getattr(db, n) for n in dir(db) if isinstance(getattr(db, n), db.dtype)}, key=str)
# The integer dtype of each element size, to read and write any dtype's bits.
TWIN = {1: "uint8", 2: "int16", 4: "int32", 8: "int64"}


def segment_inode(t):
    """The inode of the shared segment behind t's storage."""
    handle = t._share_handle()
    assert handle is not None and handle[0] == "fd"
    return os.fstat(handle[1]).st_ino


def holders(ino, pids=("self",)):
    """Where the segment with inode `ino` is still held: mappings and open descriptors."""
    found = []
    for pid in pids:
        try:
            with open(f"/proc/{pid}/maps") as f:
                found += [f"{pid} maps: {line.strip()}" for line in f
                          if SEGMENT_NAME in line and int(line.split()[4]) == ino]
            for fd in os.listdir(f"/proc/{pid}/fd"):
                path = f"/proc/{pid}/fd/{fd}"
                with contextlib.suppress(OSError):
                    if SEGMENT_NAME in os.readlink(path) and os.stat(path).st_ino == ino:
                        found.append(f"{pid} fd {fd}")
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            continue  # gone, or not ours to read
    return found


def sharer_settled():
    """multiprocessing's resource sharer closes its copy of a descriptor on its own
    thread after handing it over; stopping the sharer waits for that (it starts
    again on demand)."""
    from multiprocessing.resource_sharer import _resource_sharer

    _resource_sharer.stop(TIMEOUT)


def all_pids():
    return [p for p in os.listdir("/proc") if p.isdigit()]


# ----------------------------------------------------------- in one process
def test_share_memory_moves_the_storage_in_place(no_leak):
    t = db.arange(12, dtype=db.float32)
    v = t[2:8:2]  # a view made before the move moves with it
    before = t.data_ptr()
    assert not t.is_shared() and not v.is_shared()
    assert t.share_memory_() is t
    assert t.is_shared() and v.is_shared()
    assert t.data_ptr() != before and v.data_ptr() == t.data_ptr() + 8
    assert t.tolist() == list(range(12))
    v.fill_(-1)
    assert t.tolist()[:6] == [0, 1, -1, 3, -1, 5]
    ino = segment_inode(t)
    assert t.share_memory_() is t and segment_inode(t) == ino, "a second call is a no-op"


def test_exports_made_before_the_move_stay_valid(no_leak):
    torch = pytest.importorskip("torch")
    t = db.arange(6, dtype=db.float64)
    a, tt, cap = t.numpy(), torch.from_dlpack(t), t.__dlpack__()
    t.share_memory_()
    t.fill_(7)
    # They keep the bytes as they were (in memory kept alive until the storage drops):
    # the cost documented for share_memory_, where PyTorch would leave them dangling.
    assert a.tolist() == tt.tolist() == list(range(6))
    back = db.from_dlpack(_Capsule(cap))
    del t
    collect()
    assert a.tolist() == tt.tolist() == back.tolist() == list(range(6))
    a[0] = 5
    assert tt[0].item() == 5 and back[0].item() == 5


class _Capsule:
    """A DLPack producer handing out one capsule made earlier."""

    def __init__(self, cap):
        self.cap = cap

    def __dlpack__(self, **kwargs):
        return self.cap

    def __dlpack_device__(self):
        return (1, 0)


def test_a_same_process_round_trip_shares_the_memory(no_leak):
    t = db.zeros(5, dtype=db.int32).share_memory_()
    u = pickle.loads(ForkingPickler.dumps(t))
    assert u.is_shared() and u.data_ptr() != t.data_ptr()
    u.add_(3)
    assert t.tolist() == [3] * 5
    t[0] = 9
    assert u[0].item() == 9
    assert segment_inode(u) == segment_inode(t)


def test_handles_not_bytes():
    """The pickled payload of a shared tensor does not grow with the tensor."""
    sizes = {}
    for n in (1, 8 << 20):
        t = db.zeros(n, dtype=db.float32).share_memory_()
        payload = ForkingPickler.dumps(t)
        sizes[n] = len(payload)
        back = pickle.loads(payload)  # takes the duplicated descriptor back out of the sharer
        assert back.shape == (n,) and segment_inode(back) == segment_inode(t)
    assert sizes[8 << 20] < 1024 and abs(sizes[8 << 20] - sizes[1]) < 16, sizes


def test_the_segment_goes_with_the_last_reference():
    t = db.ones(1 << 16, dtype=db.uint8).share_memory_()
    ino = segment_inode(t)
    u = pickle.loads(ForkingPickler.dumps(t[100:]))  # its own mapping and descriptor
    view = t[5:]
    sharer_settled()
    assert len(holders(ino)) == 4  # two mappings, two descriptors
    del t
    collect()
    assert len(holders(ino)) == 4, "the view still holds the storage"
    del view
    collect()
    assert len(holders(ino)) == 2
    assert u[0].item() == 1
    del u
    collect()
    assert holders(ino) == []


def test_empty_and_zero_d(no_leak):
    e = db.zeros(0, 3).share_memory_()
    assert e.is_shared() and e.shape == (0, 3)
    back = pickle.loads(ForkingPickler.dumps(e))
    assert back.shape == (0, 3) and back.is_shared()
    z = db.tensor(2.5).share_memory_()
    back = pickle.loads(ForkingPickler.dumps(z))
    assert back.shape == () and back.item() == 2.5


# --------------------------------------------------------------- bad handles
def fresh_handle():
    t = db.arange(6, dtype=db.float32).share_memory_()
    kind, fd, nbytes, dtype, shape, strides, offset, ro, rg = t._share_handle()
    return t, dict(fd=fd, nbytes=nbytes, dtype=dtype, shape=shape, strides=strides, offset=offset,
                   read_only=ro, requires_grad=rg)


def rebuild(h):
    return db._core._rebuild_shared_fd(h["fd"], h["nbytes"], h["dtype"], h["shape"], h["strides"],
                                       h["offset"], h["read_only"], h["requires_grad"])


@pytest.mark.parametrize("change, error, match", [
    (dict(nbytes=25), BufferError, "holds 24 bytes"),
    (dict(nbytes=23), BufferError, "holds 24 bytes"),
    (dict(nbytes=0), BufferError, "holds 24 bytes"),
    (dict(nbytes=-1), OverflowError, None),
    (dict(shape=(7,)), BufferError, "outside"),
    (dict(offset=1), BufferError, "outside"),
    (dict(offset=7), BufferError, "outside"),
    (dict(offset=-1), BufferError, "outside"),
    (dict(shape=(3,), strides=(-1,)), BufferError, "outside"),
    (dict(shape=(2, 2), strides=(1 << 62, 1)), BufferError, "overflow"),
    # Zero strides keep the extent inside the segment; 2**124 elements are still refused,
    # with PyTorch's error (issue 21).
    (dict(shape=(1 << 62, 1 << 62), strides=(0, 0)), RuntimeError, "numel: integer multiplication overflow"),
    (dict(shape=(2,), strides=(1, 1)), BufferError, "one stride per dimension"),
    (dict(shape=(-2,), strides=(1,)), BufferError, "negative"),
    (dict(dtype="float128"), BufferError, "unknown dtype"),
    (dict(dtype="float64"), BufferError, "outside"),  # 6 float64 = 48 bytes > 24
    (dict(dtype="int32", requires_grad=True), RuntimeError, "floating point"),
    (dict(fd=-1), BufferError, "not an open descriptor"),
    (dict(fd=1 << 40), OverflowError, None),
])
def test_bad_handles_raise(change, error, match, no_leak):
    t, h = fresh_handle()
    with pytest.raises(error, match=match):
        rebuild(dict(h, **change))
    assert rebuild(h).tolist() == list(range(6)), "the unchanged handle still works"


def test_descriptors_that_are_not_segments_are_refused(tmp_path, no_leak):
    _, h = fresh_handle()
    f = tmp_path / "file"
    f.write_bytes(bytes(24))
    r, w = os.pipe()
    with open(f, "r+b") as file:
        for fd in (file.fileno(), r, w):
            with pytest.raises(BufferError, match="not a (shared-memory segment|sealed dlbridge segment)"):
                rebuild(dict(h, fd=fd))
    os.close(r)
    os.close(w)
    with pytest.raises(BufferError, match="not an open descriptor"):
        rebuild(dict(h, fd=r))  # closed now


def test_a_failed_rebuild_closes_the_received_descriptor():
    from dlbridge import _sharing

    class Received:
        """What unpickling hands the rebuild: an object whose detach() gives a
        new descriptor to the segment. multiprocessing's own DupFd is not used
        here: its resource-sharer thread closes its copies after detach()
        returns, so counting descriptors around it races with that thread."""

        def __init__(self, fd):
            self.fd = fd

        def detach(self):
            return os.dup(self.fd)

    t, h = fresh_handle()
    open_before = len(os.listdir("/proc/self/fd"))
    for _ in range(20):
        with pytest.raises(BufferError):
            _sharing._rebuild_from_fd(Received(h["fd"]), 25, h["dtype"], h["shape"], h["strides"], 0,
                                      False, False)
    assert len(os.listdir("/proc/self/fd")) == open_before
    # and a good rebuild through the same path still maps the segment
    u = _sharing._rebuild_from_fd(Received(h["fd"]), h["nbytes"], h["dtype"], h["shape"],
                                  h["strides"], 0, False, False)
    t.add_(1)
    assert u.tolist() == t.tolist()
    del u
    assert len(os.listdir("/proc/self/fd")) == open_before


# ------------------------------------------------------- between processes
@reporting
def echo_child(end):
    t = end.recv()
    end.send(("seen", t.tolist(), t.is_shared(), t.dtype == db.float32))
    t.add_(10)  # a write here shows in the parent
    end.send(("wrote",))
    reply(end, "parent wrote")
    end.send(("now", t.tolist()))
    end.send(t)  # and back again, as a handle
    reply(end, "done")


@pytest.mark.parametrize("kind", ["queue", "pipe"])
@pytest.mark.parametrize("method", METHODS)
def test_writes_show_both_ways(method, kind, start):
    ctx = mp.get_context(method)
    parent, child = channel(ctx, kind)
    start(method, echo_child, child)
    t = db.arange(6, dtype=db.float32).share_memory_()
    parent.send(t)
    assert reply(parent, "seen")[1:] == (list(range(6)), True, True)
    reply(parent, "wrote")
    assert t.tolist() == [x + 10 for x in range(6)]
    t.mul_(2)
    parent.send(("parent wrote",))
    assert reply(parent, "now")[1] == [(x + 10) * 2 for x in range(6)]
    back = parent.recv()
    assert back.is_shared() and segment_inode(back) == segment_inode(t)
    back.fill_(1)
    assert t.tolist() == [1] * 6
    parent.send(("done",))


@reporting
def arg_child(end, t):
    t.add_(1)
    end.send(("wrote", t.is_shared()))


@pytest.mark.parametrize("method", METHODS)
def test_process_arguments_are_shared(method, start):
    ctx = mp.get_context(method)
    parent, child = channel(ctx, "pipe")
    t = db.zeros(4, dtype=db.int64).share_memory_()
    start(method, arg_child, child, t)
    assert reply(parent, "wrote")[1]
    assert t.tolist() == [1] * 4


def random_tensor(dtype, shape, rng):
    """A tensor of `dtype` holding random bits (any bit pattern, NaNs included)."""
    if dtype.itemsize == 16:
        return db.from_numpy(rng.standard_normal(shape) + 1j * rng.standard_normal(shape))
    bits = rng.integers(0, 256, size=int(np.prod(shape)) * dtype.itemsize, dtype=np.uint8)
    return db.from_numpy(bits.view(np.dtype(TWIN[dtype.itemsize])).reshape(shape)).view(dtype)


def bits(t):
    """t's elements' bytes, in row-major order."""
    if t.itemsize == 16:
        return t.numpy().tobytes()
    return t.view(getattr(db, TWIN[t.itemsize])).contiguous().numpy().tobytes()


@reporting
def dtypes_child(end):
    ts = end.recv()
    end.send(("seen", [(str(t.dtype), tuple(t.shape), t.is_shared(), bits(t)) for t in ts]))
    for t in ts:
        (t if t.itemsize == 16 else t.view(getattr(db, TWIN[t.itemsize]))).zero_()
    end.send(("zeroed",))


@pytest.mark.parametrize("method", ["spawn"])
def test_every_dtype(method, start):
    rng = np.random.default_rng(0)
    ts = [random_tensor(d, (3, 5), rng).share_memory_()[:, 1:4] for d in DTYPES]
    assert len(ts) == 28
    expected = [(str(t.dtype), (3, 3), True, bits(t)) for t in ts]
    parent, child = channel(mp.get_context(method), "queue")
    start(method, dtypes_child, child)
    parent.send(ts)
    assert reply(parent, "seen")[1] == expected
    reply(parent, "zeroed")
    assert all(set(bits(t)) == {0} for t in ts)


@reporting
def views_child(end):
    views = end.recv()
    end.send(("seen", [(tuple(v.shape), v.stride(), v.tolist(), v.is_contiguous()) for v in views]))
    for v in views:
        if 0 not in v.stride() or v.numel() <= 1:
            v.add_(100)
    end.send(("wrote",))


@pytest.mark.parametrize("method", ["forkserver"])
def test_views_send_their_storage_and_layout(method, start):
    a = np.arange(24, dtype=np.int64).reshape(4, 6)
    t = db.from_numpy(a.copy()).share_memory_()
    reversed_rows = db.from_numpy(a[::-1].copy()[::-1]).share_memory_()  # negative strides
    assert reversed_rows.stride() == (-6, 1)
    views = [t.T, t[1:3, ::2], t[:, 3], t[2, 5], t[1:1], t[0:1].expand(3, 6), reversed_rows[1:3]]
    expected = [(tuple(v.shape), v.stride(), v.tolist(), v.is_contiguous()) for v in views]
    parent, child = channel(mp.get_context(method), "pipe")
    start(method, views_child, child)
    parent.send(views)
    assert reply(parent, "seen")[1] == expected
    reply(parent, "wrote")
    ref = a.copy()
    ref.T[...] += 100
    ref[1:3, ::2] += 100
    ref[:, 3] += 100
    ref[2, 5] += 100
    assert t.tolist() == ref.tolist()
    assert reversed_rows.tolist() == (a + np.array([[0], [100], [100], [0]])).tolist()


@reporting
def flags_child(end):
    ro, rg = end.recv()
    try:
        ro.add_(1)
        wrote = True
    except RuntimeError:
        wrote = False
    end.send(("seen", ro.is_read_only, ro.numpy().flags.writeable, wrote, ro.tolist(), rg.requires_grad,
              rg.detach().tolist()))


@pytest.mark.parametrize("method", ["spawn"])
def test_read_only_and_requires_grad_travel(method, start):
    a = np.arange(5.0)
    a.flags.writeable = False
    ro = db.from_numpy(a).share_memory_()
    assert ro.is_read_only and ro.is_shared()
    rg = db.tensor([1.0, 2.0]).requires_grad_().share_memory_()
    parent, child = channel(mp.get_context(method), "queue")
    start(method, flags_child, child)
    parent.send((ro, rg))
    assert reply(parent, "seen")[1:] == (True, False, False, list(range(5)), True, [1.0, 2.0])


@reporting
def holding_child(end):
    t = end.recv()
    t[0] = 42
    end.send(("holding", os.getpid()))
    end.recv()  # waits here until killed


def dev_shm():
    """The names in /dev/shm, less the semaphores multiprocessing's own queues make."""
    names = os.listdir("/dev/shm") if os.path.isdir("/dev/shm") else []
    return {n for n in names if not n.startswith("sem.mp-")}


def test_a_killed_child_leaks_nothing(start):
    shm_before = dev_shm()
    t = db.zeros(16 << 20, dtype=db.uint8).share_memory_()
    ino = segment_inode(t)
    parent, child = channel(mp.get_context("spawn"), "queue")
    p = start("spawn", holding_child, child)
    parent.send(t)
    _, pid = reply(parent, "holding")
    assert t[0].item() == 42
    assert holders(ino, [pid]), "the child maps the segment"
    os.kill(pid, signal.SIGKILL)
    p.join(TIMEOUT)
    assert p.exitcode == -signal.SIGKILL
    sharer_settled()
    assert dev_shm() == shm_before
    assert holders(ino) != []
    del t
    collect()
    assert holders(ino, all_pids()) == [], "nobody holds the segment: the kernel has freed it"


# ----------------------------------------------------------- non-shared ones
def _pickles():
    try:
        pickle.dumps(db.zeros(1))
        return True
    except TypeError:
        return False


@reporting
def copy_child(end):
    t = end.recv()
    t.add_(1)
    end.send(("seen", t.is_shared(), t.tolist()))


@pytest.mark.skipif(not _pickles(), reason="waits for Tensor.__reduce_ex__ (pickling, another branch)")
def test_tensors_not_shared_go_by_value(start):
    t = db.arange(4, dtype=db.float32)
    payload = ForkingPickler.dumps(db.zeros(1 << 16))
    assert len(payload) > 1 << 18, "by value: the bytes travel"
    parent, child = channel(mp.get_context("spawn"), "pipe")
    start("spawn", copy_child, child)
    parent.send(t)
    assert reply(parent, "seen")[1:] == (False, [1.0, 2.0, 3.0, 4.0])
    assert t.tolist() == [0.0, 1.0, 2.0, 3.0] and not t.is_shared(), "sending does not move it"


def test_the_reducer_is_registered_when_multiprocessing_is_imported_later():
    from conftest import run_python

    code = (
        "import sys, dlbridge as db\n"
        "assert 'multiprocessing.reduction' not in sys.modules\n"
        "import multiprocessing.reduction as r\n"
        "assert r.ForkingPickler._extra_reducers[db.Tensor].__module__ == 'dlbridge._sharing'\n"
        "import pickle\n"
        "t = db.ones(3).share_memory_()\n"
        "assert pickle.loads(r.ForkingPickler.dumps(t)).data_ptr() != t.data_ptr()\n"
        "print('ok')\n"
    )
    out = run_python(code)
    assert out.stdout.strip() == "ok", out.stderr


# ------------------------------------------------ CUDA handles, without a GPU
def cuda_handle(fd, **change):
    h = dict(pool_fd=fd, pool_id=bytes(16), device=0, uuid=bytes(16), pointer=bytes(64), address=0,
             nbytes=16, dtype="float32", shape=(4,), strides=(1,), offset=0, read_only=False,
             requires_grad=False)
    h.update(change)
    return h


@pytest.mark.parametrize("change, match", [
    (dict(pool_id=bytes(15)), "the pool id has 15 bytes, not 16"),
    (dict(uuid=bytes(17)), "the device UUID has 17 bytes, not 16"),
    (dict(pointer=b""), "the allocation record has 0 bytes, not 64"),
    (dict(dtype="complex256"), "unknown dtype"),
])
def test_malformed_cuda_handles_raise(change, match):
    with open(os.devnull) as f:
        with pytest.raises(BufferError, match=match):
            db._core._rebuild_shared_cuda(*cuda_handle(f.fileno(), **change).values())


def test_a_cuda_handle_nobody_can_open_raises():
    """Without a GPU: no CUDA; with one: no device of that UUID (or a refused record)."""
    with open(os.devnull) as f:
        with pytest.raises(RuntimeError):
            db._core._rebuild_shared_cuda(*cuda_handle(f.fileno()).values())
