"""``dlbridge.cuda``: device queries, mirroring ``torch.cuda``.

This build has no CUDA backend yet: ``is_available()`` is False and every
CUDA request raises ``RuntimeError`` saying no CUDA device or driver was found.
"""

from . import _core


def is_available() -> bool:
    """Whether a CUDA device and driver can be used."""
    return _core.cuda_is_available()


def device_count() -> int:
    """Number of usable CUDA devices (0 without a driver)."""
    return _core.cuda_device_count()


def synchronize(device=None) -> None:
    """Waits for all work on a CUDA device to finish."""
    _core.cuda_synchronize()
