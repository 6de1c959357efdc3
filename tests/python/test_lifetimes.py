"""Memory lifetimes across the bridges: the consumer keeps the producer's memory alive,
and once everything is dropped the memory is freed, exactly once.

Two probes: ``db._core.live_storages()`` (dlbridge's count of storages it holds) and a
weak reference to the producer object (numpy array / torch tensor), which must die once
nothing uses its memory.
"""

import sys
import weakref

import numpy as np
import pytest
import torch

import dlbridge as db
from conftest import collect, ptr


def churn():
    """Allocate and free memory of the same size, to reuse any buffer freed too early."""
    junk = [np.full(4096, -7.0) for _ in range(32)] + [torch.full((4096,), -7.0) for _ in range(32)]
    del junk


def big():
    return np.arange(4096, dtype=np.float64)


EXPECTED_SUM = float(sum(range(4096)))


# --------------------------------------------------------------------------- source deleted first

def _from_numpy():
    a = big()
    return db.from_numpy(a), weakref.ref(a)


def _numpy_of_tensor():
    t = db.from_numpy(big()).clone()
    return t.numpy(), None


def _from_dlpack_numpy():
    a = big()
    return db.from_dlpack(a), weakref.ref(a)


def _from_dlpack_torch():
    tt = torch.from_numpy(big())
    return db.from_dlpack(tt), weakref.ref(tt)


def _torch_from_dlpack_dlbridge():
    t = db.from_numpy(big()).clone()
    return torch.from_dlpack(t), None


def _numpy_from_dlpack_dlbridge():
    t = db.from_numpy(big()).clone()
    return np.from_dlpack(t), None


def _torch_from_dlpack_from_numpy():
    a = big()
    return torch.from_dlpack(db.from_numpy(a)), weakref.ref(a)


def _numpy_from_dlpack_from_numpy():
    a = big()
    return np.from_dlpack(db.from_numpy(a)), weakref.ref(a)


def _legacy_capsule():
    a = big()
    c = db.from_numpy(a).__dlpack__()
    return db.from_dlpack(c), weakref.ref(a)


def _versioned_capsule():
    a = big()
    c = db.from_numpy(a).__dlpack__(max_version=(1, 0))
    return db.from_dlpack(c), weakref.ref(a)


def _op_result():
    a = big()
    return db.from_numpy(a) + 0, weakref.ref(a)  # a new dlbridge storage; the source may go


def _view_of_view():
    a = np.concatenate([np.zeros(3), big()])
    return db.from_numpy(a)[1:][2:], weakref.ref(a)


def _view_only():
    a = np.concatenate([big(), np.zeros(10)])
    t = db.from_numpy(a)
    return t[:4096], weakref.ref(a)


def _detached():
    t = db.from_numpy(big()).clone()
    t.requires_grad = True
    return t.detach(), None


def _chain():
    a = big()
    t = db.from_numpy(a)
    tt = torch.from_dlpack(t)
    u = db.from_dlpack(tt)
    return np.from_dlpack(u), weakref.ref(a)


SCENARIOS = {
    "from_numpy": _from_numpy,
    "tensor.numpy": _numpy_of_tensor,
    "from_dlpack(numpy)": _from_dlpack_numpy,
    "from_dlpack(torch)": _from_dlpack_torch,
    "torch.from_dlpack(dlbridge)": _torch_from_dlpack_dlbridge,
    "np.from_dlpack(dlbridge)": _numpy_from_dlpack_dlbridge,
    "torch.from_dlpack(from_numpy)": _torch_from_dlpack_from_numpy,
    "np.from_dlpack(from_numpy)": _numpy_from_dlpack_from_numpy,
    "legacy capsule": _legacy_capsule,
    "versioned capsule": _versioned_capsule,
    "op result": _op_result,
    "view of a view": _view_of_view,
    "view of dropped parent": _view_only,
    "detach": _detached,
    "numpy->db->torch->db->numpy": _chain,
}


def _total(x):
    return float(x.sum()) if not isinstance(x, db.Tensor) else x.sum().item()


@pytest.mark.parametrize("scenario", SCENARIOS.values(), ids=SCENARIOS.keys())
def test_consumer_outlives_producer_then_everything_is_freed(no_leak, scenario):
    base = no_leak
    consumer, producer_ref = scenario()  # every producer-side name is gone already
    collect()
    churn()
    if producer_ref is not None and scenario is not _op_result:
        assert producer_ref() is not None, "the producer died while its memory is still used"
    assert _total(consumer) == EXPECTED_SUM
    del consumer
    collect()
    if producer_ref is not None:
        assert producer_ref() is None, "the producer is leaked"
    assert db._core.live_storages() == base


# --------------------------------------------------------------------------- capsules


@pytest.mark.parametrize("max_version", [None, (1, 0)], ids=["legacy", "versioned"])
def test_unconsumed_capsule_releases_the_producer(no_leak, max_version):
    a = big()
    ref = weakref.ref(a)
    c = db.from_numpy(a).__dlpack__(max_version=max_version)
    del a
    collect()
    assert ref() is not None
    del c
    collect()
    assert ref() is None


@pytest.mark.parametrize("max_version", [None, (1, 0)], ids=["legacy", "versioned"])
def test_capsule_consumed_by_torch_after_tensor_dropped(no_leak, max_version):
    t = db.from_numpy(big()).clone()
    c = t.__dlpack__(max_version=max_version)
    del t
    collect()
    churn()
    tt = torch.from_dlpack(c)
    del c
    collect()
    assert tt.sum().item() == EXPECTED_SUM
    del tt


def test_numpy_capsule_consumed_after_array_dropped(no_leak):
    a = big()
    c = a.__dlpack__()
    del a
    collect()
    churn()
    t = db.from_dlpack(c)
    del c
    assert t.sum().item() == EXPECTED_SUM


def test_torch_capsule_consumed_after_tensor_dropped(no_leak):
    tt = torch.arange(4096, dtype=torch.float64)
    c = tt.__dlpack__(max_version=(1, 0))
    del tt
    collect()
    churn()
    t = db.from_dlpack(c)
    del c
    assert t.sum().item() == EXPECTED_SUM


# --------------------------------------------------------------------------- counting


def test_live_storages_counts_and_uncounts(no_leak):
    base = no_leak
    ts = [db.zeros(10) for _ in range(5)]
    assert db._core.live_storages() == base + 5
    views = [t[1:] for t in ts]  # views share their storage
    assert db._core.live_storages() == base + 5
    del ts
    collect()
    assert db._core.live_storages() == base + 5
    del views
    collect()
    assert db._core.live_storages() == base


def test_source_refcount_restored(no_leak):
    a = big()
    before = sys.getrefcount(a)
    t = db.from_numpy(a)
    u = db.from_dlpack(t)
    tt = torch.from_dlpack(u)
    n = np.from_dlpack(u)
    assert sys.getrefcount(a) > before
    del t, u, tt, n
    collect()
    assert sys.getrefcount(a) == before


def test_repeated_round_trips_do_not_leak_or_double_free(no_leak):
    a = big()
    ref = weakref.ref(a)
    for i in range(300):
        t = db.from_numpy(a)
        tt = torch.from_dlpack(t)
        u = db.from_dlpack(tt)
        n = np.from_dlpack(u)
        c = u.__dlpack__(max_version=(1, 0)) if i % 2 else u.__dlpack__()
        if i % 3 == 0:
            db.from_dlpack(c)
        n[0] = i
        del t, tt, u, n, c
    assert a[0] == 299
    del a
    collect()
    assert ref() is None


def test_many_tensors_freed(no_leak):
    for _ in range(200):
        t = db.rand(100, 10)
        u = (t + 1).clone()[::2]
        _ = u.numpy()
        del t, u


def test_read_only_import_keeps_numpy_alive(no_leak):
    a = big()
    a.flags.writeable = False
    ref = weakref.ref(a)
    addr = ptr(a)
    t = db.from_numpy(a)
    del a
    collect()
    churn()
    assert t.data_ptr() == addr
    assert t.sum().item() == EXPECTED_SUM
    del t
    collect()
    assert ref() is None


def test_jax_round_trip_frees(no_leak):
    jnp = pytest.importorskip("jax.numpy")
    t = db.arange(4096, dtype=db.float32)
    j = jnp.from_dlpack(t)
    del t
    collect()
    u = db.from_dlpack(j)
    del j
    collect()
    assert u.sum().item() == EXPECTED_SUM
    del u


# --------------------------------------------------------------------------- deleters off the GIL
# A consumer may call the deleter of a `__dlpack__` export on any thread: one of its
# own without the GIL, or a C thread Python never saw. dlbridge's deleters need no GIL.

THREAD_C = r"""
#include <pthread.h>
typedef void (*deleter_fn)(void *);
struct call { deleter_fn f; void *arg; };
static void *run(void *p) { struct call *c = p; c->f(c->arg); return 0; }
int call_on_new_thread(deleter_fn f, void *arg) {
    pthread_t th;
    struct call c = {f, arg};
    if (pthread_create(&th, 0, run, &c)) return -1;
    return pthread_join(th, 0);
}
"""


@pytest.fixture(scope="module")
def c_thread(tmp_path_factory):
    """call_on_new_thread(deleter, ptr): the deleter runs on a fresh C thread while this
    one waits without the GIL (ctypes releases it around foreign calls)."""
    import ctypes
    import shutil
    import subprocess

    if shutil.which("cc") is None:
        pytest.skip("no C compiler (cc) on PATH")
    d = tmp_path_factory.mktemp("c_thread")
    (d / "t.c").write_text(THREAD_C)
    subprocess.run(["cc", "-shared", "-fPIC", "-pthread", "-o", d / "t.so", d / "t.c"], check=True, timeout=120)
    lib = ctypes.CDLL(str(d / "t.so"))
    lib.call_on_new_thread.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
    return lib.call_on_new_thread


# The capsule keeps a pointer to its name, so the names it is given must outlive it.
USED_NAMES = {True: b"used_dltensor_versioned", False: b"used_dltensor"}


def _take(capsule, versioned):
    """Takes the managed tensor out of a capsule as a consumer does (renaming it used_*):
    a pointer to it and its deleter."""
    import ctypes

    import dlpack_abi as abi

    name = b"dltensor_versioned" if versioned else b"dltensor"
    address = abi.capsule_pointer(capsule, name)
    rename = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.c_char_p)(
        ("PyCapsule_SetName", ctypes.pythonapi))
    assert rename(capsule, USED_NAMES[versioned]) == 0
    kind = abi.DLManagedTensorVersioned if versioned else abi.DLManagedTensor
    managed = ctypes.cast(address, ctypes.POINTER(kind))
    return managed, managed.contents.deleter


@pytest.mark.parametrize("where", ["this thread, GIL released", "a C thread", "a Python thread"])
@pytest.mark.parametrize("max_version", [None, (1, 0)], ids=["legacy", "versioned"])
def test_export_deleter_runs_off_the_gil(no_leak, c_thread, where, max_version):
    import ctypes
    import threading

    base = no_leak
    capsule = db.arange(4096, dtype=db.float64).__dlpack__(max_version=max_version)
    managed, deleter = _take(capsule, max_version is not None)
    del capsule
    collect()
    assert db._core.live_storages() == base + 1, "the export keeps its storage"
    if where == "a C thread":
        assert c_thread(ctypes.cast(deleter, ctypes.c_void_p), ctypes.cast(managed, ctypes.c_void_p)) == 0
    elif where == "a Python thread":
        th = threading.Thread(target=deleter, args=(managed,))
        th.start()
        th.join(60)
        assert not th.is_alive()
    else:
        deleter(managed)  # a ctypes call: the GIL is released around it
    collect()
    assert db._core.live_storages() == base


def test_exports_alive_at_exit_end_cleanly():
    """Exports still held when the interpreter exits (consumed by torch and NumPy, and
    unconsumed) are released during finalization or left alone after it; the process
    exits with status 0 and nothing on stderr."""
    from conftest import run_python

    code = (
        "import numpy as np, torch, dlbridge as db\n"
        "t = db.arange(1000, dtype=db.float32)\n"
        "keep = [torch.from_dlpack(t), np.from_dlpack(t), t.__dlpack__(), t.__dlpack__(max_version=(1, 0))]\n"
        "del t\n"
    )
    r = run_python(code)
    assert r.returncode == 0 and r.stderr == "", r.stderr
