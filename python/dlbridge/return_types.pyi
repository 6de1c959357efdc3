"""Type stubs for ``dlbridge.return_types``: named (values, indices) tuples."""

from typing import NamedTuple

from ._core import Tensor

__all__ = ["max", "min"]

class max(NamedTuple):
    values: Tensor
    indices: Tensor

class min(NamedTuple):
    values: Tensor
    indices: Tensor
