"""Tensor ``repr``/``str`` formatting that matches PyTorch character for character.

This is a NumPy port of the parts of ``torch/_tensor_str.py`` (``_Formatter``,
``_tensor_str``, ``_str_intern``, ``_add_suffixes``) that apply to dense,
strided tensors, with ``dlbridge.`` in place of ``torch.`` in dtype names.
Only torch's default print options are supported.

Values arrive as a host ``numpy.ndarray``.  Every float dtype widens exactly to
a Python float (float64), and that is also what torch formats (it calls
``.item()`` / ``.tolist()``), so formatting the widened values reproduces torch
for float16 and bfloat16 as well.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["format_tensor"]

# torch's default print options (torch._tensor_str.PRINT_OPTS).
PRECISION = 4
THRESHOLD = 1000
EDGEITEMS = 3
LINEWIDTH = 80

# Dtypes torch leaves out of the repr of a non-empty tensor (with the default
# float32 default dtype).  Empty tensors only omit float32, see format_tensor.
_DEFAULT_DTYPES = frozenset({"float32", "int64", "bool", "complex64"})
# The narrow floats print through float32, as bfloat16 does (exact); complex32
# through complex64; float4_e2m1fn_x2's elements as their bytes.
_NARROW_DTYPES = frozenset({
    "float8_e3m4", "float8_e4m3", "float8_e4m3b11fnuz", "float8_e4m3fn", "float8_e4m3fnuz",
    "float8_e5m2", "float8_e5m2fnuz", "float8_e8m0fnu", "float6_e2m3fn", "float6_e3m2fn",
    "float4_e2m1fn",
})
_FLOAT_DTYPES = frozenset({"float16", "bfloat16", "float32", "float64"}) | _NARROW_DTYPES
_COMPLEX_DTYPES = frozenset({"complex64", "complex128", "complex32"})
_INT_DTYPES = frozenset(
    {"uint8", "int8", "int16", "int32", "int64", "uint16", "uint32", "uint64"}
)
# NumPy has no bfloat16: the caller passes its values as float32 (exact).
_NUMPY_DTYPE = {name: name for name in _FLOAT_DTYPES | _COMPLEX_DTYPES | _INT_DTYPES}
_NUMPY_DTYPE.update({"bool": "bool", "bfloat16": "float32", "complex32": "complex64",
                     "float4_e2m1fn_x2": "uint8"})
_NUMPY_DTYPE.update({name: "float32" for name in _NARROW_DTYPES})


class _Formatter:
    """Chooses one number style and column width for a whole tensor (torch's _Formatter)."""

    def __init__(self, values: np.ndarray, floating: bool):
        self.floating = floating
        self.int_mode = True
        self.sci_mode = False
        self.max_width = 1
        flat = values.reshape(-1)

        if not floating:
            for v in flat.tolist():
                self.max_width = max(self.max_width, len(f"{v}"))
            return

        # The style depends only on the nonzero finite values; -0.0 counts as zero.
        vals = flat.astype(np.float64)
        vals = vals[np.isfinite(vals) & (vals != 0)]
        if vals.size == 0:
            return
        abs_vals = np.abs(vals)
        # Python floats: torch divides in float64 too, and overflow gives inf silently.
        vmin, vmax = float(abs_vals.min()), float(abs_vals.max())
        self.int_mode = bool(np.all(vals == np.ceil(vals)))
        self.sci_mode = vmax / vmin > 1000.0 or vmax > 1.0e8 or vmin < 1.0e-4

        if self.sci_mode:
            fmt, extra = f"{{:.{PRECISION}e}}", 0
        elif self.int_mode:
            fmt, extra = "{:.0f}", 1  # +1 for the '.' appended to integral floats
        else:
            fmt, extra = f"{{:.{PRECISION}f}}", 0
        for v in vals.tolist():
            self.max_width = max(self.max_width, len(fmt.format(v)) + extra)

    def width(self) -> int:
        return self.max_width

    def format(self, value) -> str:
        if self.floating:
            if self.sci_mode:
                ret = f"{value:{self.max_width}.{PRECISION}e}"
            elif self.int_mode:
                ret = f"{value:.0f}"
                if not (math.isinf(value) or math.isnan(value)):
                    ret += "."  # marks the tensor as floating point
            else:
                ret = f"{value:.{PRECISION}f}"
        else:
            ret = f"{value}"
        return ret.rjust(self.max_width)


def _format_value(value, fmt1: _Formatter, fmt2: _Formatter | None) -> str:
    """One element; complex values are real part + signed imaginary part + 'j'."""
    if fmt2 is None:
        return fmt1.format(value)
    real_str = fmt1.format(value.real)
    imag_str = (fmt2.format(value.imag) + "j").lstrip()
    # The imaginary part brings its own sign when negative (including -0.0).
    if imag_str[0] in "+-":
        return real_str + imag_str
    return real_str + "+" + imag_str


def _vector_str(arr, indent, summarize, fmt1, fmt2) -> str:
    # Each element takes its width plus ", "; complex adds the imaginary width and 'j'.
    element_length = fmt1.width() + 2
    if fmt2 is not None:
        element_length += fmt2.width() + 1
    per_line = max(1, (LINEWIDTH - indent) // element_length)

    def fmt(items):
        return [_format_value(v, fmt1, fmt2) for v in items.tolist()]

    if summarize and arr.shape[0] > 2 * EDGEITEMS:
        # " ..." occupies one element slot when wrapping lines, as in torch.
        data = fmt(arr[:EDGEITEMS]) + [" ..."] + fmt(arr[-EDGEITEMS:])
    else:
        data = fmt(arr)

    lines = [", ".join(data[i : i + per_line]) for i in range(0, len(data), per_line)]
    return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"


def _tensor_str_with_formatter(arr, indent, summarize, fmt1, fmt2) -> str:
    if arr.ndim == 0:
        return _format_value(arr.item(), fmt1, fmt2)
    if arr.ndim == 1:
        return _vector_str(arr, indent, summarize, fmt1, fmt2)

    n = arr.shape[0]
    if summarize and n > 2 * EDGEITEMS:
        rows = list(range(EDGEITEMS)) + [None] + list(range(n - EDGEITEMS, n))
    else:
        rows = list(range(n))
    slices = [
        "..."
        if i is None
        else _tensor_str_with_formatter(arr[i], indent + 1, summarize, fmt1, fmt2)
        for i in rows
    ]
    # Sub-blocks of a k-d tensor are separated by k-1 newlines.
    sep = "," + "\n" * (arr.ndim - 1) + " " * (indent + 1)
    return "[" + sep.join(slices) + "]"


def _summarized_data(arr: np.ndarray) -> np.ndarray:
    """The elements a summarized print shows; the formatter sizes columns from these only."""
    if arr.ndim == 0:
        return arr
    if arr.ndim == 1:
        if arr.shape[0] > 2 * EDGEITEMS:
            return np.concatenate((arr[:EDGEITEMS], arr[-EDGEITEMS:]))
        return arr
    n = arr.shape[0]
    if n > 2 * EDGEITEMS:
        rows = list(range(EDGEITEMS)) + list(range(n - EDGEITEMS, n))
    else:
        rows = list(range(n))
    return np.stack([_summarized_data(arr[i]) for i in rows])


def _tensor_str(arr: np.ndarray, dtype_name: str, indent: int) -> str:
    summarize = arr.size > THRESHOLD
    shown = _summarized_data(arr) if summarize else arr
    if dtype_name in _COMPLEX_DTYPES:
        # Real and imaginary parts get independent formatters, as in torch.
        fmt1 = _Formatter(shown.real, floating=True)
        fmt2 = _Formatter(shown.imag, floating=True)
    else:
        fmt1 = _Formatter(shown, floating=dtype_name in _FLOAT_DTYPES)
        fmt2 = None
    return _tensor_str_with_formatter(arr, indent, summarize, fmt1, fmt2)


def _add_suffixes(tensor_str: str, suffixes: list, indent: int) -> str:
    # torch measures the last line as len - rfind('\n') + 1 (one more than its
    # visible length, two more for a single line); kept as-is so wrapping matches.
    parts = [tensor_str]
    last_line_len = len(tensor_str) - tensor_str.rfind("\n") + 1
    for suffix in suffixes:
        if last_line_len + len(suffix) + 2 > LINEWIDTH:
            parts.append(",\n" + " " * indent + suffix)
            last_line_len = indent + len(suffix)
        else:
            parts.append(", " + suffix)
            last_line_len += len(suffix) + 2
    parts.append(")")
    return "".join(parts)


def format_tensor(values, dtype_name: str, device: str, requires_grad: bool = False) -> str:
    """Return the string torch's ``repr(tensor)`` gives, with ``dlbridge.`` dtype names.

    values: a numpy.ndarray holding the tensor's values on the host (any shape,
      incl. 0-d and empty, any strides).
    dtype_name: one of bool uint8 int8 int16 int32 int64 uint16 uint32 uint64
      float16 bfloat16 float32 float64 complex64 complex128.  For bfloat16 pass a
      float32 array holding the bf16 values.
    device: 'cpu' or 'cuda:N'.  requires_grad: appends ``requires_grad=True``.

    The result equals ``repr(t).replace("torch.", "dlbridge.")`` for the same
    torch tensor, including where suffixes wrap (decided on torch's names).
    """
    if dtype_name not in _NUMPY_DTYPE:
        raise ValueError(f"unsupported dtype name: {dtype_name!r}")
    # Coerce so a caller passing e.g. uint8 for bool still prints like torch.
    arr = np.asarray(values).astype(_NUMPY_DTYPE[dtype_name], copy=False)

    prefix = "tensor("
    indent = len(prefix)
    suffixes = []
    # Suffix order follows torch's _str_intern: device, size, dtype, requires_grad.
    if device != "cpu":
        suffixes.append(f"device='{device}'")
    if arr.size == 0:
        # Shape is printed unless it is (0,); dtype unless it is the default
        # float32 (no elements to tell an int64 or bool tensor apart).
        if arr.ndim != 1:
            suffixes.append(f"size={tuple(arr.shape)}")
        if dtype_name != "float32":
            suffixes.append(f"dtype=torch.{dtype_name}")
        tensor_str = "[]"
    else:
        if dtype_name not in _DEFAULT_DTYPES:
            suffixes.append(f"dtype=torch.{dtype_name}")
        tensor_str = _tensor_str(arr, dtype_name, indent)
    if requires_grad:
        suffixes.append("requires_grad=True")
    # Wrap with torch's dtype names, then rename: line breaks then fall exactly
    # where torch puts them, even though "dlbridge." is 3 characters longer.
    out = _add_suffixes(prefix + tensor_str, suffixes, indent)
    return out.replace("dtype=torch.", "dtype=dlbridge.")
