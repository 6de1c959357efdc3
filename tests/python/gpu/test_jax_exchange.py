"""Zero-copy exchange with JAX on the GPU, both ways (JAX imports are read-only)."""

from types import SimpleNamespace

import numpy as np
import pytest

import dlbridge as db
from conftest import DTYPE_NAMES, collect
from dlpack_abi import READ_ONLY
from .conftest import FILL, NUMERIC_NAMES, assert_on_cuda, assert_values, capsule_info, cuda_from, dname, rand_array


@pytest.fixture(scope="module")
def jx():
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)  # keep 64-bit dtypes as they are
    try:
        gpus = jax.devices("gpu")
    except Exception as e:  # noqa: BLE001 - RuntimeError "Unknown backend" and friends
        pytest.skip(f"jax has no GPU backend: {e}")
    import jax.dlpack
    import jax.numpy as jnp

    return SimpleNamespace(jax=jax, jnp=jnp, gpu=gpus[0])


@pytest.mark.parametrize("importer", ["jnp.from_dlpack", "jax.dlpack.from_dlpack"])
@pytest.mark.parametrize("name", DTYPE_NAMES)
def test_dlbridge_cuda_to_jax_is_zero_copy(name, importer, jx, rng):
    imp = jx.jnp.from_dlpack if importer == "jnp.from_dlpack" else jx.jax.dlpack.from_dlpack
    a = rand_array(rng, name, (5, 7))
    t = cuda_from(a)
    j = imp(t)
    assert j.unsafe_buffer_pointer() == t.data_ptr()
    assert j.devices() == {jx.gpu}
    assert np.dtype(j.dtype) == a.dtype and j.shape == (5, 7)
    t2 = cuda_from(a)
    j2 = imp(t2)
    t2.fill_(FILL[name])  # an edit after the import shows through (first read of j2)
    db.cuda.synchronize()
    assert_values(np.asarray(j2), np.full(a.shape, FILL[name], a.dtype))
    assert_values(np.asarray(j), a)


@pytest.mark.parametrize("name", DTYPE_NAMES)
def test_jax_cuda_to_dlbridge_is_zero_copy_and_read_only(name, jx, rng):
    a = rand_array(rng, name, (5, 7))
    j = jx.jax.device_put(a, jx.gpu)
    d = db.from_dlpack(j)
    assert_on_cuda(d)
    assert dname(d.dtype) == name and d.data_ptr() == j.unsafe_buffer_pointer()
    assert d.is_read_only
    assert_values(d, a)
    with pytest.raises(RuntimeError, match="read-only"):
        d.fill_(FILL[name])
    with pytest.raises(RuntimeError, match="read-only"):
        d.copy_(cuda_from(a))
    if name in NUMERIC_NAMES:  # (complex arithmetic may refuse first, for its own reason)
        with pytest.raises(RuntimeError, match="read-only"):
            d.add_(1)
    if name == "bfloat16":  # NumPy has no type string for it: a TypeError, as torch's
        with pytest.raises(TypeError, match="bfloat16 is not supported by __cuda_array_interface__"):
            d.__cuda_array_interface__
    else:
        assert d.__cuda_array_interface__["data"][1] is True
    assert capsule_info(d.__dlpack__(max_version=(1, 0))).flags & READ_ONLY
    assert_values(np.asarray(j), a)
    k = d.clone()
    assert not k.is_read_only and k.data_ptr() != d.data_ptr()
    assert_values(k, a)


def test_jax_import_with_copy_true_is_writable(jx, rng):
    a = rand_array(rng, "float32", (64,))
    j = jx.jax.device_put(a, jx.gpu)
    d = db.from_dlpack(j, copy=True)
    assert_on_cuda(d)
    assert not d.is_read_only and d.data_ptr() != j.unsafe_buffer_pointer()
    d.add_(1)
    assert_values(d, a + np.float32(1))
    assert_values(np.asarray(j), a)


def test_jax_buffer_stays_alive_while_imported(jx):
    j = jx.jax.device_put(np.arange(4096, dtype=np.float64), jx.gpu)
    addr = j.unsafe_buffer_pointer()
    d = db.from_dlpack(j)
    del j
    collect()
    churn = [jx.jax.device_put(np.full(4096, -1.0), jx.gpu) for _ in range(20)]
    assert all(c.unsafe_buffer_pointer() != addr for c in churn)
    assert d.data_ptr() == addr
    assert d.sum().item() == sum(range(4096))
