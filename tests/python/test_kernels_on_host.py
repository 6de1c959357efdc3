"""kernels/*.cu compiled for the CPU (tests/kernels/host_emulation.h) and
checked against NumPy: arithmetic and its wrap-around, bool rules, every cast
pair, 16-byte and scalar paths and their tails, strided and broadcast
indexing, fills, pow, comparisons, abs, reductions over any dims through each
kernel path, and rand. This needs no GPU; the same sources also go
through NVRTC in test_cuda_nogpu.py, and run on a real device in
gpu/test_kernels.py.

Each kernel call runs one CUDA thread (grid-stride loops let one thread do
everything); several tests also split the work over emulated blocks and
threads, to check the grid-stride arithmetic.
"""

import ctypes
import itertools
import shutil
import subprocess
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
CXX = shutil.which("g++") or shutil.which("c++") or shutil.which("clang++")
pytestmark = pytest.mark.skipif(CXX is None, reason="no C++ compiler to build the host emulation")

MAX_DIMS = 16
TAGS = {
    "b8": np.bool_, "u8": np.uint8, "i8": np.int8, "i16": np.int16, "i32": np.int32,
    "i64": np.int64, "u16": np.uint16, "u32": np.uint32, "u64": np.uint64,
    "f16": np.float16, "bf16": ml_dtypes.bfloat16, "f32": np.float32, "f64": np.float64,
}
FLOATS = ["f16", "bf16", "f32", "f64"]
INTS = ["u8", "i8", "i16", "i32", "i64", "u16", "u32", "u64"]


class Indexer(ctypes.Structure):
    _fields_ = [
        ("ndim", ctypes.c_int),
        ("pad", ctypes.c_int),
        ("shape", ctypes.c_int64 * MAX_DIMS),
        ("strides", (ctypes.c_int64 * MAX_DIMS) * 3),
    ]


def indexer(shape, *element_strides):
    ix = Indexer()
    ix.ndim = len(shape)
    for d, n in enumerate(shape):
        ix.shape[d] = n
    for k, strides in enumerate(element_strides):
        for d, s in enumerate(strides):
            ix.strides[k][d] = s
    return ix


def estrides(a):
    return [s // a.itemsize for s in a.strides]


class W16(ctypes.Structure):
    _fields_ = [("lo", ctypes.c_uint64), ("hi", ctypes.c_uint64)]


# The by-value scalar of the elementwise kernels travels in the compute type
# (Tr<T>::C): float for float16/bfloat16, int/unsigned for narrow integers.
COMPUTE_CTYPE = {
    "b8": ctypes.c_bool, "u8": ctypes.c_uint32, "i8": ctypes.c_int32, "i16": ctypes.c_int32,
    "i32": ctypes.c_int32, "i64": ctypes.c_int64, "u16": ctypes.c_uint32, "u32": ctypes.c_uint32,
    "u64": ctypes.c_uint64, "f16": ctypes.c_float, "bf16": ctypes.c_float, "f32": ctypes.c_float,
    "f64": ctypes.c_double,
}


def scalar_arg(tag, value):
    """The kernel's by-value scalar: the value in its dtype, widened to the compute type
    (float16/bfloat16 values pass as the float32 they are given in, unrounded)."""
    if tag in ("f16", "bf16"):
        return ctypes.c_float(float(value))
    return COMPUTE_CTYPE[tag](np.array(value).astype(TAGS[tag]).item())


@pytest.fixture(scope="session")
def lib(tmp_path_factory):
    out = tmp_path_factory.mktemp("kernels")
    libs = {}
    for cu in sorted((ROOT / "kernels").glob("*.cu")):
        so = out / f"{cu.stem}.so"
        subprocess.run(
            [CXX, "-std=c++17", "-O1", "-fPIC", "-shared", "-w", "-x", "c++",
             "-include", str(ROOT / "tests/kernels/host_emulation.h"), "-I", str(ROOT / "kernels"),
             str(cu), "-o", str(so)],
            check=True,
        )
        libs[cu.stem] = ctypes.CDLL(str(so))
    return libs


def ptr(a):
    return ctypes.c_void_p(a.ctypes.data)


NULL = ctypes.c_void_p(0)


def run(lib, name, args, grid=(1, 1)):
    """Runs kernel `name` as `grid` = (blocks, threads per block), thread by thread."""
    f = getattr(lib, name)
    f.restype = None
    blocks, threads = grid
    for b in range(blocks):
        for t in range(threads):
            lib.dlb_emu_set(t, b, threads, blocks)
            f(*args)
    lib.dlb_emu_set(0, 0, 1, 1)


def random_array(tag, n, rng, low=None, high=None, nonzero=False):
    dt = TAGS[tag]
    if tag == "b8":
        return rng.integers(0, 2, n).astype(np.bool_)
    if tag in FLOATS:
        a = rng.uniform(-100 if low is None else low, 100 if high is None else high, n)
        if nonzero:
            a[np.abs(a) < 0.5] = 1.5
        return a.astype(dt)
    info = np.iinfo(dt)
    lo = info.min if low is None else low
    hi = info.max if high is None else high
    a = rng.integers(lo, hi, n, dtype=np.int64 if dt != np.uint64 else np.uint64, endpoint=True)
    if nonzero:
        a[a == 0] = 1
    return a.astype(dt)


def reference(op, x, y):
    """NumPy's same-dtype result (integers wrap; bool add = or, mul = and)."""
    if x.dtype == np.bool_:
        return {"add": np.logical_or, "mul": np.logical_and, **MINMAX_BOOL, **BITWISE}[op](x, y)
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        if op in ROUNDING:
            # float16 and bfloat16 compute in float32 and round once, as the kernels.
            wide = np.float32 if x.dtype in (np.float16, ml_dtypes.bfloat16) else x.dtype
            return ROUNDING[op](x.astype(wide), y.astype(wide)).astype(x.dtype)
        return {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.true_divide,
                **MINMAX, **BITWISE}[op](x, y).astype(x.dtype)


def trunc_divide(x, y):
    """Division rounded toward zero: floats' trunc(x / y); integers exactly
    (x - fmod(x, y) is a multiple of y, nearer zero than x), wrapping MIN / -1."""
    if x.dtype.kind == "f":
        return np.trunc(x / y)
    return np.floor_divide(x - np.fmod(x, y), y)


# The generated binary rows of src/backend.rs with a kernel: NumPy's function (NaN wins, as torch's).
MINMAX = {"maximum": np.maximum, "minimum": np.minimum}
MINMAX_BOOL = {"maximum": np.logical_or, "minimum": np.logical_and}
# The bitwise rows: integers and bools only.
BITWISE = {"bitwise_and": np.bitwise_and, "bitwise_or": np.bitwise_or, "bitwise_xor": np.bitwise_xor}
# The rounding divisions and remainders: integers and floats (kernel stems, as the rows name them).
ROUNDING = {"div_floor": np.floor_divide, "div_trunc": trunc_divide, "remainder": np.remainder, "fmod": np.fmod}


def ops_for(tag):
    if tag == "b8":
        return ["add", "mul", *MINMAX, *BITWISE]
    return ["add", "sub", "mul", *MINMAX, *ROUNDING] + (["div"] if tag in FLOATS else [*BITWISE])


BINARY_CASES = [(tag, op) for tag in TAGS for op in ops_for(tag)]


def assert_same(got, want):
    if want.dtype.kind == "f" or want.dtype == ml_dtypes.bfloat16:
        np.testing.assert_array_equal(got.astype(np.float64), want.astype(np.float64))
    else:
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("tag,op", BINARY_CASES)
@pytest.mark.parametrize("n", [1, 7, 17, 1003])
def test_binary_contiguous_tensors_and_scalars(lib, tag, op, n):
    rng = np.random.default_rng([n, len(tag), len(op)])
    a = random_array(tag, n, rng, nonzero=op in ROUNDING)  # a divisor too, with a number on the left
    b = random_array(tag, n, rng, nonzero=True)
    s = random_array(tag, 1, rng, nonzero=True)[0]
    name = f"dlb_{op}_contig_{tag}"
    for wide in (0, 1):
        for mode, want in ((0, reference(op, a, b)), (1, reference(op, a, np.full(n, s))),
                           (2, reference(op, np.full(n, s), a))):
            out = np.full(n, 123, dtype=TAGS[tag])  # poisoned
            args = [ptr(out), ptr(a), ptr(b), scalar_arg(tag, s), ctypes.c_int(mode), ctypes.c_int64(n),
                    ctypes.c_int(wide)]
            run(lib["elementwise"], name, args, grid=(3, 4) if n > 100 else (1, 1))
            assert_same(out, want)


@pytest.mark.parametrize("op", list(MINMAX))
@pytest.mark.parametrize("tag", FLOATS)
def test_minmax_kernels_let_nan_win_from_either_side(lib, op, tag):
    a = np.array([np.nan, 1.0, np.nan, -np.inf, 2.0, np.inf], dtype=np.float64).astype(TAGS[tag])
    b = np.array([1.0, np.nan, np.nan, np.inf, -3.0, 5.0], dtype=np.float64).astype(TAGS[tag])
    out = np.zeros(a.size, dtype=TAGS[tag])
    args = [ptr(out), ptr(a), ptr(b), scalar_arg(tag, 0), ctypes.c_int(0), ctypes.c_int64(a.size), ctypes.c_int(0)]
    run(lib["elementwise"], f"dlb_{op}_contig_{tag}", args)
    assert_same(out, MINMAX[op](a, b))


# PyTorch's results (2.x, CPU) for x // y, x % y, fmod and trunc division at
# the floats' edges: a zero divisor, NaN, infinity, a negative zero.
FLOAT_EDGES_X = [7.5, -7.5, 7.5, -7.5, 1.0, np.nan, np.inf, -0.0, 1e30, -5.0]
FLOAT_EDGES_Y = [2.0, 2.0, -2.0, -2.0, 0.0, 1.0, 2.0, 3.0, np.inf, np.inf]
FLOAT_EDGES = {
    "div_floor": [3.0, -4.0, -4.0, 3.0, np.inf, np.nan, np.nan, -0.0, 0.0, -1.0],
    "div_trunc": [3.0, -3.0, -3.0, 3.0, np.inf, np.nan, np.inf, -0.0, 0.0, -0.0],
    "remainder": [1.5, 0.5, -0.5, -1.5, np.nan, np.nan, np.nan, -0.0, 1e30, np.inf],
    "fmod": [1.5, -1.5, 1.5, -1.5, np.nan, np.nan, np.nan, -0.0, 1e30, -5.0],
}


@pytest.mark.parametrize("op", list(ROUNDING))
@pytest.mark.parametrize("tag", ["f32", "f64"])
def test_rounding_kernels_at_the_float_edges(lib, op, tag):
    a = np.array(FLOAT_EDGES_X, dtype=TAGS[tag])
    b = np.array(FLOAT_EDGES_Y, dtype=TAGS[tag])
    want = np.array(FLOAT_EDGES[op], dtype=TAGS[tag])
    out = np.zeros(a.size, dtype=TAGS[tag])
    args = [ptr(out), ptr(a), ptr(b), scalar_arg(tag, 0), ctypes.c_int(0), ctypes.c_int64(a.size), ctypes.c_int(0)]
    run(lib["elementwise"], f"dlb_{op}_contig_{tag}", args)
    np.testing.assert_array_equal(out, want)
    real = ~np.isnan(want)  # the zeros' signs too (a NaN's sign means nothing)
    np.testing.assert_array_equal(np.signbit(out[real]), np.signbit(want[real]))


@pytest.mark.parametrize("op", list(ROUNDING))
@pytest.mark.parametrize("tag", ["i8", "i16", "i32", "i64"])
def test_rounding_kernels_wrap_the_most_negative_integer(lib, op, tag):
    info = np.iinfo(TAGS[tag])
    a = np.array([info.min, info.min, info.max, -7, 7, -7, 7, 0, info.min], dtype=TAGS[tag])
    b = np.array([-1, 1, -1, 2, -2, -2, 2, 5, 2], dtype=TAGS[tag])
    out = np.zeros(a.size, dtype=TAGS[tag])
    args = [ptr(out), ptr(a), ptr(b), scalar_arg(tag, 0), ctypes.c_int(0), ctypes.c_int64(a.size), ctypes.c_int(0)]
    run(lib["elementwise"], f"dlb_{op}_contig_{tag}", args)
    with np.errstate(over="ignore"):
        want = reference(op, a, b)  # MIN // -1 wraps to MIN, MIN % -1 is 0
    assert want[0] == (info.min if op.startswith("div") else 0)
    np.testing.assert_array_equal(out, want)


def test_binary_wide_path_leaves_no_tail_behind(lib):
    # n = 16k + 5 float32: four 16-byte packs per 16 elements, then a 5-element tail.
    n = 16 * 9 + 5
    a = np.arange(n, dtype=np.float32)
    out = np.zeros(n, dtype=np.float32)
    args = [ptr(out), ptr(a), ptr(a), scalar_arg("f32", 0.5), ctypes.c_int(1), ctypes.c_int64(n), ctypes.c_int(1)]
    run(lib["elementwise"], "dlb_mul_contig_f32", args, grid=(2, 3))
    np.testing.assert_array_equal(out, a * 0.5)


@pytest.mark.parametrize("tag", ["i32", "u8", "f64", "bf16", "b8"])
def test_binary_strided_broadcasts_into_a_view(lib, tag):
    rng = np.random.default_rng(5)
    a = random_array(tag, 3, rng).reshape(3, 1)  # broadcast along columns
    b = random_array(tag, 4, rng, nonzero=True)  # broadcast along rows
    base = np.full((3, 8), 77, dtype=TAGS[tag])
    out = base[:, ::2]  # a strided destination: odd columns must stay 77
    op = "add" if tag == "b8" else "mul"
    ix = indexer((3, 4), estrides(out), [estrides(a)[0], 0], [0, 1])
    args = [ptr(out), ptr(a), ptr(b), scalar_arg(tag, 0), ctypes.c_int(0), ctypes.c_int64(12), ix]
    run(lib["elementwise"], f"dlb_{op}_strided_{tag}", args, grid=(2, 2))
    assert_same(out, reference(op, np.broadcast_to(a, (3, 4)), np.broadcast_to(b, (3, 4))))
    untouched = np.full((3, 4), 77, dtype=TAGS[tag])
    assert_same(base[:, 1::2], untouched)


def test_binary_strided_in_place_on_a_transposed_view(lib):
    x = np.arange(12, dtype=np.int64).reshape(3, 4)
    t = x.T  # (4, 3), strides (1, 4) in elements
    ix = indexer(t.shape, estrides(t), estrides(t), [0, 0])
    args = [ptr(t), ptr(t), ctypes.c_void_p(0), scalar_arg("i64", 10), ctypes.c_int(2), ctypes.c_int64(12), ix]
    run(lib["elementwise"], "dlb_sub_strided_i64", args)  # t = 10 - t
    np.testing.assert_array_equal(x, 10 - np.arange(12).reshape(3, 4))


@pytest.mark.parametrize("tag", ["f16", "bf16"])
def test_half_types_take_the_scalar_unrounded_and_round_once(lib, tag):
    # PyTorch computes float16/bfloat16 with a Python number in float32: 0.1 is not
    # rounded to the tensor's dtype first, so the result is rounded only once.
    a = np.arange(1, 2049).astype(TAGS[tag])
    out = np.zeros_like(a)
    args = [ptr(out), ptr(a), ptr(a), scalar_arg(tag, 0.1), ctypes.c_int(1), ctypes.c_int64(a.size), ctypes.c_int(1)]
    run(lib["elementwise"], f"dlb_mul_contig_{tag}", args)
    want = (a.astype(np.float32) * np.float32(0.1)).astype(TAGS[tag])
    np.testing.assert_array_equal(out.astype(np.float32), want.astype(np.float32))
    import torch
    t = torch.from_numpy(a.astype(np.float32)).to(getattr(torch, {"f16": "float16", "bf16": "bfloat16"}[tag]))
    np.testing.assert_array_equal(out.astype(np.float32), (t * 0.1).float().numpy())


def test_integer_arithmetic_wraps(lib):
    a = np.array([2**31 - 1, -(2**31), 2**30], dtype=np.int32)
    out = np.zeros(3, dtype=np.int32)
    args = [ptr(out), ptr(a), ptr(a), scalar_arg("i32", 2), ctypes.c_int(1), ctypes.c_int64(3), ctypes.c_int(0)]
    run(lib["elementwise"], "dlb_mul_contig_i32", args)
    np.testing.assert_array_equal(out, (a.astype(np.int64) * 2).astype(np.int32))
    # Negation is x * -1; for uint8 that wraps like PyTorch (-1 as uint8 is 255).
    u = np.array([0, 1, 200], dtype=np.uint8)
    uo = np.zeros(3, dtype=np.uint8)
    args = [ptr(uo), ptr(u), ptr(u), scalar_arg("u8", 255), ctypes.c_int(1), ctypes.c_int64(3), ctypes.c_int(0)]
    run(lib["elementwise"], "dlb_mul_contig_u8", args)
    np.testing.assert_array_equal(uo, np.array([0, 255, 56], dtype=np.uint8))


def cast_values(src, dst):
    """Values exactly meaningful in both dtypes (NumPy and C++ agree on them)."""
    s, d = TAGS[src], TAGS[dst]
    if src == "b8" or dst == "b8" and src not in FLOATS:
        v = np.array([0, 1, 1, 0, 1, 3, 0, 5], dtype=np.float64) if src != "b8" else np.array([0, 1, 1, 0, 1, 1, 0, 1])
    elif src in FLOATS and dst not in FLOATS:
        lo = 0 if np.issubdtype(d, np.unsignedinteger) or dst == "b8" else -100
        v = np.array([lo, 0, 1.5, 2.75, 99.25, 100, 7.5, 63.875])
    else:
        signed = not (np.issubdtype(s, np.unsignedinteger) or np.issubdtype(d, np.unsignedinteger))
        v = np.array([0, 1, 2, 100, 127, 5, 64, 99]) * (np.array([1, -1] * 4) if signed else 1)
    return v.astype(s)


@pytest.mark.parametrize("src,dst", list(itertools.product(TAGS, TAGS)))
def test_every_cast_pair(lib, src, dst):
    v = cast_values(src, dst)
    x = np.empty(16, dtype=TAGS[src])
    x[::2] = v  # a strided source
    src_view = x[::2]
    out = np.full(8, 42, dtype=TAGS[dst])
    ix = indexer((8,), [1], estrides(src_view))
    run(lib["cast"], f"dlb_cast_{src}_{dst}", [ptr(out), ptr(src_view), ctypes.c_int64(8), ix])
    with np.errstate(invalid="ignore"):
        want = src_view.astype(np.float64).astype(TAGS[dst]) if src in ("f16", "bf16") else src_view.astype(TAGS[dst])
    assert_same(out, want)


def test_bfloat16_and_half_round_to_nearest_even(lib):
    x = np.array([1.0, 1.00390625, 1.01171875, 65519.0, 65520.0, 1e-8, -0.0, np.inf, np.nan], dtype=np.float32)
    ix = indexer((x.size,), [1], [1])
    for tag, dt in (("bf16", ml_dtypes.bfloat16), ("f16", np.float16)):
        out = np.zeros(x.size, dtype=dt)
        run(lib["cast"], f"dlb_cast_f32_{tag}", [ptr(out), ptr(x), ctypes.c_int64(x.size), ix])
        with np.errstate(over="ignore"):
            want = x.astype(dt)
        np.testing.assert_array_equal(out.view(np.uint16)[:-1], want.view(np.uint16)[:-1])
        assert np.isnan(out[-1].astype(np.float32))


@pytest.mark.parametrize("width,dt", [(1, np.uint8), (2, np.uint16), (4, np.float32), (8, np.int64),
                                      (16, np.complex128)])
def test_copy_strided_and_fill(lib, width, dt):
    x = (np.arange(24) + 1j * (np.arange(24) % 5)).astype(dt) if dt == np.complex128 else np.arange(24).astype(dt)
    src = x.reshape(4, 6).T  # non-contiguous source
    out = np.zeros((6, 4), dtype=dt)
    ix = indexer(out.shape, estrides(out), estrides(src))
    run(lib["copy"], f"dlb_copy_strided_w{width}", [ptr(out), ptr(src), ctypes.c_int64(24), ix], grid=(2, 3))
    np.testing.assert_array_equal(out, src)

    value = np.array(7 + 2j if dt == np.complex128 else 7, dtype=dt)
    raw = value.view({1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[width]) if width < 16 else None
    arg = W16(*(int(w) for w in value.reshape(1).view(np.uint64))) if width == 16 else {1: ctypes.c_uint8, 2: ctypes.c_uint16,
                                                           4: ctypes.c_uint32, 8: ctypes.c_uint64}[width](int(raw))
    for n in (1, 5, 37):
        buf = np.zeros(n + 3, dtype=dt)
        run(lib["copy"], f"dlb_fill_contig_w{width}", [ptr(buf), arg, ctypes.c_int64(n), ctypes.c_int(1)])
        np.testing.assert_array_equal(buf[:n], np.full(n, value))
        assert (buf[n:] == 0).all()
    grid = np.zeros((3, 8), dtype=dt)
    view = grid[:, 1::3]
    ix = indexer(view.shape, estrides(view))
    run(lib["copy"], f"dlb_fill_strided_w{width}", [ptr(view), arg, ctypes.c_int64(view.size), ix])
    want = np.zeros((3, 8), dtype=dt)
    want[:, 1::3] = value
    np.testing.assert_array_equal(grid, want)


class Rows(ctypes.Structure):
    """struct Rows of kernels/reduce.cu (src/cuda/kernels/reduce.rs fills it)."""
    _fields_ = [("rows", ctypes.c_int64), ("run", ctypes.c_int64), ("elem_stride", ctypes.c_int64),
                ("splits", ctypes.c_int64), ("chunk", ctypes.c_int64)]



@pytest.mark.parametrize("tag", list(TAGS))
@pytest.mark.parametrize("n", [0, 1, 13, 4099])
def test_sum_and_mean(lib, tag, n):
    """The full sum of a contiguous tensor: dlb_sum_partial_* (a share per block), then
    dlb_reduce_final_* folds the partials and rounds (a mean: the sum divided in the
    dtype's compute type, as cpu/reduce.rs does)."""
    rng = np.random.default_rng(n)
    x = random_array(tag, n, rng, low=0 if tag not in FLOATS else -4, high=100 if tag not in FLOATS else 4)
    floating = tag in FLOATS
    blocks = 5
    partial = np.full(blocks, 999, dtype=np.int64)  # 8-byte slots: float64 or int64 sums
    for wide in (0, 1):
        run(lib["reduce"], f"dlb_sum_partial_{tag}", [ptr(x), ctypes.c_int64(n), ptr(partial), ctypes.c_int(wide)],
            grid=(blocks, 1))
        for op in ("sum", "mean") if floating else ("sum",):
            out = np.zeros(1, dtype=TAGS[tag] if floating else np.int64)
            g = Rows(1, n, 1, blocks, -(-n // blocks))
            run(lib["reduce"], f"dlb_reduce_final_{op}_{tag}", [ptr(x), indexer(()), g, ptr(partial), ptr(out), NULL])
            if not floating:
                assert out[0] == x.astype(np.int64).sum()
                continue
            exact = x.astype(np.float64).sum()
            with np.errstate(invalid="ignore", divide="ignore"):
                want = cpu_round(exact, tag) if op == "sum" else mean_reference(exact, n, tag)
            np.testing.assert_allclose(out.astype(np.float64)[0], np.float64(want),
                                       rtol=1e-2 if tag in ("f16", "bf16") else 1e-6)


@pytest.mark.parametrize("tag", FLOATS)
def test_rand_is_uniform_reproducible_and_below_one(lib, tag):
    n = 20000
    a = np.zeros(n, dtype=TAGS[tag])
    b = np.zeros(n, dtype=TAGS[tag])
    c = np.zeros(n, dtype=TAGS[tag])
    run(lib["random"], f"dlb_rand_{tag}", [ptr(a), ctypes.c_int64(n), ctypes.c_uint64(42), ctypes.c_uint64(0)])
    run(lib["random"], f"dlb_rand_{tag}", [ptr(b), ctypes.c_int64(n), ctypes.c_uint64(42), ctypes.c_uint64(0)],
        grid=(3, 5))
    run(lib["random"], f"dlb_rand_{tag}", [ptr(c), ctypes.c_int64(n), ctypes.c_uint64(43), ctypes.c_uint64(0)])
    f = a.astype(np.float64)
    assert (f >= 0).all() and (f < 1).all()
    assert abs(f.mean() - 0.5) < 0.02 and abs(f.var() - 1 / 12) < 0.01
    np.testing.assert_array_equal(a.astype(np.float64), b.astype(np.float64))  # launch shape doesn't matter
    assert (a.astype(np.float64) != c.astype(np.float64)).mean() > 0.5


@pytest.mark.parametrize("src", ["f32", "f64"])
@pytest.mark.parametrize("dst", INTS)
def test_float_to_integer_casts_wrap_through_int64_like_the_cpu_backend(lib, src, dst):
    import dlbridge as db

    v = np.array([-1.0, -200.0, 300.0, 3e9, -3e9, 2.5e10, 70000.7, -70000.2], dtype=TAGS[src])
    if dst == "u64":
        v = np.concatenate([v, np.array([1.5e19], dtype=TAGS[src])])
    out = np.zeros(v.size, dtype=TAGS[dst])
    ix = indexer((v.size,), [1], [1])
    run(lib["cast"], f"dlb_cast_{src}_{dst}", [ptr(out), ptr(v), ctypes.c_int64(v.size), ix])
    with np.errstate(invalid="ignore"):
        via_int64 = np.array([int(x) if abs(x) < 2**63 else int(x) % 2**64 for x in v.astype(np.float64)],
                             dtype=object)
    want = np.array([x % 2 ** (8 * out.itemsize) for x in via_int64], dtype=np.uint64).astype(TAGS[dst])
    np.testing.assert_array_equal(out, want)
    cpu = db.from_numpy(v).to(getattr(db, np.dtype(TAGS[dst]).name)).numpy()
    np.testing.assert_array_equal(out, cpu)


# =========================================================================== pow, comparisons, abs, reductions
# The CUDA backend promises the CPU backend's semantics for these, bit for bit where the
# arithmetic allows: references are NumPy (integers exactly, with Python's big integers for
# wrapping powers), the C library's powf/pow (what the host emulation of CUDA's calls: the
# CPU backend's own kernels, src/cpu/vpow.rs, are within an ulp of them) and,
# for rounding a float64 result to a dtype, dlbridge's own CPU cast (the `half` crate's
# conversions, which the reduction kernels mirror).

LIBM = ctypes.CDLL("libm.so.6")
LIBM.powf.restype, LIBM.powf.argtypes = ctypes.c_float, [ctypes.c_float, ctypes.c_float]
LIBM.pow.restype, LIBM.pow.argtypes = ctypes.c_double, [ctypes.c_double, ctypes.c_double]
SIGNED = ["i8", "i16", "i32", "i64"]


def db_name(tag):
    return np.dtype(TAGS[tag]).name


def cpu_round(values, tag):
    """float64 values rounded to dtype `tag` by dlbridge's CPU backend."""
    import dlbridge as db

    v = np.atleast_1d(np.asarray(values, dtype=np.float64))
    out = db.from_numpy(np.ascontiguousarray(v)).to(getattr(db, db_name(tag))).numpy()
    return out.reshape(np.shape(values))


def bits(a):
    """The raw bits of an array (floats compared exactly, sign of zero and NaN included)."""
    a = np.ascontiguousarray(a)
    return a.view({1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[a.itemsize])


def special_values(tag):
    """Edge values of a dtype: extremes, zero, one, minus one, and for floats ±0, ±inf, NaN."""
    dt = TAGS[tag]
    if tag == "b8":
        return np.array([False, True], dtype=dt)
    if tag in FLOATS:
        with np.errstate(over="ignore"):
            return np.array([0.0, -0.0, 1.0, -1.0, 2.0, -2.0, 0.5, -0.5, 3.0, 10.0, np.inf, -np.inf, np.nan,
                             -np.nan, 1e-3, 65504.0, 1e30], dtype=np.float64).astype(dt)
    info = np.iinfo(dt)
    vals = [0, 1, 2, 3, info.max, info.max - 1, 7, 100]
    if info.min < 0:
        vals += [-1, -2, -3, info.min, info.min + 1, -100]
    return np.array(vals, dtype=dt)


# --------------------------------------------------------------------------- pow


def int_pow(base, exp, tag):
    """PyTorch's integer power (cpu/arith.rs's int_pow!): wrapping; a negative exponent gives
    1 for base 1, +-1 for base -1 and 0 otherwise."""
    dt = TAGS[tag]
    bits_ = 8 * np.dtype(dt).itemsize
    out = []
    for b, e in zip(np.asarray(base).tolist(), np.asarray(exp).tolist()):
        if e < 0:
            r = 1 if b == 1 else ((1 if e % 2 == 0 else -1) if b == -1 else 0)
        else:
            r = pow(b, e, 2**bits_)
        out.append(r % 2**bits_)
    return np.array(out, dtype=np.uint64).astype(dt)


def float_pow(base, exp, tag):
    """x ** y in the compute type (float32 for float16/bfloat16) with the C library's powf/pow,
    rounded once to the dtype."""
    f, c = (LIBM.pow, np.float64) if tag == "f64" else (LIBM.powf, np.float32)
    b, e = np.broadcast_arrays(np.asarray(base).astype(c), np.asarray(exp).astype(c))
    r = np.array([f(float(x), float(y)) for x, y in zip(b.ravel(), e.ravel())], dtype=c).reshape(b.shape)
    with np.errstate(over="ignore"):  # float32 results beyond float16's range become inf
        return r.astype(TAGS[tag])


def pow_reference(tag, base, exp):
    if tag == "b8":
        return np.asarray(base) | ~np.asarray(exp)
    if tag in FLOATS:
        return float_pow(base, exp, tag)
    b, e = np.broadcast_arrays(np.asarray(base), np.asarray(exp))
    return int_pow(b.ravel(), e.ravel(), tag).reshape(b.shape)


def pow_operands(tag, rng):
    """Every pair of special values, then random ones: negative exponents, bases +-1 and 0,
    powers that wrap, NaN, infinities, negative bases with fractional exponents."""
    sv = special_values(tag)
    a, b = (x.ravel() for x in np.meshgrid(sv, sv))
    if tag in FLOATS:
        ra = random_array(tag, 200, rng, low=-8, high=8)
        rb = random_array(tag, 200, rng, low=-4, high=4)
        rb[::3] = np.round(rb[::3].astype(np.float64))  # integral exponents of negative bases
    elif tag == "b8":
        ra, rb = random_array(tag, 16, rng), random_array(tag, 16, rng)
    else:
        low = -5 if tag in SIGNED else 0
        ra = random_array(tag, 200, rng, low=low, high=7)
        rb = random_array(tag, 200, rng, low=-3 if tag in SIGNED else 0, high=70)
    return np.concatenate([a, ra]).astype(TAGS[tag]), np.concatenate([b, rb]).astype(TAGS[tag])


@pytest.mark.parametrize("tag", list(TAGS))
def test_pow_tensors_and_scalars_on_both_sides(lib, tag):
    rng = np.random.default_rng(len(tag))
    a, b = pow_operands(tag, rng)
    n = a.size
    scalars = {"b8": [True, False], "f16": [2.0, 0.5, -1.5, 0.1], "bf16": [2.0, 0.5, -1.5, 0.1],
               "f32": [2.0, 0.5, -1.5, 0.1], "f64": [2.0, 0.5, -1.5, 0.1]}.get(tag, [0, 1, 2, 3, 13, 64])
    if tag in SIGNED:
        scalars = scalars + [-1, -2]
    for wide in (0, 1):
        out = np.full(n, 123, dtype=TAGS[tag])
        run(lib["elementwise"], f"dlb_pow_contig_{tag}",
            [ptr(out), ptr(a), ptr(b), scalar_arg(tag, 0), ctypes.c_int(0), ctypes.c_int64(n), ctypes.c_int(wide)],
            grid=(2, 3))
        assert_same(out, pow_reference(tag, a, b))
        for s in scalars:
            # The number travels in the compute type: float16/bfloat16 get it unrounded.
            sv = np.float32(s) if tag in ("f16", "bf16") else np.array(s).astype(TAGS[tag])
            for mode, want in ((1, pow_reference(tag, a, np.full(n, sv))), (2, pow_reference(tag, np.full(n, sv), a))):
                out = np.full(n, 123, dtype=TAGS[tag])
                run(lib["elementwise"], f"dlb_pow_contig_{tag}",
                    [ptr(out), ptr(a), ptr(a), scalar_arg(tag, s), ctypes.c_int(mode), ctypes.c_int64(n),
                     ctypes.c_int(wide)])
                assert_same(out, want)


@pytest.mark.parametrize("tag", list(TAGS))
def test_pow_strided_and_broadcast(lib, tag):
    rng = np.random.default_rng(7)
    a, b = pow_operands(tag, rng)
    base = a[:12].reshape(3, 4)[:, ::2]  # (3, 2) strided
    exp = b[-2:]  # (2,) broadcast over rows
    grid = np.full((3, 6), 55, dtype=TAGS[tag])
    out = grid[:, ::3]  # (3, 2) strided destination
    ix = indexer((3, 2), estrides(out), estrides(base), [0, 1])
    run(lib["elementwise"], f"dlb_pow_strided_{tag}",
        [ptr(out), ptr(base), ptr(exp), scalar_arg(tag, 0), ctypes.c_int(0), ctypes.c_int64(6), ix], grid=(2, 2))
    assert_same(out, pow_reference(tag, base, np.broadcast_to(exp, (3, 2))))
    keep = np.full((3, 6), 55, dtype=TAGS[tag])
    keep[:, ::3] = out
    assert_same(grid, keep)


@pytest.mark.parametrize("tag", FLOATS)
def test_float_pow_is_close_to_numpy_and_torch(lib, tag):
    """An independent check of the float reference: NumPy (and torch, on its dtypes) agree
    within a few units in the last place."""
    import torch

    rng = np.random.default_rng(3)
    a = random_array(tag, 300, rng, low=0.1, high=8)
    b = random_array(tag, 300, rng, low=-3, high=3)
    out = np.zeros_like(a)
    run(lib["elementwise"], f"dlb_pow_contig_{tag}",
        [ptr(out), ptr(a), ptr(b), scalar_arg(tag, 0), ctypes.c_int(0), ctypes.c_int64(a.size), ctypes.c_int(1)])
    eps = {"f16": 2.0**-10, "bf16": 2.0**-7, "f32": 2.0**-23, "f64": 2.0**-52}[tag]
    wide_ref = np.power(a.astype(np.float64), b.astype(np.float64))
    np.testing.assert_allclose(out.astype(np.float64), wide_ref, rtol=4 * eps)
    tt = torch.from_numpy(a.astype(np.float32 if tag != "f64" else np.float64))
    te = torch.from_numpy(b.astype(np.float32 if tag != "f64" else np.float64))
    np.testing.assert_allclose(out.astype(np.float64), torch.pow(tt, te).double().numpy(), rtol=4 * eps)


def test_integer_pow_matches_torch_where_torch_has_the_dtype(lib):
    import torch

    for tag in ["u8"] + SIGNED:
        rng = np.random.default_rng(11)
        a, b = pow_operands(tag, rng)
        out = np.zeros_like(a)
        run(lib["elementwise"], f"dlb_pow_contig_{tag}",
            [ptr(out), ptr(a), ptr(b), scalar_arg(tag, 0), ctypes.c_int(0), ctypes.c_int64(a.size), ctypes.c_int(0)])
        want = torch.pow(torch.from_numpy(a), torch.from_numpy(b)).numpy()
        np.testing.assert_array_equal(out, want, err_msg=tag)


# --------------------------------------------------------------------------- comparisons

COMPARISONS = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal, "gt": np.greater,
               "ge": np.greater_equal}


def compare_reference(op, x, y):
    """IEEE comparisons on exact float64 (or integer) values."""
    x, y = np.asarray(x), np.asarray(y)
    if x.dtype.kind == "f" or x.dtype == ml_dtypes.bfloat16:
        x, y = x.astype(np.float64), y.astype(np.float64)
    with np.errstate(invalid="ignore"):
        return COMPARISONS[op](x, y)


@pytest.mark.parametrize("op", list(COMPARISONS))
@pytest.mark.parametrize("tag", list(TAGS))
def test_comparisons_contiguous_with_tensors_and_scalars(lib, tag, op):
    sv = special_values(tag)
    a, b = (x.ravel() for x in np.meshgrid(sv, sv))  # every pair, NaN with NaN included
    rng = np.random.default_rng(len(op))
    ra = random_array(tag, 100, rng)
    a, b = np.concatenate([a, ra]), np.concatenate([b, ra[::-1]])
    n = a.size
    out = np.full(n + 4, 7, dtype=np.uint8)  # bool storage: one byte each, poisoned
    run(lib["compare"], f"dlb_{op}_contig_{tag}",
        [ptr(out), ptr(a), ptr(b), scalar_arg(tag, 0), ctypes.c_int(0), ctypes.c_int64(n)], grid=(2, 3))
    np.testing.assert_array_equal(out[:n], compare_reference(op, a, b).astype(np.uint8))
    assert (out[n:] == 7).all()
    for s in sv:  # the scalar was rounded to the dtype by the host
        for mode, want in ((1, compare_reference(op, a, np.full(n, s))), (2, compare_reference(op, np.full(n, s), a))):
            out = np.full(n, 7, dtype=np.uint8)
            run(lib["compare"], f"dlb_{op}_contig_{tag}",
                [ptr(out), ptr(a), ptr(a), scalar_arg(tag, s.item() if tag != "bf16" else float(s)),
                 ctypes.c_int(mode), ctypes.c_int64(n)])
            np.testing.assert_array_equal(out, want.astype(np.uint8), err_msg=f"{s} mode {mode}")
    empty = np.full(2, 7, dtype=np.uint8)
    run(lib["compare"], f"dlb_{op}_contig_{tag}",
        [ptr(empty), ptr(a), ptr(b), scalar_arg(tag, 0), ctypes.c_int(0), ctypes.c_int64(0)])
    assert (empty == 7).all()


@pytest.mark.parametrize("tag", ["b8", "u8", "i32", "u64", "f16", "bf16", "f64"])
def test_comparisons_strided_and_broadcast(lib, tag):
    rng = np.random.default_rng(9)
    sv = special_values(tag)
    col = sv.reshape(-1, 1)  # broadcast along columns
    row = np.ascontiguousarray(np.concatenate([sv, random_array(tag, 3, rng)])[::-1])
    shape = (col.shape[0], row.shape[0])
    for op in COMPARISONS:
        out = np.full(shape, 7, dtype=np.uint8)
        ix = indexer(shape, estrides(out), [estrides(col)[0], 0], [0, 1])
        run(lib["compare"], f"dlb_{op}_strided_{tag}",
            [ptr(out), ptr(col), ptr(row), scalar_arg(tag, 0), ctypes.c_int(0), ctypes.c_int64(out.size), ix],
            grid=(2, 2))
        np.testing.assert_array_equal(out, compare_reference(op, np.broadcast_to(col, shape),
                                                             np.broadcast_to(row, shape)).astype(np.uint8))
        t = np.ascontiguousarray(np.broadcast_to(col, shape)).T  # a transposed input, number on the left
        out = np.full(t.shape, 7, dtype=np.uint8)
        ix = indexer(t.shape, estrides(out), estrides(t), [0, 0])
        run(lib["compare"], f"dlb_{op}_strided_{tag}",
            [ptr(out), ptr(t), NULL, scalar_arg(tag, sv[1].item() if tag != "bf16" else float(sv[1])),
             ctypes.c_int(2), ctypes.c_int64(out.size), ix])
        np.testing.assert_array_equal(out, compare_reference(op, np.full(t.shape, sv[1]), t).astype(np.uint8))


# --------------------------------------------------------------------------- abs


def abs_reference(x, tag):
    if tag in FLOATS:
        sign = {2: 0x8000, 4: 0x80000000, 8: 0x8000000000000000}[x.itemsize]
        return (bits(x) & ~np.array(sign, dtype=bits(x).dtype)).view(x.dtype)
    if tag in SIGNED:
        return np.abs(x)  # NumPy wraps too: abs(-128) is -128 in int8
    return x


@pytest.mark.parametrize("tag", list(TAGS))
def test_abs_wraps_integers_and_clears_the_float_sign_bit(lib, tag):
    rng = np.random.default_rng(2)
    x = np.concatenate([special_values(tag), random_array(tag, 50, rng)])
    for src in (x, x[::2], x.reshape(-1)[1:]):  # contiguous, strided, offset
        out = np.full(src.size, 99, dtype=TAGS[tag])
        ix = indexer((src.size,), [1], estrides(src))
        run(lib["elementwise"], f"dlb_abs_{tag}", [ptr(out), ptr(src), ctypes.c_int64(src.size), ix], grid=(2, 2))
        np.testing.assert_array_equal(bits(out), bits(abs_reference(np.ascontiguousarray(src), tag)))
    if tag in SIGNED:
        lowest = np.array([np.iinfo(TAGS[tag]).min], dtype=TAGS[tag])
        out = np.zeros(1, dtype=TAGS[tag])
        run(lib["elementwise"], f"dlb_abs_{tag}", [ptr(out), ptr(lowest), ctypes.c_int64(1), indexer((1,), [1], [1])])
        assert out[0] == lowest[0]
    if tag in FLOATS:  # -0.0 and a negative NaN lose their sign
        neg = np.array([-0.0, -np.inf], dtype=np.float64).astype(TAGS[tag])
        nan = bits(np.array([np.nan], dtype=np.float64).astype(TAGS[tag]))
        nan |= np.array({2: 0x8000, 4: 0x80000000, 8: 0x8000000000000000}[nan.itemsize], dtype=nan.dtype)
        src = np.concatenate([neg, nan.view(TAGS[tag])])
        out = np.zeros(3, dtype=TAGS[tag])
        run(lib["elementwise"], f"dlb_abs_{tag}", [ptr(out), ptr(src), ctypes.c_int64(3), indexer((3,), [1], [1])])
        f = out.astype(np.float64)
        assert f[0] == 0 and not np.signbit(f[0]) and f[1] == np.inf and np.isnan(f[2]) and not np.signbit(f[2])


@pytest.mark.parametrize("tag", [t for t in TAGS if t not in FLOATS])
def test_bitwise_not_of_integers_and_bools(lib, tag):
    rng = np.random.default_rng(len(tag))
    src = random_array(tag, 37 * 5, rng).reshape(37, 5)[:, ::2]  # a strided view
    out = np.zeros(src.shape, dtype=TAGS[tag])
    ix = indexer(src.shape, estrides(out), estrides(src))
    run(lib["elementwise"], f"dlb_bitwise_not_{tag}", [ptr(out), ptr(src), ctypes.c_int64(src.size), ix], grid=(2, 2))
    want = np.logical_not(src) if tag == "b8" else np.invert(src)
    np.testing.assert_array_equal(out, want)


def test_abs_of_a_transposed_matrix(lib):
    x = (np.arange(-12, 12, dtype=np.int16) * 1000).reshape(4, 6)
    t = x.T
    out = np.zeros(t.shape, dtype=np.int16)
    ix = indexer(t.shape, estrides(out), estrides(t))
    run(lib["elementwise"], "dlb_abs_i16", [ptr(out), ptr(t), ctypes.c_int64(t.size), ix], grid=(3, 2))
    np.testing.assert_array_equal(out, np.abs(t))


# --------------------------------------------------------------------------- unary math

# The math kernels of elementwise.cu (rows of unary_ops! in src/backend.rs): name -> NumPy's.
MATH = {"exp": np.exp, "sqrt": np.sqrt, "log": np.log}
MATH_RTOL = {"f16": 1e-3, "bf16": 8e-3, "f32": 2e-6, "f64": 1e-14}


@pytest.mark.parametrize("name", list(MATH))
@pytest.mark.parametrize("tag", FLOATS)
def test_unary_math_kernels_compute_in_float_and_round_once(lib, name, tag):
    rng = np.random.default_rng(5)
    x = np.concatenate([special_values(tag), random_array(tag, 60, rng)])
    with np.errstate(all="ignore"):
        wide = np.float64 if tag == "f64" else np.float32
        want = cpu_round(MATH[name](x.astype(np.float64).astype(wide)).astype(np.float64), tag)
    for step in (1, 2):  # contiguous, strided
        src = x[::step]
        out = np.full(src.size, 7, dtype=TAGS[tag])
        ix = indexer((src.size,), [1], estrides(src))
        run(lib["elementwise"], f"dlb_{name}_{tag}", [ptr(out), ptr(src), ctypes.c_int64(src.size), ix], grid=(2, 2))
        np.testing.assert_allclose(out.astype(np.float64), want[::step].astype(np.float64),
                                   rtol=MATH_RTOL[tag], equal_nan=True)
    inplace = x.copy()  # out == src
    ix = indexer((x.size,), [1], [1])
    run(lib["elementwise"], f"dlb_{name}_{tag}", [ptr(inplace), ptr(inplace), ctypes.c_int64(x.size), ix])
    np.testing.assert_allclose(inplace.astype(np.float64), want.astype(np.float64), rtol=MATH_RTOL[tag], equal_nan=True)


# --------------------------------------------------------------------------- reductions over dims


def collapse(shape, strides):
    """src/cuda/kernels/mod.rs's indexer() for one operand: size-1 dimensions dropped, neighbours
    contiguous in memory merged. [(size, stride)], outermost first."""
    dims = []
    for size, st in reversed(list(zip(shape, strides))):
        if size == 1:
            continue
        if dims and st == dims[-1][1] * dims[-1][0]:
            dims[-1][0] *= size
            continue
        dims.append([size, st])
    return dims[::-1]


def runs_of(x, kept, reduced):
    """src/cuda/kernels/reduce.rs's runs_of: the kept dimensions as an indexer, the reduced ones as
    one stride, or None when they do not merge."""
    st = estrides(x)
    red = collapse([x.shape[d] for d in reduced], [st[d] for d in reduced])
    if any(x.shape[d] == 0 for d in reduced) or not red:
        stride = 1
    elif len(red) == 1:
        stride = red[0][1]
    else:
        return None
    k = collapse([x.shape[d] for d in kept], [st[d] for d in kept])
    return indexer([n for n, _ in k], [s for _, s in k]), stride


def out_tag(op, tag):
    return "i64" if op == "sum" and tag not in FLOATS else tag


def reduce_on_host(lib, op, tag, x, dims, kernel, splits=1, wide=1):
    """What src/cuda/kernels/reduce.rs's reduce() launches, with `kernel` ('block' or 'thread') and
    each run cut into about `splits` pieces (dlb_reduce_final_* folds them). Returns the
    values (shaped like the kept dimensions) and the indices (max and min)."""
    kept = [d for d in range(x.ndim) if d not in dims]
    layout = runs_of(x, kept, dims)
    if layout is None:  # the host copies the input with the reduced dimensions last
        x = np.ascontiguousarray(x.transpose(kept + dims))
        k = len(kept)
        kept, dims = list(range(k)), list(range(k, x.ndim))
        layout = runs_of(x, kept, dims)
    ix, stride = layout
    rows = int(np.prod([x.shape[d] for d in kept]))
    length = int(np.prod([x.shape[d] for d in dims]))
    if length:
        chunk = -(-length // splits)
        if kernel == "block":
            chunk = -(-chunk // 16) * 16
        pieces = -(-length // chunk)
    else:
        chunk, pieces = 1, 1
    out = np.full(rows, 99, dtype=TAGS[out_tag(op, tag)])
    idx = np.full(rows, -7, dtype=np.int64) if op in ("max", "min") else None
    pidx = ptr(idx) if idx is not None else NULL
    partial = np.full(rows * pieces, -1, dtype=np.int64)
    g = Rows(rows, length, stride, pieces, chunk)
    if kernel == "block":
        run(lib["reduce"], f"dlb_reduce_block_{op}_{tag}", [ptr(x), ix, g, ptr(out), pidx, ptr(partial),
                                                             ctypes.c_int(wide)], grid=(3, 1))
    else:
        run(lib["reduce"], f"dlb_reduce_thread_{op}_{tag}", [ptr(x), ix, g, ptr(out), pidx, ptr(partial)],
            grid=(2, 3))
    if pieces > 1:
        run(lib["reduce"], f"dlb_reduce_final_{op}_{tag}", [ptr(x), ix, g, ptr(partial), ptr(out), pidx],
            grid=(2, 1))
    shape = [x.shape[d] for d in kept]
    return out.reshape(shape), None if idx is None else idx.reshape(shape)


def mean_reference(exact_sum, n, tag):
    """cpu/reduce.rs's mean: the float64 sum in the dtype's compute type (float32 for
    float16, bfloat16 and float32, as PyTorch), divided there, rounded to the dtype."""
    if tag == "f64":
        return exact_sum / n
    q = np.asarray(exact_sum).astype(np.float32) / np.float32(n)
    return cpu_round(np.asarray(q).astype(np.float64), tag)


def reduce_reference(op, tag, x, dims):
    """cpu/reduce.rs in NumPy: runs in row-major order of the reduced dimensions; sums in
    float64 (rounded to the dtype as the CPU backend rounds) or wrapping int64; a mean is the
    sum divided in the compute type (see mean_reference); max/min: the first NaN, else the first extreme."""
    kept = [d for d in range(x.ndim) if d not in dims]
    shape = [x.shape[d] for d in kept]
    length = int(np.prod([x.shape[d] for d in dims]))
    y = np.ascontiguousarray(x.transpose(kept + dims)).reshape(int(np.prod(shape)), length)
    if op in ("sum", "mean"):
        if tag not in FLOATS:
            return y.astype(np.uint64).sum(axis=1, dtype=np.uint64).view(np.int64).reshape(shape), None
        exact = y.astype(np.float64).sum(axis=1)
        if op == "sum":
            return cpu_round(exact, tag).reshape(shape), None
        with np.errstate(invalid="ignore", divide="ignore"):
            return mean_reference(exact, length, tag).reshape(shape), None
    w = y.astype(np.float64) if tag in FLOATS else y
    nan = np.isnan(w) if tag in FLOATS else np.zeros(w.shape, dtype=bool)
    at = np.argmax(w, axis=1) if op == "max" else np.argmin(w, axis=1)  # first occurrence
    at = np.where(nan.any(axis=1), np.argmax(nan, axis=1), at)  # the first NaN wins
    return y[np.arange(y.shape[0]), at].reshape(shape), at.reshape(shape)


def reduce_data(tag, shape, rng):
    """Values whose float64 sums are exact in any order (multiples of 1/8), with NaN, ties,
    +-0 and extremes for max/min; integers across their range (sums wrap)."""
    n = int(np.prod(shape))
    if tag == "b8":
        return random_array(tag, n, rng).reshape(shape)
    if tag in FLOATS:
        v = np.round(rng.uniform(-64, 64, n) * 8) / 8
        v[rng.random(n) < 0.2] = 3.0  # ties
        v[rng.random(n) < 0.05] = 0.0
        v[rng.random(n) < 0.05] = -0.0
        return v.astype(TAGS[tag]).reshape(shape)
    return random_array(tag, n, rng).reshape(shape)


def with_nans(x, rng):
    x = x.copy()
    flat = x.reshape(-1)
    flat[rng.random(flat.size) < 0.1] = np.nan
    return x


# (shape, dims): full, over a middle dimension (runs across memory), a leading one, the
# last, two that do not merge (the host copies first), two that do, everything, 0-d,
# long runs (16-byte loads and several pieces), runs of nothing.
REDUCE_CASES = [((13,), [0]), ((3, 5, 4), [1]), ((3, 5, 4), [0]), ((3, 5, 4), [2]), ((3, 5, 4), [0, 2]),
                ((3, 5, 4), [1, 2]), ((3, 5, 4), [0, 1, 2]), ((), []), ((2, 300), [1]), ((300, 3), [0]),
                ((2, 1, 37), [1, 2]), ((4, 0, 3), [1])]


def views(x):
    """x itself, and the same values in a non-contiguous layout (every other element of a
    bigger buffer) and in a transposed one."""
    out = {"contiguous": x}
    if x.ndim:
        buf = np.zeros(x.shape[:-1] + (2 * x.shape[-1],), dtype=x.dtype)
        buf[..., ::2] = x
        out["strided"] = buf[..., ::2]
        t = np.ascontiguousarray(np.moveaxis(x, 0, -1))
        out["moved"] = np.moveaxis(t, -1, 0)
    return out


def reduce_ops(tag):
    return ["sum", "mean", "max", "min"] if tag in FLOATS else ["sum", "max", "min"]


def same_values(got, want, tag):
    """Exact: floats bit for bit (the sign of zero included), NaN as NaN."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    if tag in FLOATS:
        g, w = got.astype(np.float64), want.astype(np.float64)
        both_nan = np.isnan(g) & np.isnan(w)
        np.testing.assert_array_equal(np.where(both_nan, 0, bits(got)), np.where(both_nan, 0, bits(want)))
    else:
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("tag,op", [(tag, op) for tag in TAGS for op in reduce_ops(tag)])
def test_reductions_over_any_dims_with_every_kernel(lib, tag, op):
    rng = np.random.default_rng([len(tag), len(op)])
    for shape, dims in REDUCE_CASES:
        if op in ("max", "min") and any(shape[d] == 0 for d in dims):
            continue  # refused before the backend (an empty reduced dimension)
        base = reduce_data(tag, shape, rng)
        datasets = {"plain": base}
        if tag in FLOATS and op in ("max", "min"):
            datasets["nan"] = with_nans(base, rng)
        for dname, data in datasets.items():
            want, want_idx = reduce_reference(op, tag, data, dims)
            for vname, x in views(data).items():
                for kernel, splits, wide in (("thread", 1, 0), ("thread", 3, 0), ("block", 1, 1), ("block", 1, 0),
                                             ("block", 4, 1)):
                    got, idx = reduce_on_host(lib, op, tag, x, dims, kernel, splits, wide)
                    where = f"{shape} dims={dims} {dname} {vname} {kernel} splits={splits} wide={wide}"
                    try:
                        same_values(got, want, tag)
                        if idx is not None:
                            np.testing.assert_array_equal(idx, want_idx)
                    except AssertionError as e:
                        raise AssertionError(f"{where}: {e}") from None


@pytest.mark.parametrize("tag", list(TAGS))
def test_reductions_match_dlbridges_cpu_backend(lib, tag):
    """The same reductions through dlbridge's CPU backend, the semantics the CUDA backend
    promises: sum/mean/amax/amin over dims, and max/min over one dim with indices."""
    import dlbridge as db

    rng = np.random.default_rng(5)
    x = reduce_data(tag, (4, 6, 5), rng)
    if tag in FLOATS:
        x = with_nans(x, rng)
    t = db.from_numpy(x)
    for dims in ([0], [1], [2], [0, 2], [1, 2], [0, 1, 2]):
        for op in reduce_ops(tag):
            got, _ = reduce_on_host(lib, op, tag, x, dims, "thread", 2)
            cpu = {"sum": t.sum, "mean": t.mean, "max": t.amax, "min": t.amin}[op](tuple(dims)).numpy()
            same_values(got, cpu, out_tag(op, tag))
        for op in ("max", "min"):
            if len(dims) == 1:
                got, idx = reduce_on_host(lib, op, tag, x, dims, "block", 1)
                r = getattr(t, op)(dims[0])
                same_values(got, r.values.numpy(), tag)
                np.testing.assert_array_equal(idx, r.indices.numpy())


@pytest.mark.parametrize("tag", ["f16", "bf16", "f32"])
def test_sums_round_to_the_dtype_as_the_cpu_backend_does(lib, tag):
    """float64 sums with many significant bits (values of very different magnitudes): the
    rounding to float16 and bfloat16 (once, through a round-to-odd float32) is the CPU
    backend's, bit for bit, for the sum and the mean."""
    import dlbridge as db

    rng = np.random.default_rng(13)
    lo = -14 if tag == "f16" else -30
    n = 3 * 4000
    v = rng.standard_normal(n) * 2.0 ** rng.integers(lo, 10, n)
    x = v.astype(TAGS[tag]).reshape(4000, 3)
    t = db.from_numpy(x)
    for op in ("sum", "mean"):
        for kernel in ("thread", "block"):
            got, _ = reduce_on_host(lib, op, tag, x, [1], kernel)
            same_values(got, getattr(t, op)(1).numpy(), tag)


@pytest.mark.parametrize("tag", ["i64", "u64", "i32", "u8", "b8"])
def test_integer_sums_wrap_in_int64(lib, tag):
    dt = TAGS[tag]
    if tag == "b8":
        x = np.ones((2, 1000), dtype=dt)
    else:
        info = np.iinfo(dt)
        x = np.array([[info.max] * 7 + [info.min] * 2, [info.max - 3] * 9], dtype=dt)
    for kernel, splits in (("thread", 1), ("thread", 4), ("block", 1), ("block", 2)):
        got, _ = reduce_on_host(lib, "sum", tag, x, [1], kernel, splits)
        want = [sum(int(v) for v in row) for row in x.tolist()]
        want = np.array([w % 2**64 for w in want], dtype=np.uint64).view(np.int64)
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("tag", FLOATS)
def test_extremes_let_the_first_nan_win_and_the_first_of_equals(lib, tag):
    nan, neg_zero = np.nan, -0.0
    rows = np.array([[1.0, nan, 5.0, nan], [-0.0, 0.0, -1.0, -1.0], [2.0, 2.0, 2.0, 2.0], [np.inf, 1.0, nan, -np.inf],
                     [0.0, neg_zero, 0.0, -5.0]], dtype=np.float64).astype(TAGS[tag])
    for op, want_idx in (("max", [1, 0, 0, 2, 0]), ("min", [1, 2, 0, 2, 3])):
        for kernel, splits in (("thread", 1), ("thread", 2), ("thread", 4), ("block", 1), ("block", 2)):
            got, idx = reduce_on_host(lib, op, tag, rows, [1], kernel, splits)
            np.testing.assert_array_equal(idx, want_idx, err_msg=f"{op} {kernel} {splits}")
            same_values(got, rows[np.arange(5), want_idx], tag)
    # max over [-0.0, 0.0] keeps the first: -0.0
    got, idx = reduce_on_host(lib, "max", tag, rows[1:2, :2], [1], "thread")
    assert idx[0] == 0 and np.signbit(got.astype(np.float64)[0])
