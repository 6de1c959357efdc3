"""Tensors over memory that is not aligned to their element size.

dask.distributed hands out exactly such out-of-band buffers; a protocol-5
pickle loaded over `memoryview(bytearray(n + 1))[1:]` makes one without Dask.
Every op must give what NumPy gives over the same bytes (reductions stage a
misaligned input into an aligned copy; see docs/guarantees.md), and none may
panic.
"""

import pickle

import numpy as np
import pytest

import dlbridge as db

DTYPES = ["float32", "float64", "float16", "int32", "int64", "int16", "complex64"]


def misaligned(a: np.ndarray) -> tuple[db.Tensor, np.ndarray]:
    """A dlbridge tensor and a NumPy array over the same misaligned bytes."""
    t = db.from_numpy(np.ascontiguousarray(a))
    bufs = []
    data = pickle.dumps(t, protocol=5, buffer_callback=bufs.append)
    raw = bufs[0].raw()
    mem = memoryview(bytearray(raw.nbytes + 1))[1:]
    mem[:] = raw
    r = pickle.loads(data, buffers=[mem])
    view = np.frombuffer(mem, dtype=a.dtype).reshape(a.shape)
    if a.dtype.itemsize > 1:
        assert r.data_ptr() % a.dtype.itemsize != 0, "the tensor is misaligned"
    assert r.data_ptr() == view.ctypes.data
    return r, view


def values(dtype: str, shape=(5, 7)) -> np.ndarray:
    rng = np.random.default_rng(7)
    a = rng.integers(-20, 20, size=shape).astype(dtype)
    if np.dtype(dtype).kind == "c":
        a = a + 1j * rng.integers(-5, 5, size=shape)
    return a.astype(dtype)


def check(got: db.Tensor, want) -> None:
    want = np.asarray(want)
    g = got.numpy()
    assert g.shape == want.shape
    np.testing.assert_allclose(g.astype(want.dtype) if g.dtype != want.dtype else g, want, rtol=2e-3)


def test_the_helper_really_makes_misaligned_tensors():
    t, view = misaligned(np.arange(6, dtype=np.float64))
    assert t.data_ptr() % 8 == 1
    assert t.tolist() == view.tolist()


@pytest.mark.parametrize("dtype", DTYPES)
def test_reductions_over_misaligned_memory(dtype):
    a = values(dtype)
    t, v = misaligned(a)
    check(t.sum(), v.sum())
    check(t.sum(0), v.sum(0))
    check(t.sum(dim=1), v.sum(1))
    check(t[1:, ::2].sum(0), v[1:, ::2].sum(0))
    if np.dtype(dtype).kind in "fc":
        check(t.mean(), v.mean())
        check(t.mean(1), v.mean(1))
    if np.dtype(dtype).kind != "c":
        check(t.max(), v.max())
        check(t.min(), v.min())
        check(t.amax(0), v.max(0))
        check(t.amin(1), v.min(1))
        values_, idx = t.max(1)
        check(values_, v.max(1))
        assert idx.tolist() == v.argmax(1).tolist()
        values_, idx = t.T.min(1)
        check(values_, v.T.min(1))
        assert idx.tolist() == v.T.argmin(1).tolist()


@pytest.mark.parametrize("dtype", DTYPES)
def test_elementwise_compare_and_unary_over_misaligned_memory(dtype):
    a, b = values(dtype), values(dtype)[::-1].copy()
    t, v = misaligned(a)
    u, w = misaligned(b)
    check(t + u, v + w)
    check(t - 3, v - 3)
    check(t * u, v * w)
    check(t.T + u.T, v.T + w.T)
    check(t[:, 1:] * 2, v[:, 1:] * 2)
    check(-t, -v)
    check(abs(t), np.abs(v))
    if np.dtype(dtype).kind in "fc":
        check(t / 4, v / 4)
        check(t ** 2, v**2)
    if np.dtype(dtype).kind != "c":
        check(t < u, v < w)
        check(t >= 0, v >= 0)
    check(t == u, v == w)


@pytest.mark.parametrize("dtype", DTYPES)
def test_casts_and_copies_over_misaligned_memory(dtype):
    a = values(dtype)
    t, v = misaligned(a)
    check(t.clone(), v)
    check(t.T.contiguous(), v.T)
    check(t[::2, ::3].contiguous(), v[::2, ::3])
    if np.dtype(dtype).kind != "c":
        for target, np_target in [(db.float32, "float32"), (db.float64, "float64"), (db.int64, "int64"), (db.int32, "int32"), (db.float16, "float16")]:
            check(t.to(target), v.astype(np_target))
            check(t.T.to(target), v.T.astype(np_target))
    check(db.from_numpy(v), v)
    np.testing.assert_array_equal(t.numpy(), v)


@pytest.mark.parametrize("dtype", DTYPES)
def test_writes_into_misaligned_memory(dtype):
    a, b = values(dtype), values(dtype)[::-1].copy()
    t, v = misaligned(a)
    u, _ = misaligned(b)
    expect = v.copy()
    t.add_(1)
    expect += 1
    np.testing.assert_array_equal(v, expect)
    t.mul_(u)
    expect *= b
    np.testing.assert_array_equal(v, expect)
    t[1:3, ::2].sub_(2)
    expect[1:3, ::2] -= 2
    np.testing.assert_array_equal(v, expect)
    t.T.copy_(db.from_numpy(b.T.copy()))
    expect[...] = b
    np.testing.assert_array_equal(v, expect)
    t.fill_(5)
    expect[...] = 5
    np.testing.assert_array_equal(v, expect)
    t[2] = 7
    expect[2] = 7
    np.testing.assert_array_equal(v, expect)
    t[:, 3] = db.from_numpy(np.arange(5).astype(dtype))
    expect[:, 3] = np.arange(5)
    np.testing.assert_array_equal(v, expect)
    t.zero_()
    np.testing.assert_array_equal(v, 0)


@pytest.mark.parametrize("dtype", DTYPES)
def test_indexing_reads_over_misaligned_memory(dtype):
    a = values(dtype)
    t, v = misaligned(a)
    assert t[2, 3].item() == v[2, 3].item()
    check(t[1], v[1])
    check(t[:, -1], v[:, -1])
    check(t[1::2, ::3], v[1::2, ::3])
    assert t.tolist() == v.tolist()
    assert [r.tolist() for r in t] == v.tolist()


def test_a_misaligned_3d_tensor_reduces_over_every_dim_set():
    a = np.random.default_rng(3).standard_normal((4, 5, 6)).astype(np.float32)
    t, v = misaligned(a)
    for dims in [0, 1, 2, (0, 1), (0, 2), (1, 2), (0, 1, 2)]:
        np.testing.assert_allclose(t.sum(dims).numpy(), v.sum(dims, dtype=np.float64), rtol=1e-5, atol=1e-5)
        np.testing.assert_array_equal(t.amax(dims).numpy(), v.max(dims))
