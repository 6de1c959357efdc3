"""dlbridge tensors through the engines that move Python objects between
processes, each the real engine on this machine (loopback only): multiprocessing
and concurrent.futures with spawn, PyTorch's DataLoader workers,
torch.distributed (gloo), Dask (delayed: processes and threads schedulers) and
Ray (object store and tasks). What crosses zero-copy and what is copied is in
docs/processes.md; a limit that is the engine's own is shown with a torch
tensor in dlbridge's place before the test skips.

Every case sends the same tensors (dtypes, 0-d, empty, non-contiguous,
requires_grad, read-only) and checks what the receiver saw and what came back,
byte for byte. The children run engine_workers.py and must import the same
dlbridge as this process (checked). Every wait is bounded: the engines' own
timeouts where they have one, `within()` where they have none, and `bounded()`
around every test and engine start and stop, which prints every thread's stack
and ends the run if one hangs anyway.
"""

import contextlib
import faulthandler
import gc
import multiprocessing
import os
import sys
import threading
import time
import traceback
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import dlbridge as db
import engine_workers as ew
import conftest
from conftest import ASAN_RUNTIME, sample

HERE = Path(__file__).resolve().parent
WAIT = 60  # seconds any one engine call may take
BOUND = 4 * WAIT  # seconds any one test may take
SPAWN = multiprocessing.get_context("spawn")


# The deadlines of the open bounded() blocks, innermost last: faulthandler keeps
# one timer only, so it is armed for the nearest.
DEADLINES = []
GRACE = 30  # seconds the backstop waits past the Python timer


def arm_backstop():
    """A hang backstop that needs no GIL: an engine call blocked in C without
    releasing the GIL (ray.init in a socket recv) stops the Python timer too.
    faulthandler's own thread then dumps every thread's stack to the terminal
    and ends the run."""
    if DEADLINES:
        left = min(DEADLINES) - time.monotonic() + GRACE
        faulthandler.dump_traceback_later(max(left, 1), exit=True, file=conftest.TERMINAL_FD)
    else:
        faulthandler.cancel_dump_traceback_later()


@contextlib.contextmanager
def bounded(request, seconds=BOUND):
    """Ends the run, printing every thread's stack, if the block outlives `seconds`
    (a hung engine must not hang the suite), as pytest-timeout's thread method does;
    arm_backstop() covers a hang that holds the GIL."""
    capture = request.config.pluginmanager.getplugin("capturemanager")

    def expire():
        if capture is not None:
            capture.suspend_global_capture(in_=True)
        out = [f"\n{request.node.nodeid} outlived its {seconds} s; every thread's stack:\n"]
        for ident, frame in sys._current_frames().items():
            out += [f"\nthread {ident}:\n", *traceback.format_stack(frame)]
        sys.stderr.write("".join(out))
        sys.stderr.flush()
        os._exit(1)

    timer = threading.Timer(seconds, expire)
    timer.daemon = True
    timer.start()
    deadline = time.monotonic() + seconds
    DEADLINES.append(deadline)
    arm_backstop()
    try:
        yield
    finally:
        timer.cancel()
        DEADLINES.remove(deadline)
        arm_backstop()


@pytest.fixture(autouse=True)
def watchdog(request):
    with bounded(request):
        yield


def within(seconds, fn, *args, **kwargs):
    """fn(*args, **kwargs) on a daemon thread, failing the test after `seconds`
    (for engine calls that take no timeout)."""
    out = {}

    def run():
        try:
            out["value"] = fn(*args, **kwargs)
        except BaseException as e:  # noqa: BLE001 - re-raised below
            out["error"] = e

    th = threading.Thread(target=run, daemon=True)
    th.start()
    th.join(seconds)
    if th.is_alive():
        pytest.fail(f"{getattr(fn, '__name__', fn)} did not return within {seconds} s")
    if "error" in out:
        raise out["error"]
    return out["value"]


HANG = """
import ctypes
import test_engines


def test_hang(request):
    test_engines.GRACE = 1
    with test_engines.bounded(request, seconds=1):
        ctypes.PyDLL(None).sleep(60)  # blocks in C holding the GIL: the Python timer cannot run
"""


def test_a_hang_holding_the_gil_still_ends_the_run(tmp_path):
    """The backstop: a block that hangs in C without releasing the GIL (as ray.init
    once did, in a socket recv) ends the run within seconds, every stack on stderr."""
    import subprocess

    (tmp_path / "test_hang.py").write_text(HANG)
    env = conftest.python_env()
    env["PYTHONPATH"] = os.pathsep.join([str(HERE), *sys.path])
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "conftest",
                          "--rootdir", str(tmp_path), str(tmp_path / "test_hang.py")],
                         capture_output=True, text=True, env=env, timeout=WAIT)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "Timeout (0:00:0" in run.stderr and "test_hang.py\", line 9 in test_hang" in run.stderr, run.stderr


def child_env():
    """The environment variables a Ray worker needs to import this process's
    dlbridge and engine_workers (and, under `make test-asan`, the ASan runtime)."""
    paths = [str(Path(db.__file__).resolve().parent.parent), str(HERE)]
    paths += [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    env = {"PYTHONPATH": os.pathsep.join(paths)}
    if ASAN_RUNTIME:
        env["LD_PRELOAD"] = ASAN_RUNTIME
    return env


@pytest.fixture(scope="module", autouse=True)
def asan_children():
    """Under `make test-asan` the spawned Python children get the ASan runtime
    back (conftest removed it from this environment), as conftest.python_env does."""
    if not ASAN_RUNTIME:
        yield
        return
    os.environ["LD_PRELOAD"] = ASAN_RUNTIME
    try:
        yield
    finally:
        os.environ.pop("LD_PRELOAD", None)


def assert_this_dlbridge(who):
    """`who` (ew.whoami() run in a child) is another process with this dlbridge."""
    pid, package, core = who
    assert pid != os.getpid()
    assert (package, core) == (db.__file__, db._core.__file__)


# ------------------------------------------------------------------ the tensors
def cases():
    """(name, tensor): every kind of tensor a round trip must keep."""
    grid = db.arange(12, dtype=db.float32).reshape(3, 4)
    frozen = np.arange(5, dtype=np.int32)
    frozen.flags.writeable = False
    f8 = np.array([0.5, -1.5, 448.0, 0.0], dtype=np.float32).astype(ml_dtypes.float8_e4m3fn)
    return [
        ("float32", grid),
        ("int64", db.tensor([-(2**40), -1, 0, 7], dtype=db.int64)),
        ("bool", db.tensor([True, False, True])),
        ("bfloat16", db.from_numpy(sample("bfloat16", (2, 3)))),
        ("float8_e4m3fn", db.from_numpy(f8)),
        ("complex64", db.from_numpy(sample("complex64", (2, 2)))),
        ("0-d", db.tensor(3.5)),
        ("empty", db.empty(0, 3)),
        ("transposed", grid.T),
        ("stepped", grid[:, ::2]),
        ("requires_grad", db.ones(4).requires_grad_()),
        ("read-only", db.from_numpy(frozen)),
    ]


def check_described(names, sent, seen, read_only):
    """`seen[i]` (ew.describe of what arrived) is `sent[i]` kept whole: type,
    dtype, shape, strides, requires_grad and every byte. `read_only`: "kept" (it
    is read-only where the original was) or True (every arrival is read-only)."""
    for name, t, got in zip(names, sent, seen):
        want = ew.describe(t)
        if read_only != "kept":
            want["read_only"] = read_only
        assert got == want, name


def round_trip_checked(result, sent_cases, read_only):
    """Checks an ew.echo result: the child's view of the tensors, then the tensors
    it sent back, each against what was sent."""
    names = [n for n, _ in sent_cases]
    sent = [t for _, t in sent_cases]
    pid, seen, back = result
    assert pid != os.getpid()
    check_described(names, sent, seen, read_only)
    assert all(type(t) is db.Tensor for t in back)
    check_described(names, sent, [ew.describe(t) for t in back], read_only)
    return back


def edit_visible_iff_shared(t, child_view):
    """After a child added 1 to its copy of `t` (whose values were 0, 1, 2, 3),
    `child_view` being the values it then held: the parent sees the edit
    exactly when the tensor is shared between them (share_memory_), never half."""
    assert child_view == [1.0, 2.0, 3.0, 4.0]
    shared = getattr(t, "is_shared", lambda: False)()
    assert t.tolist() == (child_view if shared else [0.0, 1.0, 2.0, 3.0])


# ----------------------------------------------- multiprocessing (spawn)
@pytest.fixture(scope="module")
def spawn_pool(request):
    with bounded(request):
        pool = SPAWN.Pool(1)
    yield pool
    with bounded(request):
        pool.terminate()
        pool.join()


def test_spawn_pool_child_imports_this_dlbridge(spawn_pool):
    assert_this_dlbridge(spawn_pool.apply_async(ew.whoami).get(WAIT))


def test_spawn_pool_round_trip(spawn_pool):
    sent = cases()
    result = spawn_pool.apply_async(ew.echo, ([t for _, t in sent],)).get(WAIT)
    back = round_trip_checked(result, sent, read_only="kept")
    # What came back is the receiver's own memory, writable unless sent read-only.
    back[0].add_(1)
    assert back[0].tolist() == (sent[0][1] + 1).tolist()


def test_spawn_pool_map_and_new_tensors(spawn_pool):
    ts = [db.full((1000,), float(i)) for i in range(8)]
    assert spawn_pool.map_async(ew.square_sum, ts).get(WAIT) == [1000.0 * i * i for i in range(8)]
    made = spawn_pool.apply_async(ew.affine, (db.arange(4, dtype=db.int64), 3, -1)).get(WAIT)
    assert made.dtype == db.int64 and made.tolist() == [-1, 2, 5, 8]


def test_spawn_pool_in_place_edit(spawn_pool):
    t = db.arange(4.0)
    edit_visible_iff_shared(t, spawn_pool.apply_async(ew.add_into, (t, 1)).get(WAIT))


def test_spawn_pool_shared_tensor(spawn_pool):
    """A tensor in shared memory is the same memory in the child: its edit shows here."""
    import torch

    if not hasattr(db.Tensor, "share_memory_"):
        x = torch.arange(4.0).share_memory_()
        assert spawn_pool.apply_async(ew.add_into_torch, (x, 1)).get(WAIT) == [1.0, 2.0, 3.0, 4.0]
        assert x.tolist() == [1.0, 2.0, 3.0, 4.0]  # torch's shared tensor: the child's edit shows
        pytest.skip("dlbridge has no share_memory_() yet: multiprocessing copies every dlbridge tensor")
    t = db.arange(4.0).share_memory_()
    assert t.is_shared()
    assert spawn_pool.apply_async(ew.add_into, (t, 1)).get(WAIT) == [1.0, 2.0, 3.0, 4.0]
    assert t.tolist() == [1.0, 2.0, 3.0, 4.0]


def test_protocol_4_round_trip_copies_no_more_than_numpy():
    """multiprocessing (and so DataLoader workers and ProcessPoolExecutor) pickles
    with protocol 4 before Python 3.14: the round trip of a tensor should hold no
    more Python memory at its peak than NumPy's of the same bytes. (Loading then
    copies the unpickled `bytes` once more, into dlbridge's own memory, which
    tracemalloc does not see: a writable tensor never shares a `bytes` object's
    memory, issue 21.)"""
    import pickle
    import tracemalloc

    def peaks(x):
        tracemalloc.start()
        try:
            data = pickle.dumps(x, protocol=4)
            dumps = tracemalloc.get_traced_memory()[1]
            tracemalloc.reset_peak()
            held = tracemalloc.get_traced_memory()[0]
            pickle.loads(data)
            return dumps, tracemalloc.get_traced_memory()[1] - held
        finally:
            tracemalloc.stop()

    n = 2**22  # 16 MiB of float32
    (t_dumps, t_loads), (a_dumps, a_loads) = peaks(db.ones(n)), peaks(np.ones(n, dtype=np.float32))
    assert t_dumps <= a_dumps * 1.05 and t_loads <= a_loads * 1.05, \
        f"peak MiB: dumps {t_dumps / 2**20:.0f} vs {a_dumps / 2**20:.0f}, loads {t_loads / 2**20:.0f} vs {a_loads / 2**20:.0f}"


# ------------------------------------- concurrent.futures.ProcessPoolExecutor
def test_process_pool_executor_spawn():
    sent = cases()
    with ProcessPoolExecutor(max_workers=1, mp_context=SPAWN) as ex:
        assert_this_dlbridge(ex.submit(ew.whoami).result(WAIT))
        round_trip_checked(ex.submit(ew.echo, [t for _, t in sent]).result(WAIT), sent, read_only="kept")
        ts = [db.full((10, 10), float(i), dtype=db.bfloat16) for i in range(4)]
        assert list(ex.map(ew.square_sum, ts, timeout=WAIT)) == [100.0 * i * i for i in range(4)]
        t = db.arange(4.0)
        edit_visible_iff_shared(t, ex.submit(ew.add_into, t, 1).result(WAIT))


# ----------------------------------------------------- PyTorch DataLoader
@pytest.mark.parametrize("context", ["fork", "spawn"])
def test_dataloader_workers_yield_dlbridge_tensors(context):
    from torch.utils.data import DataLoader

    loader = DataLoader(ew.TensorDataset(16), batch_size=None, num_workers=2,
                        multiprocessing_context=context, timeout=WAIT)
    items = list(loader)
    assert [it["i"] for it in items] == list(range(16))
    for it in items:
        assert type(it["x"]) is db.Tensor
        assert it["x"].dtype == db.float32 and it["x"].tolist() == [float(it["i"])] * 3
        assert not it["x"].is_read_only
        assert it["pid"] != os.getpid()
    assert {it["worker"] for it in items} == {0, 1}


def test_dataloader_collate_fn_keeps_dlbridge_tensors():
    import torch
    from torch.utils.data import DataLoader

    loader = DataLoader(ew.TensorDataset(12, "bfloat16"), batch_size=4, num_workers=2,
                        collate_fn=ew.dlbridge_collate, timeout=WAIT)
    batches = list(loader)
    assert len(batches) == 3
    for k, b in enumerate(batches):
        assert type(b["x"]) is db.Tensor
        assert b["x"].dtype == db.bfloat16 and tuple(b["x"].shape) == (4, 3)
        rows = list(range(4 * k, 4 * k + 4))
        assert b["x"].float().tolist() == [[float(i)] * 3 for i in rows]
        assert isinstance(b["i"], torch.Tensor) and b["i"].tolist() == rows  # the rest as torch collates it


def test_default_collate_refuses_dlbridge_tensors():
    """torch's default_collate stacks torch tensors and NumPy arrays only; a batch
    of dlbridge tensors needs a collate_fn (ew.dlbridge_collate), or batch_size=None."""
    import torch
    from torch.utils.data import default_collate

    assert default_collate([torch.zeros(2), torch.ones(2)]).tolist() == [[0.0, 0.0], [1.0, 1.0]]
    with pytest.raises(TypeError, match=r"default_collate: batch must contain tensors.*dlbridge\.Tensor"):
        default_collate([db.zeros(2), db.ones(2)])


# ------------------------------------------------------- Dask (processes)
@pytest.fixture(scope="module")
def dask():
    return pytest.importorskip("dask")


def dask_compute(dask, *values, scheduler="processes"):
    return within(WAIT, dask.compute, *values, scheduler=scheduler, num_workers=1)


def test_dask_delayed_processes(dask):
    delayed = dask.delayed
    sent = cases()
    who, echoed, total = dask_compute(
        dask,
        delayed(ew.whoami)(),
        delayed(ew.echo)([t for _, t in sent]),
        # a graph: two tasks' tensors feed a third (they pass through this process)
        delayed(ew.total)(delayed(ew.affine)(db.arange(5.0), 2, 1), delayed(ew.affine)(db.ones(3), -1, 0)),
    )
    assert_this_dlbridge(who)
    round_trip_checked(echoed, sent, read_only="kept")
    assert type(total) is db.Tensor and total.item() == 25.0 - 3.0


def test_dask_threads_share_the_tensor(dask):
    """Dask's default scheduler for delayed runs tasks on threads: nothing is
    pickled, a task gets the caller's very tensor."""
    t = db.arange(4.0)
    assert dask_compute(dask, dask.delayed(ew.add_into)(t, 1), scheduler="threads") == ([1.0, 2.0, 3.0, 4.0],)
    assert t.tolist() == [1.0, 2.0, 3.0, 4.0]


def test_dask_processes_share_nothing(dask):
    """Dask's processes scheduler pickles in band (cloudpickle) through a pipe, so a
    child's edit never reaches the caller, not even for torch's shared tensors."""
    import torch

    x = torch.arange(4.0).share_memory_()
    assert dask_compute(dask, dask.delayed(ew.add_into_torch)(x, 1)) == ([1.0, 2.0, 3.0, 4.0],)
    assert x.tolist() == [0.0, 1.0, 2.0, 3.0]
    pytest.skip("Dask's processes scheduler copies every argument and result (in-band pickles through "
                "a pipe): no engine's tensor crosses it zero-copy or shared")


# ------------------------------------------- Dask distributed (LocalCluster)
@pytest.fixture(scope="module")
def dask_client(request):
    """A LocalCluster of 2 worker processes on the loopback interface (distributed
    spawns them), and a client; both closed within bounds."""
    distributed = pytest.importorskip("distributed")
    import logging

    with bounded(request):
        cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                           host="127.0.0.1", dashboard_address=None,
                                           silence_logs=logging.ERROR)
        client = distributed.Client(cluster, timeout=WAIT)
    yield client
    with bounded(request):
        client.close(timeout=WAIT)
        cluster.close(timeout=WAIT)
    del client, cluster
    gc.collect()  # the client's cycles hold tensors: later tests count live storages


def test_dask_distributed_scatter_submit_gather(dask_client):
    """scatter puts the tensors on a worker (protocol 5, out-of-band frames), submit
    runs a task on them there, gather brings the results back: every tensor whole."""
    client = dask_client
    sent = cases()
    workers = sorted(client.scheduler_info()["workers"])
    assert len(workers) == 2
    scattered = client.scatter([t for _, t in sent], workers=workers[:1])
    who = client.submit(ew.whoami, pure=False).result(WAIT)
    assert_this_dlbridge(who)
    pid, seen, back = client.submit(ew.echo, scattered, workers=workers[:1]).result(WAIT)
    assert pid != os.getpid()

    def kept(described):
        # distributed may hand its frames out read-only or writable; all else is kept.
        return {k: v for k, v in described.items() if k != "read_only"}

    want = [kept(ew.describe(t)) for _, t in sent]
    assert [kept(d) for d in seen] == want
    assert all(type(t) is db.Tensor for t in back)
    assert [kept(ew.describe(t)) for t in back] == want
    assert [kept(ew.describe(t)) for t in client.gather(scattered)] == want


def test_dask_distributed_map_over_two_workers(dask_client):
    """client.map spreads tasks over both workers; each makes a new tensor there
    (affine) and a task on another worker sums the results it is handed."""
    client = dask_client
    inputs = [db.arange(5.0) + i for i in range(6)]
    made = client.map(ew.affine, inputs, [2] * 6, [1] * 6)
    squares = client.gather(client.map(ew.square_sum, made), errors="raise")
    want = [float(((np.arange(5.0) + i) * 2 + 1).__pow__(2).sum()) for i in range(6)]
    assert squares == want
    assert client.submit(ew.total, *made).result(WAIT).item() == sum(float((np.arange(5.0) + i).sum() * 2 + 5)
                                                                      for i in range(6))
    back = client.gather(made)
    assert all(type(t) is db.Tensor for t in back)
    assert [t.tolist() for t in back] == [list((np.arange(5.0) + i) * 2 + 1) for i in range(6)]
    who = {client.submit(ew.whoami, pure=False, workers=[w]).result(WAIT)[0]
           for w in client.scheduler_info()["workers"]}
    assert len(who) == 2 and os.getpid() not in who


def test_dask_distributed_edits_on_a_worker_stay_there(dask_client):
    client = dask_client
    t = db.arange(4.0)
    assert client.submit(ew.add_into, t, 1).result(WAIT) == [1.0, 2.0, 3.0, 4.0]
    assert t.tolist() == [0.0, 1.0, 2.0, 3.0]


def test_dask_distributed_reduces_misaligned_out_of_band_buffers(dask_client):
    """distributed hands a worker out-of-band frames at any byte offset, so a tensor
    may arrive over memory not aligned to its element size: every op must still work
    (issue 21: max panicked there)."""
    client = dask_client
    t = db.arange(1001, dtype=db.float64)
    scattered = client.scatter(t)
    assert client.submit(lambda x: x.max().item(), scattered).result(WAIT) == 1000.0
    assert client.submit(lambda x: x.sum().item(), scattered).result(WAIT) == 500500.0
    # The same without Dask: a buffer one byte off alignment.
    import pickle

    bufs = []
    data = pickle.dumps(t, protocol=5, buffer_callback=bufs.append)
    raw = bufs[0].raw()
    odd = memoryview(bytearray(raw.nbytes + 1))[1:]
    odd[:] = raw
    u = pickle.loads(data, buffers=[odd])
    assert u.data_ptr() % 8 != 0
    assert (u.max().item(), u.sum().item(), u.mean().item()) == (1000.0, 500500.0, 500.0)


# ------------------------------------------------ torch.distributed (gloo)
def test_torch_distributed_gloo(tmp_path):
    """Two spawned ranks: collectives run on torch.from_dlpack(t), a zero-copy view,
    so they write into the dlbridge tensor; *_object collectives pickle dlbridge
    tensors."""
    queue = SPAWN.Queue()
    ranks = [SPAWN.Process(target=ew.gloo_rank, args=(r, 2, str(tmp_path / "rendezvous"), queue)) for r in range(2)]
    for p in ranks:
        p.start()
    try:
        results = sorted(queue.get(timeout=WAIT) for _ in ranks)
    finally:
        for p in ranks:
            p.join(WAIT)
            if p.is_alive():
                p.kill()
    assert [p.exitcode for p in ranks] == [0, 0]
    gathered = [("Tensor", "dlbridge.int64", [0, 1, 2]), ("Tensor", "dlbridge.int64", [0, 2, 4])]
    assert results == [(0, [3.0] * 4, gathered), (1, [3.0] * 4, gathered)]


# ------------------------------------------------------------------- Ray
# Ray's own settings, read when ray is imported: its servers take the loopback
# address as the node's and listen there only (on Linux Ray otherwise picks the
# address other machines reach it by, even when given 127.0.0.1), and it sends
# no usage statistics.
RAY_ENV = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0", "RAY_USAGE_STATS_ENABLED": "0"}


@pytest.fixture(scope="class")
def ray_session(request):
    """One local Ray on 127.0.0.1 with one CPU, no dashboard, for the class."""
    saved = {k: os.environ.get(k) for k in RAY_ENV}
    os.environ.update(RAY_ENV)
    try:
        ray = pytest.importorskip("ray")
        assert not ray.is_initialized()
        # Ray's own servers (C++ and Python) start without the ASan runtime: they
        # never load dlbridge, and preloaded they slow Ray's start; its workers
        # get it back through child_env().
        preload = os.environ.pop("LD_PRELOAD", None)
        try:
            with bounded(request):
                ray.init(num_cpus=1, include_dashboard=False, _node_ip_address="127.0.0.1",
                         object_store_memory=128 * 2**20, log_to_driver=False,
                         runtime_env={"env_vars": child_env()})
        finally:
            if preload is not None:
                os.environ["LD_PRELOAD"] = preload
        try:
            yield ray
        finally:
            with bounded(request):
                ray.shutdown()
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


class TestRay:
    def remote(self, ray, fn):
        return ray.remote(fn).options(num_cpus=1)

    def test_on_loopback_with_this_dlbridge(self, ray_session):
        ray = ray_session
        context = ray.get_runtime_context()
        assert context.gcs_address.startswith("127.0.0.1:")
        assert [n["NodeManagerAddress"] for n in ray.nodes()] == ["127.0.0.1"]
        assert_this_dlbridge(ray.get(self.remote(ray, ew.whoami).remote(), timeout=WAIT))

    def test_get_is_zero_copy_from_the_object_store(self, ray_session):
        """ray.get of a put tensor reads the object store's shared memory, read-only,
        as a NumPy array put the same way does; torch's own tensors are copied out."""
        import torch

        ray = ray_session
        t = db.arange(2**18, dtype=db.float32)  # 1 MiB
        got = ray.get(ray.put(t), timeout=WAIT)
        arr = ray.get(ray.put(np.arange(2**18, dtype=np.float32)), timeout=WAIT)
        store = ew.mapping_of(arr.__array_interface__["data"][0])
        assert store and not store.startswith("["), store  # a named shared mapping: the object store
        assert not arr.flags.writeable
        assert type(got) is db.Tensor and got.dtype == db.float32 and got.shape == t.shape
        assert ew.mapping_of(got.data_ptr()) == store
        assert got.is_read_only and not got.numpy().flags.writeable
        with pytest.raises(RuntimeError):
            got.add_(1)
        copy = got.clone()
        copy.add_(1)
        assert got[5].item() == 5.0 and copy[5].item() == 6.0
        # torch's tensor in dlbridge's place comes out as a private, writable copy
        x = ray.get(ray.put(torch.arange(2**18, dtype=torch.float32)), timeout=WAIT)
        assert ew.mapping_of(x.data_ptr()) != store
        # The store keeps the object while the tensor uses it, though its ref is
        # gone: objects that fill the store many times over do not overwrite it.
        del arr, x
        gc.collect()
        for _ in range(6):
            ray.get(ray.put(np.full(8 * 2**20, 7.0, dtype=np.float32)), timeout=WAIT)  # 32 MiB each
        assert ew.mapping_of(got.data_ptr()) == store
        assert got.sum().item() == float(sum(range(2**18))) and got[-1].item() == 2**18 - 1
        # and a tensor read out of the store goes back into it
        again = ray.get(ray.put(got[::2]), timeout=WAIT)
        assert again.is_read_only and again.tolist() == got[::2].tolist()

    def test_put_get_every_kind(self, ray_session):
        ray = ray_session
        sent = cases()
        names, tensors = [n for n, _ in sent], [t for _, t in sent]
        got = ray.get(ray.put(tensors), timeout=WAIT)
        check_described(names, tensors, [ew.describe(t) for t in got], read_only=True)

    def test_task_takes_and_returns_tensors(self, ray_session):
        ray = ray_session
        sent = cases()
        result = ray.get(self.remote(ray, ew.echo).remote([t for _, t in sent]), timeout=WAIT)
        # the task reads its arguments, and this process its results, out of the
        # object store (or the task's inlined bytes): read-only on both sides
        round_trip_checked(result, sent, read_only=True)

    def test_task_arguments_are_zero_copy_in_the_worker(self, ray_session):
        ray = ray_session
        t = db.full((2**20,), 0.5, dtype=db.float32)  # 4 MiB: too big to inline, so it goes through the store
        a = np.full(2**20, 0.5, dtype=np.float32)
        where = self.remote(ray, ew.where_it_lies)
        on_tensor, on_array = ray.get([where.remote(t), where.remote(a)], timeout=WAIT)
        assert on_array[0] and not on_array[0].startswith("[")
        assert on_tensor == on_array == (on_array[0], True, 2.0**19)
        # a small argument travels inside the task instead: not in the store, read-only still
        small = ray.get(where.remote(db.full((16,), 0.5)), timeout=WAIT)
        assert small[0] != on_array[0] and small[1:] == (True, 8.0)

    def test_results_feed_other_tasks(self, ray_session):
        ray = ray_session
        affine, total = self.remote(ray, ew.affine), self.remote(ray, ew.total)
        parts = [affine.remote(db.arange(5.0), 2, 1), affine.remote(db.ones(2**18), -1, 0)]  # refs: never here
        out = ray.get(total.remote(*parts), timeout=WAIT)
        assert type(out) is db.Tensor and out.dtype == db.float64 and out.item() == 25.0 - 2**18
        first = ray.get(parts[0], timeout=WAIT)
        assert first.is_read_only and first.tolist() == [1.0, 3.0, 5.0, 7.0, 9.0]

    def test_in_place_edit_needs_a_copy(self, ray_session):
        """A task's argument is read-only, as NumPy's are: an in-place edit is refused
        in the worker, and the caller's tensor never changes."""
        ray = ray_session
        t = db.arange(4.0)
        with pytest.raises(ray.exceptions.RayTaskError, match="RuntimeError"):
            ray.get(self.remote(ray, ew.add_into).remote(t, 1), timeout=WAIT)
        assert t.tolist() == [0.0, 1.0, 2.0, 3.0]
