"""``dlbridge.cuda``: device queries, mirroring ``torch.cuda``.

dlbridge loads the CUDA driver and NVRTC at run time, so the same wheel works
with or without a GPU: without one, ``is_available()`` is False and every
CUDA request raises ``RuntimeError`` saying no CUDA device or driver was found.

All of dlbridge's GPU work runs on each device's legacy default stream (the
default stream of PyTorch and CuPy too), in the device's primary context.
"""

from . import _core


def is_available() -> bool:
    """Whether a CUDA driver and at least one device can be used."""
    return _core.cuda_is_available()


def device_count() -> int:
    """Number of usable CUDA devices (0 without a driver)."""
    return _core.cuda_device_count()


def current_device() -> int:
    """The device ``'cuda'`` means: always 0 (dlbridge has no ``set_device``)."""
    return _core.cuda_current_device()


def synchronize(device=None) -> None:
    """Waits for all of dlbridge's work on a device (every device when None)."""
    _core.cuda_synchronize(device)


def empty_cache() -> None:
    """Gives dlbridge's cached free GPU memory back to the driver, so other
    libraries can allocate it (like ``torch.cuda.empty_cache()``). dlbridge
    keeps freed memory in its pool otherwise, as PyTorch's allocator does."""
    _core.cuda_empty_cache()


def get_device_name(device=None) -> str:
    """The device's marketing name, e.g. ``'NVIDIA H100 80GB HBM3'``."""
    return _core.cuda_get_device_name(device)


def get_device_capability(device=None) -> tuple:
    """``(major, minor)`` compute capability."""
    return _core.cuda_get_device_capability(device)


def unavailable_reason():
    """Why CUDA cannot be used here (``None`` when it can)."""
    return _core.cuda_unavailable_reason()


def nvrtc_version() -> tuple:
    """``(major, minor)`` of the NVRTC library dlbridge compiles its kernels with.

    Raises ``RuntimeError`` when no NVRTC library can be found. Needs no GPU.
    """
    return _core.cuda_nvrtc_version()


def nvrtc_path():
    """The NVRTC file dlbridge found and loaded itself (None when it came
    from the loader's search path, or has not been loaded yet)."""
    return _core.cuda_nvrtc_path()


def compile_kernels(arch: str) -> dict:
    """Compiles every kernel in ``kernels/`` for ``arch`` (``'sm_90'``, say)
    with NVRTC and returns ``{file name: cubin size in bytes}``.

    A diagnostic that needs no GPU (the CI runs it); kernels used for real are
    compiled per device on first use and cached (see ``kernel_cache_dir``).
    """
    return dict(_core.cuda_compile_kernels(arch))


def kernel_cache_dir():
    """Where compiled kernels are cached on disk (``DLBRIDGE_CACHE_DIR``
    overrides it; an empty value turns the disk cache off)."""
    return _core.cuda_kernel_cache_dir()
