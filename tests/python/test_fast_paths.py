"""The CPU's fast paths against PyTorch, bit for bit: `x ** number` for the
exponents computed without `pow` (src/cpu/pow.rs), a Python number added to
a float16/bfloat16 tensor (rounded to the dtype first, as torch), the AVX2
and AVX-512 copies of the loops against the baseline ones (src/cpu/isa.rs), and loops
long enough to split across threads (src/cpu/parallel.rs)."""

import math
import os
import platform
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest
import torch

import dlbridge as db
from conftest import python_env

FLOATS = ["float16", "bfloat16", "float32", "float64"]
INTS = ["uint8", "int8", "int16", "int32", "int64"]
EXPONENTS = [0, 1, 2, 3, 0.5, -0.5, -1, -2, 2.0, 3.0, 0.0, 1.0, -1.0, -2.0, 1.5, 4, True, False, -0.0]
# 1e-39: a float32 and bfloat16 subnormal (bfloat16 chunks holding one round by the bit steps).
SPECIALS = [math.nan, -math.nan, math.inf, -math.inf, 0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1e-30, -1e-30, 3e38, -3e38, 1e-45, 65504.0, 7e-8, 1e-39, -3e-39]


def sample(dtype, n, seed):
    g = torch.Generator().manual_seed(seed)
    td = getattr(torch, dtype)
    if td.is_floating_point:
        x = torch.randn(n, generator=g, dtype=torch.float64) * 4
        k = min(n, len(SPECIALS))
        x[:k] = torch.tensor(SPECIALS[:k], dtype=torch.float64)
        # Values whose squares and cubes sit at rounding ties of the narrow types.
        x[k : 2 * k] = torch.randint(-300, 300, (min(k, max(0, n - k)),), generator=g).double() / 16
        return x[torch.randperm(n, generator=g)].to(td)
    info = torch.iinfo(td)
    x = torch.randint(max(info.min, -2000), min(info.max, 2000) + 1, (n,), generator=g, dtype=torch.int64)
    if n >= 2:
        x[0], x[1] = info.min, info.max
    return x.to(td)


def exact(got, want, ulp=False):
    """Equal bits (NaN as NaN); `ulp`: within torch's tolerance where both are
    finite and nonzero, equal elsewhere (signed zeros, infinities, NaN)."""
    got = torch.from_dlpack(got)
    assert got.dtype == want.dtype and got.shape == want.shape
    if ulp:
        edge = ~torch.isfinite(want) | (want == 0)
        exact(db.from_dlpack(got[edge].contiguous()), want[edge])
        torch.testing.assert_close(got, want, equal_nan=True)
        real = ~want.isnan()
        assert torch.equal(got[real].signbit(), want[real].signbit())
    elif want.is_floating_point():
        torch.testing.assert_close(got, want, rtol=0, atol=0, equal_nan=True)
    else:
        assert torch.equal(got, want)


def torch_supports(x, e):
    try:
        x[:2] ** e
        return True
    except RuntimeError:
        return False


@pytest.mark.parametrize("dtype", FLOATS + INTS)
@pytest.mark.parametrize("e", EXPONENTS, ids=repr)
def test_pow_by_a_number_is_torchs_bit_for_bit(dtype, e):
    """Bit for bit for the exponents computed without `pow`; within an ulp for
    the rest (`pow` against torch's SLEEF) and for 0.5 (torch's SLEEF square
    root is off by an ulp now and then; dlbridge's is correctly rounded, as
    NumPy's `x ** 0.5`)."""
    ulp = e not in (0, 1, 2, 3, -1, -2)
    for n in [1, 7, 255, 1001, 70_003]:
        x = sample(dtype, n, n)
        if not torch_supports(x, e):
            with pytest.raises(RuntimeError):
                db.from_dlpack(x.clone()) ** e
            return
        got = db.from_dlpack(x.clone()) ** e
        exact(got, x**e, ulp)
        if e == 0.5 and dtype in ("float32", "float64"):
            np_x = x.numpy()
            assert np.array_equal(np.from_dlpack(got), np_x ** np_x.dtype.type(e), equal_nan=True)
    # Strided views, 2-D, and in place through a view.
    m = sample(dtype, 64 * 33, 5).reshape(64, 33)
    d = db.from_dlpack(m)
    for view in (lambda z: z[::2, 1::3], lambda z: z.T, lambda z: z[:, :1], lambda z: z[5:40]):
        exact(view(d) ** e, view(m) ** e, ulp)
    want = m.clone()
    t = db.from_dlpack(m.clone())
    if (want[::3] ** e).dtype == want.dtype:
        want[::3].pow_(e)
        t[::3].pow_(e)
        exact(t, want, ulp)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
@pytest.mark.parametrize("number", [0.1, 1 / 3, 1e-3, 3.3, -2.7, 1e5, 1e-8])
def test_numbers_added_to_narrow_floats_round_as_torch(dtype, number):
    x = sample(dtype, 20_011, 3) * 10
    for op in (lambda a, b: a + b, lambda a, b: a - b, lambda a, b: b + a, lambda a, b: b - a):
        exact(op(db.from_dlpack(x.clone()), number), op(x, number))
    t, want = db.from_dlpack(x.clone()), x.clone()
    t.add_(number)
    want.add_(number)
    exact(t, want)
    t.sub_(number)
    want.sub_(number)
    exact(t, want)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_broadcast_operands_of_narrow_floats_round_as_torch(dtype):
    """A stride-0 operand (a column or row broadcast, on either side) fills
    its float32 block once; rows longer than a block and odd lengths."""
    m = sample(dtype, 37 * 601, 4).reshape(37, 601)
    d = db.from_dlpack(m)
    for op in (lambda a, b: a + b, lambda a, b: a * b, lambda a, b: a / b, lambda a, b: b - a):
        for pick in (lambda z: z[:, :1], lambda z: z[:1], lambda z: z[3:4, 7:8]):
            exact(op(d, pick(d)), op(m, pick(m)))
    t, want = db.from_dlpack(m.clone()), m.clone()
    t.mul_(t[:, 5:6])
    want.mul_(want[:, 5:6].clone())
    exact(t, want)


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "int32", "float64"])
def test_long_loops_split_across_threads_match_torch(dtype):
    n = 1_000_003
    x, y = sample(dtype, n, 1), sample(dtype, n, 2)
    a, b = db.from_dlpack(x), db.from_dlpack(y)
    exact(a + b, x + y)
    exact(a * 3, x * 3)
    exact(a < b, x < y)
    exact(a[:-1:3] - b[1::3], x[:-1:3] - y[1::3])
    if dtype != "int32":
        exact(a.to(db.float32), x.to(torch.float32))
        exact(db.from_dlpack(x.float()).to(getattr(db, dtype)), x.float().to(x.dtype))


@pytest.mark.parametrize(
    "dtype", ["float32", "float64", "float16", "bfloat16", "int64", "int32", "int16", "int8", "bool"]
)
@pytest.mark.parametrize("shape", [(7, 200), (130, 77), (33, 300), (1001, 1003)])
def test_transposed_operands_go_in_strips_and_match_torch(dtype, shape):
    """A transposed input (src/cpu/elementwise.rs, Plan::walk_strips: bands
    of 16 rows and strips of 256 bytes, each band's part of the input
    transposed into a buffer in register blocks first (src/cpu/transpose.rs,
    blocks of 16 / size elements a side), with the rows left over read in
    place; the largest shape splits across threads mid-row; row_into's
    loops with one strided side, either side): sums, in place both ways and
    a comparison are torch's."""
    rows, cols = shape

    def make(n, seed):
        return sample("int8", n, seed) > 0 if dtype == "bool" else sample(dtype, n, seed)

    x, y = make(rows * cols, 5).reshape(cols, rows), make(rows * cols, 6).reshape(rows, cols)
    a, b = db.from_dlpack(x), db.from_dlpack(y)
    exact(a.T + b, x.T + y)
    exact(b + a.T, y + x.T)
    if dtype != "bool":  # torch has no bool subtraction
        exact(b - a.T, y - x.T)
    exact(a.T < b, x.T < y)
    got, want = db.from_dlpack(y.clone()), y.clone()
    got.add_(a.T)
    want.add_(x.T)
    exact(got, want)
    got, want = db.from_dlpack(x.clone()).T, x.clone().T
    got.mul_(b)
    want.mul_(y)
    exact(got, want)


@pytest.mark.parametrize("dtype", ["bool", "int8", "uint8", "int16", "float16", "float32", "int64", "float64"])
@pytest.mark.parametrize("shape", [(3, 5), (15, 17), (16, 16), (17, 40), (40, 20, 40), (33, 2, 70), (700, 301)])
def test_transposed_copies_match_torch(dtype, shape):
    """`contiguous()` of views whose unit stride is on the second-to-last
    dimension goes through the tile transpose (src/cpu/copy.rs), in register
    blocks of 16 / size elements a side, the last block of each side moved
    back to end at the edge (src/cpu/transpose.rs): sides under, at and past 16,
    bands of 32 rows with the rest in the last, several planes, and a
    700x301 transpose split across threads. Every byte is torch's."""
    n = math.prod(shape)
    x = (sample("int8", n, 9) > 0) if dtype == "bool" else sample(dtype, n, 9)
    x = x.reshape(shape)
    a = db.from_dlpack(x)
    dims = list(range(len(shape)))
    perms = [dims[:-2] + dims[:-3:-1]] + ([[2, 0, 1], [1, 2, 0], [2, 1, 0]] if len(shape) == 3 else [])
    for p in perms:
        exact(a.permute(*p).contiguous(), x.permute(*p).contiguous())
        exact(a.permute(*p)[1:, 1:].contiguous(), x.permute(*p)[1:, 1:].contiguous())


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("n", [15, 63, 64, 65, 129, 300])
@pytest.mark.parametrize("start", [0, 1, 5])
def test_half_float_chunks_match_torch_at_their_edges(dtype, n, start):
    """float16/bfloat16 rows of dense operands run in register chunks of 64
    with the rest through blocks (src/cpu/elementwise.rs, dense_chunks): at
    lengths around a chunk, from unaligned starts, with a number, a
    broadcast value and in place, the bits are torch's."""
    x, y = sample(dtype, n + start, 3)[start:], sample(dtype, n + start, 4)[start:]
    a, b = db.from_dlpack(x), db.from_dlpack(y)
    exact(a + b, x + y)
    exact(a / b, x / y)
    exact(a * 3, x * 3)
    exact(2 - a, 2 - x)
    exact(a.maximum(b), x.maximum(y))
    exact(a < b, x < y)
    exact(a - b[:1], x - y[:1])
    exact(-a, -x)
    exact(a.exp(), x.exp(), ulp=True)
    # strided operands (buffers of a chunk or of a block, by the length
    # left), and rows of a 2-D broadcast (each row's tail through a chunk)
    exact(a[::2] + b[::2], x[::2] + y[::2])
    exact(a[::3] * b[::3], x[::3] * y[::3])
    exact(a.reshape(1, n) + b[:3].reshape(3, 1), x.reshape(1, n) + y[:3].reshape(3, 1))
    got, want = db.from_dlpack(x.clone()), x.clone()
    got.add_(b)
    want.add_(y)
    exact(got, want)
    got.mul_(0.5)
    want.mul_(0.5)
    exact(got, want)


BASELINE_CHECK = r"""
import hashlib, sys, torch, dlbridge as db
sys.path.insert(0, {here!r})
from test_fast_paths import sample
out, log32, pow32 = hashlib.sha256(), hashlib.sha256(), hashlib.sha256()
def put(t, into=out):
    t = torch.from_dlpack(t).reshape(-1)
    if t.is_floating_point():  # one NaN for all: operand order picks the payload and sign
        t = torch.where(t.isnan(), torch.full_like(t, float("nan")), t)
    into.update(t.contiguous().view(torch.uint8).numpy().tobytes())
for dtype in ["float16", "bfloat16", "float32", "float64", "int32", "int64", "uint8"]:
    for n in [7, 9, 257, 5003, 300_007]:
        x, y = sample(dtype, n, 7), sample(dtype, n, 8)
        a, b = db.from_dlpack(x), db.from_dlpack(y)
        for r in (a + b, a - b, a * b, a * 3, a < b, a >= b, a ** 2, -a, abs(a), a.maximum(b)):
            put(r)
        if x.is_floating_point():
            for r in (a / b, a.sqrt(), a.exp()):
                put(r)
            # float32's general power (which float16 and bfloat16 compute in)
            # is CPU-dependent; 3 and -2 take it in float16 alone (pow.rs).
            in_float32 = dtype != "float64"
            for r in (a ** 3, a ** -2):
                put(r, pow32 if dtype == "float16" else out)
            for r in (a ** b, abs(a) ** 2.5, a[::2] ** b[::2]):
                put(r, pow32 if in_float32 else out)
            put(a.log(), log32 if dtype == "float32" else out)
        put(a.sum()); put(a.amax())
        m = a[: n - n % 7].reshape(-1, 7)
        put(m.sum(0)); put(m.sum(1)); put(m.amax(0)); put(m.amax(1))
        for d in ["float16", "bfloat16", "float32", "float64", "int32", "int64"]:
            put(a.to(getattr(db, d)))
print(out.hexdigest(), log32.hexdigest(), pow32.hexdigest())
"""


def test_avx2_and_avx512_loops_give_the_baseline_loops_bits():
    """Every op, sum and cast over every dtype gives the same values (NaN
    as NaN) from the AVX2 and AVX-512 copies of the loops (the latter with
    and without the AVX-512 BF16 and FP16 conversions) as from the baseline ones (on
    a CPU without AVX-512, "avx512" and "detect" run the AVX2 copies); but
    float32 log and float32 `**` (float16's and bfloat16's too, computed in
    it), whose AVX-512 kernels are other algorithms (each within its ulp
    bound: test_math_accuracy.py). On one thread, so that the 300,007-element
    rows reach the AVX-512 copies of the plain arithmetic loops, which take
    rows from 2^16 elements on (shorter ones run the AVX2 copies)."""
    here = os.path.dirname(os.path.abspath(__file__))
    code = BASELINE_CHECK.format(here=here)
    runs = {}
    for isa in ("baseline", "avx2", "avx512", "avx512bf16", "detect"):
        # python_env: under make test-asan the child needs the ASan runtime preloaded.
        env = python_env(dict(os.environ, DLBRIDGE_ISA=isa, DLBRIDGE_NUM_THREADS="1"))
        r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
        assert r.returncode == 0, f"DLBRIDGE_ISA={isa}:\n{r.stderr}"
        runs[isa] = r.stdout.split()
    every, log32, pow32 = ({isa: r[i] for isa, r in runs.items()} for i in range(3))
    assert len(set(every.values())) == 1, every
    # float32 log and the float32 power differ by design: AVX-512 runs
    # table-driven kernels (src/cpu/log32.rs; vpow.rs' float32-lane
    # kernel), the other copies fdlibm's log and the float64-lane power.
    # Each kernel gives the same bits from every copy that runs it.
    assert log32["baseline"] == log32["avx2"]
    assert pow32["baseline"] == pow32["avx2"]
    assert pow32["avx512"] == pow32["avx512bf16"]
    assert pow32["detect"] in (pow32["avx2"], pow32["avx512"])


# Closures of dlbridge's that a twin! copy may call, each with why that
# costs nothing: a closure the compiler keeps apart from its caller is
# compiled once, for the baseline (SSE2), so its loops lose the copy's
# AVX2 or AVX-512 (row_groups' kernels behind one ran 1.3-2.8x torch).
CALLED_CLOSURES = {
    "dlbridge::cpu::vmath::through_f32_typed::": "a block's float32 kernel is vmath::run, a twin! of its own",
    "dlbridge::cpu::round_once::": "the generic steps, for the rare block holding a midpoint",
}


# Functions compiled for the AVX-512 copies' features, which must inline
# there: called, each passes its chunk through memory (a call per 64
# elements) and the copy loses what it was written for.
INLINED_IN_AVX512 = {
    "dlbridge::cpu::narrow::bf16x::narrow_registers": "bfloat16 chunks rounded from registers",
}


def closures_called_by_twin_copies(disassembly):
    """(twin! copy, callee) for each call from a function named
    `...::avx2` or `...::avx512` (a twin! copy, src/cpu/isa.rs) to a
    dlbridge closure not in CALLED_CLOSURES, and from an `...::avx512` copy
    to a function of INLINED_IN_AVX512, in `objdump -d -C` output."""
    found, caller = set(), None
    for line in disassembly.splitlines():
        if m := re.match(r"^[0-9a-f]+ <(.*)>:$", line):
            caller = m.group(1)
        elif caller and "\tcall " in line and (copy := re.search(r"::avx(2|512)(\.llvm\.\d+)?$", caller)):
            # The name between the address's `<` and the line's last `>` (std's
            # names hold `<` and `>` of their own).
            target = re.search(r"\tcall\s+[0-9a-f]+ <(.*)>\s*$", line)
            callee = re.sub(r"\.llvm\.\d+$", "", target.group(1) if target else "")
            closure = callee.startswith("dlbridge::") and "{{closure}}" in callee and not callee.startswith(tuple(CALLED_CLOSURES))
            # std's `impl Fn for &F` shim: a closure reached through a
            # reference, its body inlined into the shim and so compiled for
            # the baseline (float64 `pow` behind one ran 10x slower than libm).
            closure = closure or callee.startswith("core::ops::function::impls::")
            if closure or (copy.group(1) == "512" and callee.startswith(tuple(INLINED_IN_AVX512))):
                found.add((re.sub(r"\.llvm\.\d+$", "", caller), callee))
    return sorted(found)


def test_closures_called_by_twin_copies_are_found():
    """closures_called_by_twin_copies reads objdump's lines as objdump
    writes them: a call from a twin! copy to a closure is found, one to an
    allowed closure or from another function is not."""
    text = (
        "0000000000001000 <dlbridge::cpu::row_groups::add_rows::avx512>:\n"
        "    1004:\tcall   2000 <dlbridge::cpu::row_groups::add_rows_grouped::{{closure}}.llvm.123>\n"
        "    1008:\tcall   3000 <dlbridge::cpu::vmath::through_f32_typed::{{closure}}::{{closure}}>\n"
        "0000000000004000 <dlbridge::cpu::reduce::by_rows>:\n"
        "    4004:\tcall   2000 <dlbridge::cpu::reduce::by_rows::{{closure}}>\n"
        "0000000000005000 <dlbridge::cpu::elementwise::row_into::avx512>:\n"
        "    5004:\tcall   6000 <dlbridge::cpu::narrow::bf16x::narrow_registers>\n"
        "0000000000007000 <dlbridge::cpu::elementwise::row_into::avx2>:\n"
        "    7004:\tcall   6000 <dlbridge::cpu::narrow::bf16x::narrow_registers>\n"
        "    7008:\tcall   8000 <core::ops::function::impls::<impl core::ops::function::Fn<A> for &F>::call>\n"
    )
    assert closures_called_by_twin_copies(text) == [
        ("dlbridge::cpu::elementwise::row_into::avx2", "core::ops::function::impls::<impl core::ops::function::Fn<A> for &F>::call"),
        ("dlbridge::cpu::elementwise::row_into::avx512", "dlbridge::cpu::narrow::bf16x::narrow_registers"),
        ("dlbridge::cpu::row_groups::add_rows::avx512", "dlbridge::cpu::row_groups::add_rows_grouped::{{closure}}"),
    ]


@pytest.mark.skipif(platform.machine() != "x86_64" or not sys.platform.startswith("linux"), reason="twin! copies are x86-64 only; reads an ELF module")
@pytest.mark.skipif(bool(os.environ.get("DLBRIDGE_ASAN_RUNTIME")), reason="the AddressSanitizer build is a debug build: nothing is inlined there")
def test_twin_copies_call_no_closure_compiled_for_the_baseline():
    """In the built module, no AVX2 or AVX-512 copy of a hot loop calls a
    closure of dlbridge's (but CALLED_CLOSURES): such a closure was compiled
    for the baseline, so the copy would run its loop without AVX2 or
    AVX-512 (the ISA test above cannot see that: the bits are the same).
    Nor does an AVX-512 copy call what must inline there (INLINED_IN_AVX512)."""
    objdump = shutil.which("objdump")
    if objdump is None:
        pytest.skip("objdump (binutils) is not installed")
    r = subprocess.run([objdump, "-d", "-C", "--no-show-raw-insn", db._core.__file__], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert re.search(r"::avx512>:$", r.stdout, re.M), "no twin! copy found: the symbol table is stripped"
    assert closures_called_by_twin_copies(r.stdout) == []


THREAD_NAMES = r"""
import glob, sys, time, dlbridge as db
a = db.ones(1_000_000)
(a + a).sum()
def helpers():
    names = []
    for p in glob.glob("/proc/self/task/*/comm"):
        try:
            names.append(open(p).read().strip())
        except OSError:  # a thread that ended meanwhile
            pass
    return sorted(n for n in names if n.startswith("dlbridge-cpu"))
# A new thread names itself once it runs: wait for the expected set (up to
# 10 s), then look again a moment later (no more come).
want, end = int(sys.argv[1]) - 1, time.monotonic() + 10
while len(helpers()) < want and time.monotonic() < end:
    time.sleep(0.01)
time.sleep(0.2)
print(helpers())
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads thread names from /proc")
@pytest.mark.parametrize("threads", [1, 3])
def test_large_loops_use_the_caller_and_threads_minus_one_helpers(threads):
    """The calling thread takes part, so DLBRIDGE_NUM_THREADS=N starts N - 1
    helper threads (none for 1), not a pool of N beside the caller."""
    env = python_env(dict(os.environ, DLBRIDGE_NUM_THREADS=str(threads)))
    r = subprocess.run([sys.executable, "-c", THREAD_NAMES, str(threads)], env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == str([f"dlbridge-cpu-{i}" for i in range(threads - 1)])
