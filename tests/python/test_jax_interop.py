"""Exchange with JAX (CPU) through DLPack.

JAX asks for a legacy capsule (it calls ``__dlpack__(stream=None)``); it imports
without copying when the data is 64-byte aligned and compactly strided. JAX arrays
are immutable, so dlbridge marks what it imports from JAX read-only.
"""

import time

import numpy as np
import pytest

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)  # keep float64/int64 as they are
import jax.dlpack  # noqa: E402
import jax.numpy as jnp  # noqa: E402

import dlbridge as db  # noqa: E402
from conftest import DTYPE_NAMES, collect, jax_on_cpu, sample  # noqa: E402


@pytest.fixture(autouse=True)
def _on_jax_cpu():
    """New JAX arrays on its CPU client, also where a GPU is JAX's default device."""
    with jax_on_cpu():
        yield


IMPORTERS = {"jnp.from_dlpack": jnp.from_dlpack, "jax.dlpack.from_dlpack": jax.dlpack.from_dlpack}


def as_float_list(x):
    return np.asarray(x).astype(np.complex128 if np.asarray(x).dtype.kind == "c" else np.float64).tolist()


@pytest.mark.parametrize("importer", IMPORTERS.values(), ids=IMPORTERS.keys())
@pytest.mark.parametrize("name", DTYPE_NAMES)
def test_dlbridge_to_jax_values_and_zero_copy(name, importer):
    t = db.tensor(sample(name))  # a fresh dlbridge allocation
    j = importer(t)
    assert j.dtype == np.dtype(sample(name).dtype)
    assert j.shape == t.shape
    assert as_float_list(j) == as_float_list(sample(name))
    if t.data_ptr() % 64 == 0:  # JAX's CPU client imports aligned buffers without a copy
        assert j.unsafe_buffer_pointer() == t.data_ptr()


def test_dlbridge_fresh_allocations_are_jax_aligned():
    # so that JAX can take dlbridge's own tensors without copying
    for make in (lambda: db.zeros(3), lambda: db.tensor([1, 2, 3]), lambda: db.ones(7, dtype=db.int8),
                 lambda: db.empty(1000, dtype=db.float64), lambda: db.arange(5)):
        t = make()
        j = jnp.from_dlpack(t)
        assert j.unsafe_buffer_pointer() == t.data_ptr()


def test_from_numpy_tensor_into_jax_values():
    a = np.arange(12.0).reshape(3, 4)
    j = jnp.from_dlpack(db.from_numpy(a))
    np.testing.assert_array_equal(np.asarray(j), a)


def test_transposed_tensor_into_jax():
    t = db.from_numpy(np.arange(12.0).reshape(3, 4).T)
    j = jnp.from_dlpack(t)
    assert j.shape == (4, 3)
    assert np.asarray(j).tolist() == t.tolist()


@pytest.mark.parametrize("shape", [(), (0,), (2, 0)], ids=str)
def test_degenerate_shapes_into_jax(shape):
    t = db.zeros(*shape) if shape else db.tensor(2.5)
    j = jnp.from_dlpack(t)
    assert j.shape == shape
    assert np.asarray(j).tolist() == t.tolist()


@pytest.mark.parametrize("name", DTYPE_NAMES)
def test_jax_to_dlbridge_values_zero_copy_and_read_only(name):
    j = jnp.asarray(sample(name))
    t = db.from_dlpack(j)
    assert t.dtype is getattr(db, name)
    assert t.shape == j.shape
    assert t.is_read_only
    assert t.data_ptr() == j.unsafe_buffer_pointer()
    assert as_float_list(t.numpy()) == as_float_list(j)


def test_jax_import_cannot_be_written():
    j = jnp.arange(4.0)
    t = db.from_dlpack(j)
    for write in (lambda: t.add_(1), lambda: t.fill_(0), lambda: t.__setitem__(0, 5.0),
                  lambda: t.copy_(db.ones(4, dtype=db.float64))):
        with pytest.raises(RuntimeError):
            write()
    assert np.asarray(j).tolist() == [0.0, 1.0, 2.0, 3.0]
    assert not t.numpy().flags.writeable


def test_jax_import_works_in_out_of_place_ops():
    t = db.from_dlpack(jnp.arange(4.0))
    assert (t * 2 + 1).tolist() == [1.0, 3.0, 5.0, 7.0]
    assert t.clone().add_(1).tolist() == [1.0, 2.0, 3.0, 4.0]
    assert not t.clone().is_read_only


def test_jax_import_keeps_jax_buffer_alive():
    j = jnp.arange(1000.0)
    t = db.from_dlpack(j)
    del j
    collect()
    churn = [jnp.full(1000, -1.0) for _ in range(20)]
    assert t.sum().item() == sum(range(1000))
    del churn


def test_jax_import_of_dlbridge_keeps_dlbridge_alive(no_leak):
    base = no_leak
    t = db.arange(1000, dtype=db.float64)
    j = jnp.from_dlpack(t)
    del t
    collect()
    assert float(j.sum()) == sum(range(1000))
    del j
    # JAX's CPU client runs computations on its own threads, and the one
    # that summed may drop its hold on the buffer a moment after the result
    # is ready: once in a full suite run the count was still one over here.
    # A leak stays over past the deadline and fails.
    deadline = time.monotonic() + 5.0
    collect()
    while db._core.live_storages() != base and time.monotonic() < deadline:
        time.sleep(0.01)
        collect()
    assert db._core.live_storages() == base


def test_round_trip_dlbridge_jax_dlbridge():
    t = db.arange(6, dtype=db.float32)
    u = db.from_dlpack(jnp.from_dlpack(t))
    assert u.tolist() == t.tolist()
    assert u.dtype is db.float32


class _Spy:
    """Passes JAX's __dlpack__ call through to a dlbridge tensor and records the capsule."""

    def __init__(self, t):
        self.t, self.capsules = t, []

    def __dlpack__(self, **kwargs):
        c = self.t.__dlpack__(**kwargs)
        self.capsules.append(repr(c))
        return c

    def __dlpack_device__(self):
        return self.t.__dlpack_device__()


def test_jax_imports_a_legacy_capsule():
    t = db.arange(5, dtype=db.float32)
    spy = _Spy(t)
    j = jnp.from_dlpack(spy)
    assert len(spy.capsules) == 1 and '"dltensor"' in spy.capsules[0]
    assert np.asarray(j).tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]
    assert j.unsafe_buffer_pointer() == t.data_ptr()
