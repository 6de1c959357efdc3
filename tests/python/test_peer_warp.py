"""Exchange with NVIDIA Warp (CPU) through DLPack, both ways (see peer_suite.py).

`wp.from_dlpack(t)` calls `__dlpack__(stream=None)` (a legacy capsule) and
takes strides; Warp arrays export through `__dlpack__` (legacy capsules, which
`db.from_dlpack` asks for again without `max_version`). Both ways are
zero-copy for every dtype but complex (Warp has none); Warp has no 0-d arrays.
"""

import numpy as np
import pytest

from dlbridge._peers import BY_NAME

wp = pytest.importorskip(BY_NAME["warp"].module)
wp.config.quiet = True  # Warp < 1.10
wp.config.log_level = getattr(wp, "LOG_WARNING", 30)  # Warp >= 1.10: no start-up banner
wp.init()  # wp.from_dlpack needs the runtime

import dlbridge as db  # noqa: E402
from conftest import COMPLEX_NAMES, DTYPE_NAMES  # noqa: E402
from peer_suite import ZERO_COPY, Absent, Peer, PeerSuite, Refused  # noqa: E402


class Warp(Peer):
    info = BY_NAME["warp"]  # the registry the doctor reads too
    into = {**dict.fromkeys(DTYPE_NAMES, ZERO_COPY),
            **dict.fromkeys(COMPLEX_NAMES, Refused(RuntimeError, "Warp does not support complex types"))}
    out_of = {**dict.fromkeys(DTYPE_NAMES, ZERO_COPY),
              **dict.fromkeys(COMPLEX_NAMES, Absent(RuntimeError, "Unsupported input data dtype",
                                                    "Warp has no complex arrays"))}
    into_table = out_of_table = None
    dlpack_keywords = {"stream": None}
    read_only_into = Refused(BufferError, "read-only")  # it asks for a legacy capsule
    zero_d_refusal = (IndexError, "list assignment index out of range",
                      "Warp has no 0-d arrays: wp.from_dlpack of a 0-d tensor raises IndexError, "
                      "as it does for torch's")

    def from_dlpack(self, t):
        return wp.from_dlpack(t)

    def make(self, a):
        return wp.array(a, device="cpu")  # a copy Warp owns

    def ptr(self, x):
        return x.ptr

    def values(self, x):
        return x.numpy().copy()

    def shape(self, x):
        return tuple(x.shape)

    def strides(self, x):
        size = wp.types.type_size_in_bytes(x.dtype)
        return tuple(s // size for s in x.strides)

    def dtype_name(self, x):
        return x.dtype.__name__

    def fill(self, x, value):
        x.fill_(value)

    def views(self):
        x = wp.array(np.arange(24, dtype=np.float32).reshape(4, 6), device="cpu")
        return [("transposed", x.transpose()), ("every other row", x[::2]), ("column", x[:, 3])]


class TestWarp(PeerSuite):
    peer = Warp()


def test_warp_has_no_0d_arrays_of_its_own():
    assert wp.array(np.array(2.5, dtype=np.float32), device="cpu").shape == (1,)


def test_warp_kernel_writes_into_dlbridge_memory():
    @wp.kernel
    def double(a: wp.array(dtype=wp.float32)):
        i = wp.tid()
        a[i] = a[i] * 2.0

    t = db.arange(5, dtype=db.float32)
    wp.launch(double, dim=5, inputs=[wp.from_dlpack(t)], device="cpu")
    wp.synchronize()
    assert t.tolist() == [0.0, 2.0, 4.0, 6.0, 8.0]
