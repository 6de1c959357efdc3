"""Compare dlbridge's tensor formatting with real torch's repr.

The module is loaded by file path: the dlbridge package (a Rust extension) need
not be built for these tests.
"""

import contextlib
import importlib.util
import pathlib
import zlib
from unittest import mock

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import torch._tensor_str as torch_tensor_str  # noqa: E402

_PATH = pathlib.Path(__file__).resolve().parents[2] / "python" / "dlbridge" / "_formatting.py"
_spec = importlib.util.spec_from_file_location("dlbridge_formatting", _PATH)
fmt = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fmt)
format_tensor = fmt.format_tensor

FLOAT_DTYPES = ["float16", "bfloat16", "float32", "float64"]
COMPLEX_DTYPES = ["complex64", "complex128"]
INT_DTYPES = ["uint8", "int8", "int16", "int32", "int64", "uint16", "uint32", "uint64"]
ALL_DTYPES = ["bool"] + INT_DTYPES + FLOAT_DTYPES + COMPLEX_DTYPES

SHAPES = [
    (), (0,), (2, 0), (0, 3), (3, 0, 2), (1,), (5,), (7,), (3, 4), (2, 3, 4),
    (2, 1, 3, 2), (2, 2, 3, 15), (30,), (6, 25), (7, 7, 7), (1000,),
    # above the 1000-element threshold: summarized with "..."
    (1001,), (2000,), (40, 30), (11, 10, 10), (3, 400), (2, 2, 2, 200),
]
FLOAT_KINDS = ["randn", "ints", "tiny", "huge", "mixed", "special", "negzero", "zeros", "allnan", "wide", "extreme", "thresholds"]


def _float_values(kind, shape, rng):
    n = int(np.prod(shape))
    if kind == "randn":
        v = rng.standard_normal(n)
    elif kind == "ints":  # integral floats print as "3."
        v = rng.integers(-50, 50, n).astype(np.float64)
    elif kind == "tiny":  # min < 1e-4 -> scientific
        v = rng.standard_normal(n) * 1e-8
    elif kind == "huge":  # max > 1e8 -> scientific
        v = rng.standard_normal(n) * 1e10
    elif kind == "mixed":  # max/min > 1000 -> scientific
        v = rng.standard_normal(n) * 10.0 ** rng.integers(-3, 5, n)
    elif kind == "special":
        v = rng.standard_normal(n)
        v[rng.random(n) < 0.3] = rng.choice([np.nan, np.inf, -np.inf, -0.0, 0.0])
        if n >= 4:
            v[:4] = [np.nan, np.inf, -np.inf, -0.0]
    elif kind == "negzero":
        v = np.where(rng.random(n) < 0.5, -0.0, rng.integers(-5, 5, n).astype(np.float64))
    elif kind == "zeros":
        v = np.zeros(n)
    elif kind == "allnan":
        v = np.where(rng.random(n) < 0.5, np.nan, -np.inf)
    elif kind == "wide":
        v = rng.standard_normal(n) * 900.0
    elif kind == "extreme":  # max/min overflows to inf; float32/16 round to inf or 0
        v = rng.choice([1e308, -5e-324, 1e-300, 3.0], n)
    elif kind == "thresholds":  # pairs just inside/outside each sci-mode threshold
        pairs = [(5e-5, 0.01), (2e-4, 0.1), (2e7, 9e7), (1e6, 1.5e8), (1.0, 999.0), (1.0, 1001.0)]
        v = rng.choice(pairs[rng.integers(len(pairs))], n) * rng.choice([-1.0, 1.0], n)
    else:
        raise AssertionError(kind)
    return v.reshape(shape)


def make_tensor(dtype_name, shape, kind="randn", seed=0):
    """A torch tensor of that dtype, and the numpy array format_tensor receives."""
    rng = np.random.default_rng(seed)
    if dtype_name == "bool":
        t = torch.from_numpy(np.asarray(rng.random(shape) < 0.5))
    elif dtype_name in INT_DTYPES:
        info = np.iinfo(dtype_name)
        lo, hi = (info.min, info.max) if kind == "full" else (max(info.min, -120), 120)
        t = torch.from_numpy(np.asarray(rng.integers(lo, hi, shape, dtype=dtype_name, endpoint=True)))
    elif dtype_name in COMPLEX_DTYPES:
        v = np.empty(shape, dtype=dtype_name)
        with np.errstate(over="ignore"):
            v.real, v.imag = _float_values(kind, shape, rng), _float_values(kind, shape, rng)
        t = torch.from_numpy(v)
    else:
        with np.errstate(over="ignore"):
            v = np.asarray(_float_values(kind, shape, rng), dtype=np.float32)
        t = torch.from_numpy(v).to(getattr(torch, dtype_name))
    arr = t.float().numpy() if dtype_name == "bfloat16" else t.numpy()
    return t, arr


@contextlib.contextmanager
def _torch_reports_device(device):
    """Make torch's own repr print a CPU tensor as if it lived on `device`.

    torch here has no GPU.  Telling _str_intern that the default device is not
    'cpu' makes it add "device='cpu'" at the suffix position torch really uses;
    renaming that suffix before torch's _add_suffixes wraps the line keeps the
    line-width rule exact for the (longer) 'cuda:N' string.
    """
    orig = torch_tensor_str._add_suffixes

    def patched(tensor_str, suffixes, indent, force_newline):
        suffixes = [f"device='{device}'" if s == "device='cpu'" else s for s in suffixes]
        return orig(tensor_str, suffixes, indent, force_newline)

    with mock.patch.object(torch_tensor_str, "_add_suffixes", patched), mock.patch.object(
        torch._C, "_get_default_device", lambda: "meta"
    ):
        yield


def expected_repr(t, device=None):
    """torch's repr of t, renamed to dlbridge (optionally shown on a cuda device)."""
    with _torch_reports_device(device) if device else contextlib.nullcontext():
        out = repr(t)
    if device:
        assert f"device='{device}'" in out
    return out.replace("torch.", "dlbridge.")


def _cases():
    for dtype in ALL_DTYPES:
        if dtype in FLOAT_DTYPES or dtype in COMPLEX_DTYPES:
            kinds = FLOAT_KINDS
        elif dtype in INT_DTYPES:
            kinds = ["small", "full"]
        else:
            kinds = ["bool"]
        for kind in kinds:
            for shape in SHAPES:
                yield pytest.param(dtype, shape, kind, id=f"{dtype}-{kind}-{'x'.join(map(str, shape)) or 'scalar'}")


@pytest.mark.parametrize("dtype_name,shape,kind", list(_cases()))
def test_matches_torch(dtype_name, shape, kind):
    t, arr = make_tensor(dtype_name, shape, kind, seed=zlib.crc32(f"{dtype_name}{shape}{kind}".encode()))
    assert format_tensor(arr, dtype_name, "cpu") == expected_repr(t)


@pytest.mark.parametrize("dtype_name", FLOAT_DTYPES + COMPLEX_DTYPES)
@pytest.mark.parametrize("shape", [(), (0,), (2, 0), (3,), (4, 5), (2000,), (2, 3, 4)])
@pytest.mark.parametrize("kind", ["randn", "ints", "tiny"])
def test_requires_grad(dtype_name, shape, kind):
    t, arr = make_tensor(dtype_name, shape, kind)
    t.requires_grad_(True)
    assert format_tensor(arr, dtype_name, "cpu", requires_grad=True) == expected_repr(t)


# torch allows requires_grad only on float and complex tensors.
_DTYPE_GRAD = [(d, False) for d in ALL_DTYPES] + [(d, True) for d in FLOAT_DTYPES + COMPLEX_DTYPES]


@pytest.mark.parametrize("dtype_name,requires_grad", _DTYPE_GRAD)
@pytest.mark.parametrize("shape", [(), (0,), (2, 0), (3,), (4, 5), (12,), (2000,), (2, 3, 4)])
@pytest.mark.parametrize("device", ["cuda:0", "cuda:1", "cuda:12"])
def test_device_suffix(dtype_name, requires_grad, shape, device):
    t, arr = make_tensor(dtype_name, shape)
    t.requires_grad_(requires_grad)
    got = format_tensor(arr, dtype_name, device, requires_grad=requires_grad)
    assert got == expected_repr(t, device=device)
    assert f"device='{device}'" in got


def test_suffix_order_explicit():
    assert (
        format_tensor(np.array([1.5, 2.0]), "float64", "cuda:0", requires_grad=True)
        == "tensor([1.5000, 2.0000], device='cuda:0', dtype=dlbridge.float64,\n       requires_grad=True)"
    )
    assert format_tensor(np.zeros((2, 0), np.int64), "int64", "cuda:1") == (
        "tensor([], device='cuda:1', size=(2, 0), dtype=dlbridge.int64)"
    )


@pytest.mark.parametrize(
    "arr,dtype_name,expected",
    [
        (np.arange(3, dtype=np.float64), "float64", "tensor([0., 1., 2.], dtype=dlbridge.float64)"),
        (np.array([[0.7374, 0.2935]], np.float32), "float32", "tensor([[0.7374, 0.2935]])"),
        (np.array(3.0, np.float32), "float32", "tensor(3.)"),
        (np.array(-0.0, np.float32), "float32", "tensor(-0.)"),
        (np.array(np.nan, np.float32), "float32", "tensor(nan)"),
        (np.zeros(0, np.float32), "float32", "tensor([])"),
        (np.zeros(0, np.float64), "float64", "tensor([], dtype=dlbridge.float64)"),
        (np.zeros(0, np.int64), "int64", "tensor([], dtype=dlbridge.int64)"),
        (np.zeros((2, 0), np.float32), "float32", "tensor([], size=(2, 0))"),
        (np.array([True, False]), "bool", "tensor([ True, False])"),
        (np.array([1e-8, 1.0, 1e10], np.float32), "float32", "tensor([1.0000e-08, 1.0000e+00, 1.0000e+10])"),
        (np.array([complex(1, 2.5), complex(-0.5, -0.0)], np.complex64), "complex64",
         "tensor([ 1.0000+2.5000j, -0.5000-0.0000j])"),
        (np.array([complex(1, 2), complex(-0.5, -0.0)], np.complex64), "complex64",
         "tensor([ 1.0000+2.j, -0.5000-0.j])"),
        (np.array([0.1, 0.2], np.float32), "bfloat16", "tensor([0.1001, 0.2002], dtype=dlbridge.bfloat16)"),
    ],
)
def test_known_strings(arr, dtype_name, expected):
    if dtype_name == "bfloat16":
        arr = torch.from_numpy(arr).bfloat16().float().numpy()
    assert format_tensor(arr, dtype_name, "cpu") == expected


@pytest.mark.parametrize("dtype_name", ALL_DTYPES)
@pytest.mark.parametrize(
    "view",
    [lambda a: a.T, lambda a: a[::-1], lambda a: a[:, ::2], lambda a: a[1:, 1:], lambda a: a.T[::-2]],
)
@pytest.mark.parametrize("shape", [(4, 6), (50, 40)])
def test_strided_input(dtype_name, view, shape):
    _, arr = make_tensor(dtype_name, shape)
    arr = view(arr)
    t = torch.from_numpy(np.ascontiguousarray(arr))
    if dtype_name == "bfloat16":
        t = t.bfloat16()
    assert format_tensor(arr, dtype_name, "cpu") == expected_repr(t)


def test_suffix_wrapping_follows_torch_names():
    """Line breaks before suffixes are decided on torch's names, as with repr().replace().

    "tensor([...]" is 55 characters: with ", dtype=torch.float64" torch's
    80-column rule keeps the suffix on the line; applied to the 3-character
    longer ", dtype=dlbridge.float64" the same rule would wrap it.
    """
    arr = np.array([1.5, 2.25, 3.0, 4.0, 5.0, 6.0])
    got = format_tensor(arr, "float64", "cpu")
    assert got == repr(torch.from_numpy(arr)).replace("torch.", "dlbridge.")
    assert "\n" not in got
    body = got[: got.index(", dtype")]
    assert "\n" in torch_tensor_str._add_suffixes(body, ["dtype=dlbridge.float64"], 7, False)


def test_input_coercion_and_errors():
    # uint8 holding a bool tensor's bytes still prints as bool.
    assert format_tensor(np.array([1, 0], np.uint8), "bool", "cpu") == "tensor([ True, False])"
    with pytest.raises(ValueError):
        format_tensor(np.zeros(2), "float8", "cpu")
