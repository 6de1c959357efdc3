"""The DLPack protocol: db.from_dlpack, Tensor.__dlpack__ and Tensor.__dlpack_device__."""

import functools
import sys

import numpy as np
import pytest
import torch

import dlbridge as db
from conftest import DTYPE_NAMES, NO_CUDA, collect, is_capsule, ptr, sample, without_cuda


# --------------------------------------------------------------------------- from_dlpack sources

SOURCES = {
    # name -> (make source, address of its first element, expected values)
    "numpy": lambda a: (a, ptr(a)),
    "torch": lambda a: (torch.from_numpy(a), ptr(a)),
    "dlbridge": lambda a: (db.from_numpy(a), ptr(a)),
    "numpy_capsule_legacy": lambda a: (a.__dlpack__(), ptr(a)),
    "numpy_capsule_versioned": lambda a: (a.__dlpack__(max_version=(1, 0)), ptr(a)),
    "torch_capsule_legacy": lambda a: (torch.from_numpy(a).__dlpack__(), ptr(a)),
    "torch_capsule_versioned": lambda a: (torch.from_numpy(a).__dlpack__(max_version=(1, 0)), ptr(a)),
    "dlbridge_capsule_legacy": lambda a: (db.from_numpy(a).__dlpack__(), ptr(a)),
    "dlbridge_capsule_versioned": lambda a: (db.from_numpy(a).__dlpack__(max_version=(1, 0)), ptr(a)),
}


@pytest.mark.parametrize("make", SOURCES.values(), ids=SOURCES.keys())
def test_from_dlpack_sources_are_zero_copy(make):
    a = np.arange(6.0).reshape(2, 3)
    src, addr = make(a)
    t = db.from_dlpack(src)
    assert t.dtype is db.float64
    assert t.shape == (2, 3)
    assert t.data_ptr() == addr
    assert t.tolist() == a.tolist()
    a[0, 0] = 42.0
    assert t[0, 0].item() == 42.0
    t[1, 1] = -1.0
    assert a[1, 1] == -1.0


@pytest.mark.parametrize("name", [n for n in DTYPE_NAMES if n != "bfloat16"])
def test_from_dlpack_numpy_every_dtype(name):
    a = sample(name)
    t = db.from_dlpack(a)
    assert t.dtype is getattr(db, name)
    assert t.data_ptr() == ptr(a)
    np.testing.assert_array_equal(t.numpy(), a)


@pytest.mark.parametrize("name", [n for n in DTYPE_NAMES if n != "bfloat16"])
def test_numpy_from_dlpack_every_dtype(name):
    t = db.from_numpy(sample(name))
    a = np.from_dlpack(t)
    assert a.dtype == sample(name).dtype
    assert ptr(a) == t.data_ptr()
    np.testing.assert_array_equal(a, sample(name))


def test_from_dlpack_of_dlbridge_tensor_shares_memory():
    t = db.zeros(3)
    u = db.from_dlpack(t)
    assert u.data_ptr() == t.data_ptr()
    u.fill_(2)
    assert t.tolist() == [2.0, 2.0, 2.0]


def test_from_dlpack_copy_true_gives_fresh_buffer():
    a = np.arange(4.0)
    t = db.from_dlpack(a, copy=True)
    assert t.data_ptr() != ptr(a)
    assert t.tolist() == a.tolist()
    a[0] = 100.0
    assert t[0].item() == 0.0
    t[1] = -5.0
    assert a[1] == 1.0
    assert not t.is_read_only


def test_from_dlpack_copy_true_of_read_only_source_is_writeable():
    a = np.arange(3.0)
    a.flags.writeable = False
    t = db.from_dlpack(a, copy=True)
    t.add_(1)
    assert t.tolist() == [1.0, 2.0, 3.0]
    assert a.tolist() == [0.0, 1.0, 2.0]


def test_from_dlpack_copy_false_when_no_copy_needed():
    a = np.arange(4.0)
    t = db.from_dlpack(a, copy=False)
    assert t.data_ptr() == ptr(a)


@pytest.mark.parametrize("device", ["cpu", db.device("cpu"), None], ids=["str", "device", "None"])
def test_from_dlpack_device_cpu(device):
    a = np.arange(3.0)
    t = db.from_dlpack(a, device=device)
    assert t.device == db.device("cpu")
    assert t.data_ptr() == ptr(a)


@without_cuda()
@pytest.mark.parametrize("device", ["cuda", "cuda:0", db.device("cuda")], ids=["cuda", "cuda:0", "device"])
def test_from_dlpack_device_cuda_raises(device):
    with pytest.raises(RuntimeError, match=NO_CUDA):
        db.from_dlpack(np.arange(3.0), device=device)


def test_from_dlpack_source_argument_is_positional_only():
    with pytest.raises(TypeError):
        db.from_dlpack(x=np.arange(3.0))


@pytest.mark.parametrize("obj", [[1, 2], 3.0, "abc", None, object()], ids=["list", "float", "str", "None", "object"])
def test_from_dlpack_non_dlpack_object_raises_type_error(obj):
    with pytest.raises(TypeError):
        db.from_dlpack(obj)


@pytest.mark.parametrize("make", [
    lambda: np.arange(3.0).__dlpack__(),
    lambda: np.arange(3.0).__dlpack__(max_version=(1, 0)),
    lambda: db.arange(3).__dlpack__(),
    lambda: db.arange(3).__dlpack__(max_version=(1, 0)),
], ids=["numpy_legacy", "numpy_versioned", "dlbridge_legacy", "dlbridge_versioned"])
def test_consumed_capsule_cannot_be_reused(make):
    c = make()
    t = db.from_dlpack(c)
    with pytest.raises(ValueError):
        db.from_dlpack(c)
    assert t.tolist() == [0, 1, 2]


def test_capsule_consumed_by_torch_cannot_be_reused_by_dlbridge():
    c = db.arange(3).__dlpack__()
    tt = torch.from_dlpack(c)
    with pytest.raises(ValueError):
        db.from_dlpack(c)
    assert tt.tolist() == [0, 1, 2]


# --------------------------------------------------------------------------- __dlpack__ / __dlpack_device__


def test_dlpack_device_is_cpu():
    assert db.zeros(2).__dlpack_device__() == (1, 0)
    assert db.from_numpy(np.zeros(2)).__dlpack_device__() == (1, 0)


@pytest.mark.parametrize("kwargs,name", [
    ({}, "dltensor"),
    ({"max_version": None}, "dltensor"),
    ({"max_version": (0, 8)}, "dltensor"),
    ({"max_version": (0, 0)}, "dltensor"),
    ({"max_version": (1, 0)}, "dltensor_versioned"),
    ({"max_version": (1, 1)}, "dltensor_versioned"),
    ({"max_version": (2, 0)}, "dltensor_versioned"),
], ids=lambda x: str(x) if not isinstance(x, str) else x)
def test_dlpack_capsule_kind(kwargs, name):
    t = db.arange(3)
    c = t.__dlpack__(**kwargs)
    assert type(c).__name__ == "PyCapsule"
    assert is_capsule(c, name), repr(c)
    u = db.from_dlpack(c)
    assert u.data_ptr() == t.data_ptr()


def test_dlpack_arguments_are_keyword_only():
    with pytest.raises(TypeError):
        db.arange(3).__dlpack__(None)


@pytest.mark.parametrize("stream", [1, -1, 0])
def test_dlpack_stream_on_cpu_raises_value_error(stream):
    with pytest.raises(ValueError):
        db.arange(3).__dlpack__(stream=stream)


def test_dlpack_dl_device_cpu_is_fine():
    t = db.arange(3)
    c = t.__dlpack__(dl_device=(1, 0))
    assert db.from_dlpack(c).data_ptr() == t.data_ptr()


@without_cuda()
@pytest.mark.parametrize("dl_device", [(2, 0), (2, 1)])
def test_dlpack_dl_device_cuda_raises_buffer_error(dl_device):
    with pytest.raises(BufferError):
        db.arange(3).__dlpack__(dl_device=dl_device)


def test_dlpack_requires_grad_raises_buffer_error():
    t = db.ones(3, requires_grad=True)
    with pytest.raises(BufferError):
        t.__dlpack__()
    with pytest.raises(BufferError):
        t.__dlpack__(max_version=(1, 0))
    assert db.from_dlpack(t.detach()).tolist() == [1.0, 1.0, 1.0]


def test_dlpack_copy_true_is_a_copy():
    t = db.arange(4, dtype=db.float64)
    c = t.__dlpack__(copy=True, max_version=(1, 0))
    u = db.from_dlpack(c)
    assert u.data_ptr() != t.data_ptr()
    assert u.tolist() == t.tolist()
    u.fill_(9)
    assert t.tolist() == [0.0, 1.0, 2.0, 3.0]


def test_numpy_from_dlpack_copy_true_does_not_share_memory():
    t = db.arange(4, dtype=db.float64)
    a = np.from_dlpack(t, copy=True)
    assert not np.shares_memory(a, t.numpy())
    assert a.tolist() == [0.0, 1.0, 2.0, 3.0]


def test_numpy_from_dlpack_copy_false_shares_memory():
    t = db.arange(4, dtype=db.float64)
    a = np.from_dlpack(t, copy=False)
    assert ptr(a) == t.data_ptr()


def _read_only(values=(1.0, 2.0, 3.0)):
    a = np.array(values)
    a.flags.writeable = False
    return a, db.from_numpy(a)


def test_read_only_tensor_legacy_export_raises_buffer_error():
    _, t = _read_only()
    with pytest.raises(BufferError):
        t.__dlpack__()
    with pytest.raises(BufferError):
        t.__dlpack__(max_version=(0, 8))


def test_read_only_tensor_versioned_export_into_numpy_is_read_only():
    a, t = _read_only()
    c = t.__dlpack__(max_version=(1, 0))
    assert is_capsule(c, "dltensor_versioned")
    out = np.from_dlpack(t)  # numpy >= 2.1 asks for a versioned capsule and honours READ_ONLY
    assert not out.flags.writeable
    assert ptr(out) == ptr(a)
    u = db.from_dlpack(c)
    assert u.is_read_only
    with pytest.raises(RuntimeError):
        u.fill_(0)
    assert a.tolist() == [1.0, 2.0, 3.0]


def test_read_only_tensor_copy_export_is_writeable():
    a, t = _read_only()
    out = np.from_dlpack(t, copy=True)
    assert out.flags.writeable
    out[0] = 100
    assert a[0] == 1.0


def test_read_only_numpy_array_imports_read_only():
    a, _ = _read_only()
    t = db.from_dlpack(a)
    assert t.is_read_only
    assert t.data_ptr() == ptr(a)
    with pytest.raises(RuntimeError):
        t.add_(1)
    assert a.tolist() == [1.0, 2.0, 3.0]


def test_odd_byte_strides_raise_buffer_error_on_export():
    buf = np.arange(40, dtype=np.uint8)
    v = np.lib.stride_tricks.as_strided(buf.view(np.int16)[:1], shape=(4, 3), strides=(5, 3))
    t = db.from_numpy(v)
    with pytest.raises(BufferError):
        t.__dlpack__()
    with pytest.raises(BufferError):
        t.__dlpack__(max_version=(1, 0))
    # a copy is contiguous and exports fine
    assert np.from_dlpack(t.contiguous()).tolist() == v.tolist()


@pytest.mark.parametrize("max_version", [None, (1, 0)], ids=["legacy", "versioned"])
def test_unconsumed_capsule_is_freed(no_leak, max_version):
    base = no_leak
    t = db.arange(100)
    c = t.__dlpack__(max_version=max_version)
    del t
    collect()
    assert db._core.live_storages() == base + 1  # the capsule holds the storage
    del c
    collect()
    assert db._core.live_storages() == base


@pytest.mark.parametrize("max_version", [None, (1, 0)], ids=["legacy", "versioned"])
def test_consumed_capsule_owner_lives_with_the_consumer(no_leak, max_version):
    base = no_leak
    c = db.arange(100).__dlpack__(max_version=max_version)
    a = np.from_dlpack(_CapsuleHolder(c))
    del c
    collect()
    assert db._core.live_storages() == base + 1
    assert a.sum() == sum(range(100))
    del a
    collect()
    assert db._core.live_storages() == base


class _CapsuleHolder:
    """Hands one pre-made capsule to a consumer through the protocol."""

    def __init__(self, capsule):
        self.capsule = capsule

    def __dlpack__(self, **kwargs):
        c, self.capsule = self.capsule, None
        return c

    def __dlpack_device__(self):
        return (1, 0)


def test_export_of_views_keeps_strides_and_offset():
    base = np.arange(24.0).reshape(4, 6)
    t = db.from_numpy(base)[1:, ::2]
    a = np.from_dlpack(t)
    assert ptr(a) == t.data_ptr() == ptr(base[1:, ::2])
    assert a.strides == base[1:, ::2].strides
    assert a.tolist() == base[1:, ::2].tolist()


def test_export_of_negative_strides():
    base = np.arange(5.0)
    t = db.from_numpy(base[::-1])
    a = np.from_dlpack(t)
    assert a.tolist() == [4.0, 3.0, 2.0, 1.0, 0.0]
    assert ptr(a) == ptr(base[::-1])


@pytest.mark.parametrize("shape", [(), (0,), (2, 0, 3)], ids=str)
def test_export_degenerate_shapes(shape):
    t = db.zeros(*shape) if shape else db.tensor(1.5)
    a = np.from_dlpack(t)
    assert a.shape == shape
    assert a.tolist() == t.tolist()


@pytest.mark.parametrize("minor", [0, 1, 2, 3])
def test_versioned_tensor_with_null_strides_reads_as_c_contiguous(minor):
    """NumPy and PyTorch read NULL strides as C-contiguous whatever the
    version; dlbridge too (dlpark alone refuses them from DLPack 1.2 on)."""
    import ctypes
    from dlpack_abi import DLDataType, DLDevice, DLManagedTensorVersioned, DLTensor, new_capsule

    buf = (ctypes.c_float * 6)(*range(6))
    shape = (ctypes.c_int64 * 2)(2, 3)
    m = DLManagedTensorVersioned()
    m.major, m.minor = 1, minor
    m.dl_tensor = DLTensor(ctypes.addressof(buf), DLDevice(1, 0), 2, DLDataType(2, 32, 1), shape, None, 0)
    t = db.from_dlpack(new_capsule(ctypes.addressof(m), b"dltensor_versioned", None))
    assert t.shape == (2, 3) and t.stride() == (3, 1) and t.is_contiguous()
    assert t.data_ptr() == ctypes.addressof(buf)
    buf[4] = 40.0
    assert t.numpy().tolist() == [[0.0, 1.0, 2.0], [3.0, 40.0, 5.0]]
    # The tensor reads m's deleter slot when it lets go, so it must go before
    # m (a frame frees its locals in order of definition; ASan catches this).
    del t


# --------------------------------------------------------------------------- negotiation with older producers


class _OldProducer:
    """A producer whose `__dlpack__` takes only the keywords in `accepts`,
    as producers predating DLPack 1.0 do; it records every request."""

    def __init__(self, array, accepts, device=(1, 0)):
        self.array, self.accepts, self.device, self.calls = array, accepts, device, []

    def __dlpack__(self, **kwargs):
        self.calls.append(kwargs)
        unknown = set(kwargs) - set(self.accepts)
        if unknown:
            raise TypeError(f"__dlpack__() got an unexpected keyword argument {unknown.pop()!r}")
        if self.device != (1, 0):
            raise ValueError("stop here: no CUDA memory to hand out")
        return self.array.__dlpack__()

    def __dlpack_device__(self):
        return self.device


@pytest.mark.parametrize("accepts", [("stream",), ()], ids=["stream-only", "bare"])
def test_from_dlpack_retries_without_the_keywords_a_producer_refuses(accepts):
    """ONNX Runtime's OrtValue and Warp's arrays take no max_version: the
    array API standard's consumers retry without it; so does dlbridge."""
    a = np.arange(6.0)
    p = _OldProducer(a, accepts)
    t = db.from_dlpack(p)
    assert t.data_ptr() == ptr(a) and t.tolist() == a.tolist()
    assert p.calls == [{"max_version": (1, 3)}, {}]
    assert np.from_dlpack(_OldProducer(a, accepts)).tolist() == a.tolist()  # NumPy does the same


def test_from_dlpack_asks_a_cuda_producer_for_its_stream_before_dropping_it():
    p = _OldProducer(np.arange(3.0), ("stream",), device=(2, 0))
    with pytest.raises(ValueError, match="stop here"):
        db.from_dlpack(p)
    assert p.calls == [{"max_version": (1, 3), "stream": 1}, {"stream": 1}]


def test_from_dlpack_gives_back_the_producers_own_error_unchanged():
    err = ValueError("the producer's own complaint")

    class Failing:
        def __dlpack__(self, **kwargs):
            raise err

        def __dlpack_device__(self):
            return (1, 0)

    with pytest.raises(ValueError) as info:
        db.from_dlpack(Failing())
    assert info.value is err


def test_from_dlpack_gives_back_the_last_type_error_when_every_form_fails():
    class Refusing:
        calls = 0

        def __dlpack__(self, **kwargs):
            Refusing.calls += 1
            raise TypeError(f"refused #{Refusing.calls}")

        def __dlpack_device__(self):
            return (1, 0)

    with pytest.raises(TypeError, match="refused #2"):
        db.from_dlpack(Refusing())
    assert Refusing.calls == 2


@pytest.mark.parametrize("make", ["onnxruntime", "warp"])
def test_from_dlpack_imports_producers_without_max_version(make):
    """The two real producers of the issue, zero-copy."""
    a = np.arange(6, dtype=np.float32)
    if make == "onnxruntime":
        ort = pytest.importorskip("onnxruntime")
        x = ort.OrtValue.ortvalue_from_numpy(a)
    else:
        wp = pytest.importorskip("warp")
        wp.config.quiet = True
        x = wp.array(a, dtype=wp.float32, device="cpu", copy=False)
    t = db.from_dlpack(x)
    assert t.tolist() == a.tolist()
    assert t.data_ptr() == np.from_dlpack(x).ctypes.data


# --------------------------------------------------------------------------- __dlpack__'s keyword types


@pytest.mark.parametrize("kwargs,exc", [
    ({"max_version": 1}, TypeError),
    ({"max_version": [1, 0]}, TypeError),
    ({"max_version": (1,)}, TypeError),
    ({"max_version": (1, 0, 0)}, TypeError),
    ({"max_version": ("a", "b")}, TypeError),
    ({"max_version": (1.0, 0)}, TypeError),
    ({"dl_device": 1}, TypeError),
    ({"dl_device": [1, 0]}, TypeError),
    ({"dl_device": (1,)}, TypeError),
    ({"dl_device": ("a", 0)}, TypeError),
    ({"copy": "no"}, ValueError),
    ({"copy": "yes"}, ValueError),
    ({"bogus": 1}, TypeError),
], ids=str)
def test_dlpack_refuses_wrongly_typed_keywords_as_numpy_does(kwargs, exc):
    with pytest.raises(exc):
        np.arange(3.0).__dlpack__(**kwargs)
    with pytest.raises(exc):
        db.arange(3.0).__dlpack__(**kwargs)


@pytest.mark.parametrize("copy", [0, 1, False, True, None, np.bool_(True)], ids=repr)
def test_dlpack_copy_takes_any_non_string_truth_value(copy):
    t = db.arange(3.0)
    u = db.from_dlpack(t.__dlpack__(copy=copy, max_version=(1, 0)))
    assert (u.data_ptr() == t.data_ptr()) == (not copy)


def _call_with_copy(f, copy):
    """One call site, so one constant tuple of keyword names for every call (bound
    methods and functools.partial pass it on as it is)."""
    return f(copy=copy)


def test_fast_entry_points_read_each_call_s_values_and_their_own_names():
    """__dlpack__ and from_dlpack remember the last tuple of keyword names they were called
    with: the values are still each call's own, and a tuple read for one entry point is
    not taken for the other's (copy is __dlpack__'s fourth keyword, from_dlpack's second)."""
    t = db.arange(3.0)
    copies = [True, False, True, None, False]

    def export(copy):
        return db.from_dlpack(_call_with_copy(t.__dlpack__, copy=copy)).data_ptr() == t.data_ptr()

    def import_(copy):
        return _call_with_copy(functools.partial(db.from_dlpack, t), copy=copy).data_ptr() == t.data_ptr()

    # Each alone (the names are found again), then taking turns.
    assert [export(c) for c in copies] == [not c for c in copies]
    assert [import_(c) for c in copies] == [not c for c in copies]
    assert [(export(c), import_(c)) for c in copies] == [(not c, not c) for c in copies]


def test_more_keyword_names_than_an_entry_point_takes():
    t = db.arange(3.0)
    names = dict(stream=None, max_version=None, dl_device=None, copy=None)
    with pytest.raises(TypeError, match="unexpected keyword argument 'bogus'"):
        t.__dlpack__(**names, bogus=1)
    with pytest.raises(TypeError, match="unexpected keyword argument 'bogus'"):
        db.from_dlpack(t, device=None, copy=None, bogus=1)
    with pytest.raises(TypeError, match="positional-only arguments passed as keyword arguments: 'x'"):
        db.from_dlpack(x=t)


def test_max_version_remembered_only_as_a_tuple_of_plain_ints():
    """__dlpack__ remembers the last max_version tuple of two plain ints (kept alive until
    another comes); any other tuple is read on every call and not kept, so reading it
    (its __index__) happens each time and releasing it (its __del__) is never delayed."""
    t = db.arange(3)
    plain = tuple([1, 2])  # built at run time: only this test holds it
    before = sys.getrefcount(plain)
    assert is_capsule(t.__dlpack__(max_version=plain), "dltensor_versioned")
    assert sys.getrefcount(plain) == before + 1  # remembered
    assert is_capsule(t.__dlpack__(max_version=(0, 5)), "dltensor")  # another one
    assert sys.getrefcount(plain) == before  # let go

    reads, released = [], []

    class Index:
        def __index__(self):
            reads.append(1)
            return 1

    class One(int):
        def __del__(self):
            released.append(1)

    odd = (Index(), 0)
    for _ in range(2):
        assert is_capsule(t.__dlpack__(max_version=odd), "dltensor_versioned")
    assert reads == [1, 1]
    assert is_capsule(t.__dlpack__(max_version=(One(1), 0)), "dltensor_versioned")
    assert released == [1]


def test_keyword_names_remembered_only_when_plain_str():
    """A call's keyword names may be str subclasses (from a ** dict): such names are not
    kept, and an ordinary call site's names are."""
    released = []

    class Name(str):
        def __del__(self):
            released.append(1)

    t = db.arange(3)
    c = t.__dlpack__(**{Name("max_version"): (1, 0)})
    assert is_capsule(c, "dltensor_versioned")
    collect()
    assert released == [1]


@pytest.mark.parametrize("dtype", ["float8_e4m3fn", "float8_e5m2", "float4_e2m1fn"])
def test_max_version_1_0_still_exports_the_newer_dtypes(dtype):
    """PyTorch asks for max_version=(1, 0) and reads the float8 codes that came with
    DLPack 1.1, so Python's export does not refuse them (C's dlb_export_max_version,
    whose caller states the header it was built with, does)."""
    t = db.ones(3).to(getattr(db, dtype))
    assert is_capsule(t.__dlpack__(max_version=(1, 0)), "dltensor_versioned")


def test_max_version_1_0_exports_every_dtype_of_dlpack_1_0():
    for name in ["bool", "uint8", "int64", "float16", "bfloat16", "float64", "complex128"]:
        t = db.ones(3).to(getattr(db, name))
        assert is_capsule(t.__dlpack__(max_version=(1, 0)), "dltensor_versioned")
