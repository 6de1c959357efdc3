"""dlbridge: zero-copy tensors between NumPy, PyTorch, JAX, CuPy and C, via DLPack.

The API follows PyTorch's: ``dlbridge.from_numpy``, ``Tensor.numpy``,
``dlbridge.from_dlpack``, ``Tensor.to`` and friends behave as their ``torch``
namesakes, and every tensor speaks the DLPack Python protocol.
"""

from . import _core, cuda, return_types
from ._core import (
    Tensor,
    add,
    arange,
    as_tensor,
    asarray,
    bfloat16,
    bool,
    cdouble,
    cfloat,
    chalf,
    complex32,
    complex64,
    complex128,
    device,
    div,
    divide,
    double,
    dtype,
    empty,
    empty_like,
    eye,
    float,
    float16,
    float32,
    float64,
    float4_e2m1fn,
    float4_e2m1fn_x2,
    float6_e2m3fn,
    float6_e3m2fn,
    float8_e3m4,
    float8_e4m3,
    float8_e4m3b11fnuz,
    float8_e4m3fn,
    float8_e4m3fnuz,
    float8_e5m2,
    float8_e5m2fnuz,
    float8_e8m0fnu,
    from_dlpack,
    from_numpy,
    full,
    full_like,
    half,
    int,
    int8,
    int16,
    int32,
    int64,
    long,
    manual_seed,
    mul,
    multiply,
    neg,
    negative,
    ones,
    ones_like,
    rand,
    rand_like,
    short,
    sub,
    subtract,
    tensor,
    true_divide,
    uint8,
    uint16,
    uint32,
    uint64,
    zeros,
    zeros_like,
)

# A Rust panic inside dlbridge surfaces as pyo3's PanicException, a
# BaseException that `except Exception` would let through. Rebased onto
# RuntimeError (same instance layout), it is an ordinary, catchable error.
try:
    _core._panic_exception_type().__bases__ = (RuntimeError,)
except TypeError:  # pragma: no cover - an interpreter that forbids it keeps pyo3's class
    pass
from ._formatting import format_tensor as _format_tensor
from . import _sharing

_sharing.install()  # shared tensors through multiprocessing queues and pipes, as handles

__version__ = "0.1.0"


class Size(tuple):
    """A tensor's shape: a tuple that prints as ``dlbridge.Size([2, 3])``."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"dlbridge.Size({list(self)!r})"

    def numel(self) -> "_builtins.int":
        n = 1
        for d in self:
            n *= d
        return n


def _repr(t: Tensor) -> str:
    """``repr(t)`` exactly as PyTorch prints it, with the ``dlbridge.`` prefix."""
    host = t.detach() if t.device.type == "cpu" else t.detach().cpu()
    if host.dtype == float4_e2m1fn_x2:
        # Two values per element and no single number for either, as in PyTorch: the
        # elements print as their bytes.
        host = host.view(uint8)
    elif host.dtype == complex32:
        host = host.to(complex64)
    elif host.dtype == bfloat16 or host.dtype.itemsize == 1 and host.dtype.is_floating_point:
        host = host.float()  # NumPy has no bfloat16 or float8; torch prints them through float too
    return _format_tensor(host.numpy(), t.dtype.__repr__().split(".")[1], str(t.device), t.requires_grad)


def _dtype_by_name(name: str) -> dtype:
    """Unpickling support for dtype objects."""
    return getattr(_core, name)


import builtins as _builtins  # noqa: E402  (after the dtype names that shadow builtins)
from typing import TYPE_CHECKING as _TYPE_CHECKING  # noqa: E402

__all__ = [
    "Size", "Tensor", "arange", "bfloat16", "bool", "cdouble", "cfloat", "complex64", "complex128",
    "cuda", "device", "double", "dtype", "empty", "empty_like", "eye", "float", "float16", "float32",
    "float64", "from_dlpack", "from_numpy", "full", "full_like", "half", "int", "int8", "int16",
    "int32", "int64", "long", "manual_seed", "ones", "ones_like", "rand", "rand_like", "short",
    "tensor", "uint8", "uint16", "uint32", "uint64", "zeros", "zeros_like", "return_types",
    "chalf", "complex32", "float4_e2m1fn", "float4_e2m1fn_x2", "float6_e2m3fn", "float6_e3m2fn",
    "float8_e3m4", "float8_e4m3", "float8_e4m3b11fnuz", "float8_e4m3fn", "float8_e4m3fnuz",
    "float8_e5m2", "float8_e5m2fnuz", "float8_e8m0fnu",
    "abs", "pow", "sum", "mean", "max", "min", "amax", "amin", "eq", "ne", "lt", "le", "gt", "ge",
    "as_tensor", "asarray", "all", "any", "argmax", "argmin", "squeeze",
    "add", "sub", "subtract", "mul", "multiply", "div", "divide", "true_divide", "neg", "negative",
]


def __dir__() -> "list[str]":
    """``dir(dlbridge)``: the public API (``__all__``) and ``__version__``, no
    private modules or helpers."""
    return sorted([*__all__, "__version__"])


# ----- the functional forms of Tensor methods, as torch.abs(t), torch.sum(t, 0), ...
# (defined last: they shadow builtins of the same names in this module)


def _not_a_tensor(name: str, input) -> TypeError:
    """PyTorch's error for a functional form given something else than a tensor."""
    return TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")


def _functional(name: str):
    def f(input: Tensor, *args, **kwargs):
        if not isinstance(input, Tensor):
            raise _not_a_tensor(name, input)
        return getattr(input, name)(*args, **kwargs)

    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"``dlbridge.{name}(input, ...)``: the same as ``input.{name}(...)``."
    return f


if _TYPE_CHECKING:  # for type checkers: the methods' own signatures, the tensor first
    abs = Tensor.abs
    pow = Tensor.pow
    sum = Tensor.sum
    mean = Tensor.mean
    max = Tensor.max
    min = Tensor.min
    amax = Tensor.amax
    amin = Tensor.amin
    eq = Tensor.eq
    ne = Tensor.ne
    lt = Tensor.lt
    le = Tensor.le
    gt = Tensor.gt
    ge = Tensor.ge
    all = Tensor.all
    any = Tensor.any
    argmax = Tensor.argmax
    argmin = Tensor.argmin
    squeeze = Tensor.squeeze
    exp = Tensor.exp  # the generated ops (installed below at run time)
    log = Tensor.log
    sqrt = Tensor.sqrt
    maximum = Tensor.maximum
    minimum = Tensor.minimum
    # a number may come first in these (remainder(5, t)): their own stubs, re-exported
    from ._core import bitwise_and as bitwise_and
    from ._core import bitwise_or as bitwise_or
    from ._core import bitwise_xor as bitwise_xor
    from ._core import floor_divide as floor_divide
    from ._core import remainder as remainder

    bitwise_not = Tensor.bitwise_not
    fmod = Tensor.fmod
else:
    abs = _functional("abs")
    pow = _functional("pow")
    sum = _functional("sum")
    mean = _functional("mean")
    max = _functional("max")
    min = _functional("min")
    amax = _functional("amax")
    amin = _functional("amin")
    eq = _functional("eq")
    ne = _functional("ne")
    lt = _functional("lt")
    le = _functional("le")
    gt = _functional("gt")
    ge = _functional("ge")
    all = _functional("all")
    any = _functional("any")
    argmax = _functional("argmax")
    argmin = _functional("argmin")
    squeeze = _functional("squeeze")


# ----- the ops generated from the op tables of src/backend.rs: t.exp(), t.exp_(),
# dlbridge.exp(t); t.maximum(other), dlbridge.maximum(a, b). The methods are on Tensor
# already (src/python/generated.rs); the functions are exported here.
for _name, _kind in _core._generated_ops():
    globals()[_name] = getattr(_core, _name)
    __all__.append(_name)
del _name, _kind
