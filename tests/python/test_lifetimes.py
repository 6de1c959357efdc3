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
