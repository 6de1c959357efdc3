"""Tensors through ``multiprocessing`` queues and pipes, as ``torch.multiprocessing`` sends them.

dlbridge registers a reducer for ``dlbridge.Tensor`` with
``multiprocessing.reduction.ForkingPickler`` (the pickler behind every queue,
pipe, pool and ``Process`` argument, for the spawn, forkserver and fork start
methods):

- a host tensor whose storage is in shared memory (``share_memory_()``, or one
  received that way) travels as a handle: the segment's file descriptor,
  passed with ``multiprocessing.reduction.DupFd``, plus its length and the
  tensor's own layout. No byte is copied whatever the size, and a write in one
  process shows in every other;
- a CUDA tensor whose memory is dlbridge's own travels as a CUDA IPC handle:
  dlbridge's (exportable) memory pool as a file descriptor, again passed with
  ``DupFd``, and the driver's record of the allocation. The sender must keep
  the tensor alive while any receiver uses it (PyTorch's rule too). CUDA
  memory another library owns (``from_dlpack``) is refused: send ``t.clone()``;
- any other tensor goes by value, through ordinary pickling (``__reduce_ex__``).

Unlike ``torch.multiprocessing``, sending a tensor that is not shared does not
move it into shared memory behind the caller's back: call ``share_memory_()``
first to send a handle.

Importing ``multiprocessing`` costs about 10 ms, so importing dlbridge does not
do it: the reducer is registered as soon as ``multiprocessing.reduction`` is
imported, by whoever imports it (at once if it already is).
"""

import os
import sys

from . import _core

_REDUCTION = "multiprocessing.reduction"


def _reduce(t):
    """``ForkingPickler``'s reducer for ``dlbridge.Tensor``."""
    handle = t._share_handle()
    if handle is None:
        return t.__reduce_ex__(4)
    from multiprocessing.reduction import DupFd

    kind, fd, rest = handle[0], handle[1], tuple(handle[2:])
    rebuild = {"fd": _rebuild_from_fd, "cuda": _rebuild_from_cuda}[kind]
    return rebuild, (DupFd(fd),) + rest


def _rebuild_from_fd(dup_fd, nbytes, dtype, shape, strides, offset, read_only, requires_grad):
    """The receiving side of a host handle: maps the segment (the descriptor is closed after)."""
    fd = dup_fd.detach()
    try:
        return _core._rebuild_shared_fd(fd, nbytes, dtype, shape, strides, offset, read_only, requires_grad)
    finally:
        os.close(fd)


def _rebuild_from_cuda(dup_fd, *handle):
    """The receiving side of a CUDA IPC handle (the pool's descriptor is closed after;
    the driver keeps what it needs)."""
    fd = dup_fd.detach()
    try:
        return _core._rebuild_shared_cuda(fd, *handle)
    finally:
        os.close(fd)


def _register(reduction):
    reduction.ForkingPickler.register(_core.Tensor, _reduce)


class _WhenReductionImported:
    """A one-shot import hook: registers the reducer right after
    ``multiprocessing.reduction`` has been imported."""

    def find_spec(self, name, path=None, target=None):
        if name != _REDUCTION:
            return None
        sys.meta_path.remove(self)
        import importlib.util

        spec = importlib.util.find_spec(name)  # the ordinary finders' answer
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        spec.loader = _RegisteringLoader(spec.loader)
        return spec


class _RegisteringLoader:
    """Wraps the module's own loader and registers once the module has run."""

    def __init__(self, loader):
        self._loader = loader

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        self._loader.exec_module(module)
        _register(module)

    def __getattr__(self, name):  # get_source, is_package, ... as the wrapped loader
        return getattr(self._loader, name)


def install():
    """Registers the reducer now, or when ``multiprocessing.reduction`` is first imported."""
    reduction = sys.modules.get(_REDUCTION)
    if reduction is not None:
        _register(reduction)
    elif not any(isinstance(f, _WhenReductionImported) for f in sys.meta_path):
        sys.meta_path.insert(0, _WhenReductionImported())
