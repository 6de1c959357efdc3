"""The DLPack 1.3 dtypes: float8, float6, float4 and complex32.

Casts are checked bit for bit against the library dlbridge follows (PyTorch for the
formats PyTorch has, ml_dtypes, which JAX uses, for the others) on every float16 and
every bfloat16 value and every code; exchanges are checked zero-copy by pointers with
PyTorch, JAX and ml_dtypes NumPy arrays.
"""

import ctypes
import gc

import ml_dtypes
import numpy as np
import pytest
import torch

import dlbridge as db
from conftest import jax_on_cpu
from dlpack_abi import (DLDataType, DLDevice, DLManagedTensorVersioned, DLTensor, capsule_pointer,
                        new_capsule)

pytestmark = pytest.mark.filterwarnings("ignore:ComplexHalf support is experimental")

NARROW = ["float8_e3m4", "float8_e4m3", "float8_e4m3b11fnuz", "float8_e4m3fn", "float8_e4m3fnuz",
          "float8_e5m2", "float8_e5m2fnuz", "float8_e8m0fnu", "float6_e2m3fn", "float6_e3m2fn",
          "float4_e2m1fn"]
TORCH_HAS = [n for n in NARROW if hasattr(torch, n)]
WIDTH = {"float6_e2m3fn": 6, "float6_e3m2fn": 6, "float4_e2m1fn": 4}


def every_half_and_bfloat16_value():
    """Every float16 and bfloat16 value as float32 (exact), plus float32 edges."""
    codes = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)
    halves = codes.view(np.float16).astype(np.float32)
    bf16 = (codes.astype(np.uint32) << 16).view(np.float32)
    edges = np.array([3.4e38, -3.4e38, 1e-45, -1e-45, 5.877472e-39, 1.1754944e-38], dtype=np.float32)
    return np.concatenate([halves, bf16, edges])


def reference_codes(name, x):
    """The codes the followed library gives for float32 values x."""
    if name in TORCH_HAS:
        return torch.from_numpy(x.copy()).to(getattr(torch, name)).view(torch.uint8).numpy()
    return x.astype(getattr(ml_dtypes, name)).view(np.uint8)


def codes_of(t):
    return t.view(db.uint8).numpy()


@pytest.mark.parametrize("name", NARROW)
def test_float32_to_narrow_is_bit_exact(name):
    x = every_half_and_bfloat16_value()
    got = codes_of(db.from_numpy(x).to(getattr(db, name)))
    want = reference_codes(name, x)
    bad = np.nonzero(got != want)[0]
    assert bad.size == 0, [(float(x[i]), int(got[i]), int(want[i])) for i in bad[:10]]


@pytest.mark.parametrize("name", NARROW)
def test_bfloat16_to_narrow_is_bit_exact(name):
    x = every_half_and_bfloat16_value()[1 << 16:(1 << 17)]
    src = db.from_numpy(x).to(db.bfloat16)
    if name in TORCH_HAS:
        want = torch.from_numpy(x.copy()).to(torch.bfloat16).to(getattr(torch, name)).view(torch.uint8).numpy()
    else:
        want = x.astype(ml_dtypes.bfloat16).astype(getattr(ml_dtypes, name)).view(np.uint8)
    got = codes_of(src.to(getattr(db, name)))
    # NaN aside: PyTorch's own bfloat16 -> float8 cast gives 0x7f for a NaN on its scalar
    # path and 0xff on its vectorized one; dlbridge keeps the NaN's sign (as PyTorch's
    # float32 path does), and the float32 test above checks every NaN bit for bit.
    nan = np.isnan(x)
    assert np.array_equal(got[~nan], want[~nan])
    if not name.startswith(("float6", "float4")):  # these have no NaN
        assert np.isnan(db.from_numpy(got[nan]).view(getattr(db, name)).float().numpy()).all()


@pytest.mark.parametrize("name", NARROW)
def test_every_code_decodes_as_the_followed_library_does(name):
    codes = np.arange(1 << WIDTH.get(name, 8), dtype=np.uint8)
    t = db.from_numpy(codes).view(getattr(db, name))
    if name in TORCH_HAS:
        want = torch.from_numpy(codes.copy()).view(getattr(torch, name)).float().numpy()
        want_bf16 = torch.from_numpy(codes.copy()).view(getattr(torch, name)).bfloat16().float().numpy()
    else:
        want = codes.view(getattr(ml_dtypes, name)).astype(np.float32)
        want_bf16 = codes.view(getattr(ml_dtypes, name)).astype(ml_dtypes.bfloat16).astype(np.float32)
    np.testing.assert_array_equal(t.float().numpy(), want)
    np.testing.assert_array_equal(t.bfloat16().float().numpy(), want_bf16)
    assert t.tolist() == pytest.approx(want.tolist(), nan_ok=True)


def test_complex32_casts_as_torch():
    rng = np.random.default_rng(0)
    z = (rng.standard_normal(1000) * 1e3 + 1j * rng.standard_normal(1000)).astype(np.complex64)
    z[:4] = [65504 + 1j, 1e6 - 1e6j, np.nan + 0j, 1e-8 + 1e-8j]
    ours = db.from_numpy(z).to(db.complex32)
    theirs = torch.from_numpy(z).to(torch.complex32)
    np.testing.assert_array_equal(ours.to(db.complex64).numpy(), theirs.to(torch.complex64).numpy())
    assert ours.to(db.float32).tolist() == pytest.approx(theirs.real.float().tolist(), nan_ok=True)


# --------------------------------------------------------------------------- exchange


@pytest.mark.parametrize("name", TORCH_HAS + ["complex32"])
def test_torch_exchange_is_zero_copy_both_ways(name):
    src = torch.tensor([1.5, -2.0, 0.25, 3.0]).to(getattr(torch, name))
    t = db.from_dlpack(src)
    assert t.dtype is getattr(db, name) and t.data_ptr() == src.data_ptr()
    back = torch.from_dlpack(t)
    assert back.dtype == src.dtype and back.data_ptr() == src.data_ptr()
    del src, back
    gc.collect()
    assert t.to(db.complex64 if name == "complex32" else db.float32).tolist() == \
        torch.tensor([1.5, -2.0, 0.25, 3.0]).to(getattr(torch, name)).to(
            torch.complex64 if name == "complex32" else torch.float32).tolist()


def test_torch_float4_pairs_exchange_zero_copy():
    raw = torch.tensor([0x21, 0x43, 0xA7], dtype=torch.uint8)
    src = raw.view(torch.float4_e2m1fn_x2)
    t = db.from_dlpack(src)
    assert t.dtype is db.float4_e2m1fn_x2 and t.shape == (3,) and t.data_ptr() == src.data_ptr()
    assert t.view(db.uint8).tolist() == [0x21, 0x43, 0xA7]
    back = torch.from_dlpack(t)
    assert back.dtype == torch.float4_e2m1fn_x2 and back.data_ptr() == src.data_ptr()
    assert t.clone().view(db.uint8).tolist() == [0x21, 0x43, 0xA7]  # copies keep the bytes
    with pytest.raises(RuntimeError, match="copy_kernel"):
        t.float()


@pytest.mark.parametrize("name", [n for n in NARROW if not n.startswith(("float6", "float4"))])
def test_jax_exchange_is_zero_copy_both_ways(name):
    jax = pytest.importorskip("jax")
    jnp = pytest.importorskip("jax.numpy")
    x = np.array([1.5, -2.0, 0.25, 3.0], dtype=np.float32).astype(getattr(ml_dtypes, name))
    with jax_on_cpu():
        j = jnp.asarray(x)
    t = db.from_dlpack(j)
    assert t.dtype is getattr(db, name) and t.is_read_only
    assert t.data_ptr() == j.unsafe_buffer_pointer()
    assert np.array_equal(codes_of(t), x.view(np.uint8))
    u = db.from_numpy(x).clone()  # dlbridge's memory is aligned as JAX's CPU import wants
    back = jax.dlpack.from_dlpack(u)
    assert back.dtype == x.dtype and np.array_equal(np.asarray(back).view(np.uint8), x.view(np.uint8))
    assert back.unsafe_buffer_pointer() == u.data_ptr()


def test_jax_packed_float4_reads_as_pytorch_pairs():
    jnp = pytest.importorskip("jax.numpy")
    values = np.array([0.5, 1, 1.5, 2, 3, 4, 6, -1], dtype=ml_dtypes.float4_e2m1fn)
    with jax_on_cpu():
        j = jnp.asarray(values.reshape(2, 4))
    t = db.from_dlpack(j)
    assert t.dtype is db.float4_e2m1fn_x2 and t.shape == (2, 2)
    assert t.data_ptr() == j.unsafe_buffer_pointer()
    # Low nibble first: (0.5, 1) -> 0x21, as PyTorch packs float4_e2m1fn_x2.
    assert t.view(db.uint8).tolist() == [[0x21, 0x43], [0x65, 0xA7]]
    assert torch.from_dlpack(t).view(torch.uint8).tolist() == [[0x21, 0x43], [0x65, 0xA7]]


def test_jax_cannot_take_float4_pairs_so_neither_from_dlbridge():
    """JAX refuses PyTorch's float4_e2m1fn_x2 (lanes 2) the same way."""
    jax = pytest.importorskip("jax")
    pairs = torch.tensor([0x21], dtype=torch.uint8).view(torch.float4_e2m1fn_x2)
    with pytest.raises(Exception, match="lanes"):
        jax.dlpack.from_dlpack(pairs)
    with pytest.raises(Exception, match="lanes"):
        jax.dlpack.from_dlpack(db.from_dlpack(pairs))


@pytest.mark.parametrize("name", NARROW)
def test_ml_dtypes_arrays_are_shared_both_ways(name):
    a = np.array([1.0, -0.5, 2.0, 0.0], dtype=np.float32).astype(getattr(ml_dtypes, name))
    t = db.from_numpy(a)
    assert t.dtype is getattr(db, name) and t.data_ptr() == a.ctypes.data
    b = t.numpy()
    assert b.dtype == a.dtype and b.ctypes.data == a.ctypes.data
    t[1] = 1.0  # a write through dlbridge shows in NumPy
    assert float(a[1]) == 1.0
    assert t[::2].numpy().tolist() == a[::2].tolist()


def test_padded_subbyte_exports_say_so_and_legacy_refuses():
    t = db.tensor([1.0, 7.5]).to(db.float6_e2m3fn)
    cap = t.__dlpack__(max_version=(1, 3))
    m = DLManagedTensorVersioned.from_address(capsule_pointer(cap, b"dltensor_versioned"))
    assert m.flags & 4  # IS_SUBBYTE_TYPE_PADDED
    assert (m.dl_tensor.dtype.code, m.dl_tensor.dtype.bits, m.dl_tensor.dtype.lanes) == (15, 6, 1)
    assert db.from_dlpack(cap).tolist() == [1.0, 7.5]
    with pytest.raises(BufferError, match="padded"):
        t.__dlpack__()


def _foreign(code, bits, shape, strides, flags=0):
    buf = (ctypes.c_uint8 * 16)(*range(16))
    sh = (ctypes.c_int64 * len(shape))(*shape)
    st = (ctypes.c_int64 * len(strides))(*strides)
    m = DLManagedTensorVersioned()
    m.major, m.minor, m.flags = 1, 3, flags
    m.dl_tensor = DLTensor(ctypes.addressof(buf), DLDevice(1, 0), len(shape), DLDataType(code, bits, 1), sh, st, 0)
    return new_capsule(ctypes.addressof(m), b"dltensor_versioned", None), (buf, sh, st, m)


def test_packed_float6_is_refused_and_padded_read():
    cap, keep = _foreign(15, 6, [4], [1])
    with pytest.raises(BufferError, match="packed float6_e2m3fn is not supported"):
        db.from_dlpack(cap)
    cap, keep = _foreign(15, 6, [4], [1], flags=4)
    t = db.from_dlpack(cap)
    assert t.dtype is db.float6_e2m3fn and t.view(db.uint8).tolist() == [0, 1, 2, 3]
    del t


@pytest.mark.parametrize("shape,strides", [([3], [1]), ([4], [2]), ([2, 2], [3, 1])], ids=str)
def test_packed_float4_that_cannot_pair_is_refused(shape, strides):
    cap, keep = _foreign(17, 4, shape, strides)
    with pytest.raises(BufferError, match="float4_e2m1fn_x2 pairs"):
        db.from_dlpack(cap)


def test_a_device_code_newer_than_dlbridge_is_named():
    cap, keep = _foreign(2, 32, [1], [1])
    m = keep[3]
    m.dl_tensor.device = DLDevice(99, 0)
    with pytest.raises(BufferError, match="type=99"):
        db.from_dlpack(cap)


# --------------------------------------------------------------------------- what works and what is refused


def test_storage_ops_work_on_views_and_copies():
    base = db.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]).to(db.float8_e5m2)
    v = base.T
    assert not v.is_contiguous()
    assert v.contiguous().float().tolist() == [[1.0, 4.0], [2.0, 5.0], [3.0, 6.0]]
    assert v.clone().tolist() == v.tolist()
    out = db.zeros(3, 2, dtype=db.float8_e5m2)
    out.copy_(v)
    assert out.tolist() == v.tolist()
    out.fill_(0.5)
    assert out.tolist() == [[0.5, 0.5]] * 3
    assert db.full((2,), 448.0, dtype=db.float8_e4m3fn).view(db.uint8).tolist() == [0x7E, 0x7E]
    assert repr(base) == repr(torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]).to(torch.float8_e5m2)).replace(
        "torch.", "dlbridge.")


@pytest.mark.parametrize("expr", ["t + t", "t * 2", "-t", "t.sum()", "t.amax()", "t + f", "t < 1"], ids=str)
def test_arithmetic_is_refused_as_torch_refuses_it(expr):
    def run(lib):
        t = lib.tensor([1.0, 2.0]).to(lib.float8_e4m3fn)  # noqa: F841 - used by eval
        f = lib.tensor([1.0, 2.0])  # noqa: F841
        return eval(expr)

    with pytest.raises(RuntimeError) as theirs:
        run(torch)
    with pytest.raises(RuntimeError) as ours:
        run(db)
    assert type(ours.value) is type(theirs.value)
    if "Promotion" in str(theirs.value):
        assert str(ours.value) == str(theirs.value)
    else:
        assert "not implemented for 'Float8_e4m3fn'" in str(ours.value)


def test_complex32_meets_wider_types_as_complex64():
    c = db.tensor([1 + 2j]).to(db.complex32)
    r = c + db.tensor([1.0])
    assert r.dtype is db.complex64 and r.tolist() == [2 + 2j]
    with pytest.raises(TypeError, match="ComplexHalf"):
        c.numpy()
