"""Exchange with TensorFlow (CPU) through DLPack, both ways (see peer_suite.py).

TensorFlow's `tf.experimental.dlpack.from_dlpack` takes a legacy "dltensor"
capsule only (so the caller calls `t.__dlpack__()`), and every dtype dlbridge
has; its tensors export through `__dlpack__` (legacy capsules). Both ways are
zero-copy for contiguous tensors; TensorFlow refuses strided input and has no
strided tensors or in-place writes of its own.
"""

import os

import numpy as np
import pytest

from dlbridge._peers import BY_NAME

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
# Paddle must come before TensorFlow in one interpreter (the other order crashes it);
# conftest's hook does this too, this keeps the module safe on its own.
from conftest import DTYPE_NAMES, import_paddle  # noqa: E402

import_paddle()
tf = pytest.importorskip(BY_NAME["tensorflow"].module)

import dlbridge as db  # noqa: E402
from peer_suite import ZERO_COPY, Peer, PeerSuite, Refused, capsule_view  # noqa: E402


class TensorFlow(Peer):
    info = BY_NAME["tensorflow"]  # the registry the doctor reads too
    into = dict.fromkeys(DTYPE_NAMES, ZERO_COPY)
    out_of = dict.fromkeys(DTYPE_NAMES, ZERO_COPY)
    into_table = out_of_table = None  # TensorFlow has no DLPack exchange table
    dlpack_keywords = None  # capsules only
    # TensorFlow takes legacy capsules only, and a legacy capsule cannot say read-only.
    read_only_into = Refused(BufferError, "read-only")
    strided_refusal = (tf.errors.InvalidArgumentError, "Invalid strides array from DLPack",
                       "TensorFlow refuses non-contiguous DLPack input (InvalidArgumentError: "
                       "Invalid strides array from DLPack), as it does for torch")
    no_views = "TensorFlow tensors are always dense and C-contiguous: it has no strided tensors to export"
    no_writes = ("TensorFlow tensors are immutable: no in-place writes (tf.Variable, which has them, "
                 "does not export DLPack)")

    def from_dlpack(self, t):
        return tf.experimental.dlpack.from_dlpack(t.__dlpack__())

    def make(self, a):
        return tf.constant(a)

    def capsule(self, x):
        return tf.experimental.dlpack.to_dlpack(x)

    def values(self, x):
        return x.numpy()

    def shape(self, x):
        return tuple(x.shape)

    def dtype_name(self, x):
        return x.dtype.name


class TestTensorFlow(PeerSuite):
    peer = TensorFlow()


def test_tf_from_dlpack_takes_capsules_not_producers():
    t = db.arange(3.0)
    with pytest.raises(TypeError, match="incompatible function arguments"):
        tf.experimental.dlpack.from_dlpack(t)
    x = tf.experimental.dlpack.from_dlpack(t.__dlpack__())
    assert x.numpy().tolist() == [0.0, 1.0, 2.0]


def test_tf_refuses_versioned_capsules():
    with pytest.raises(tf.errors.InvalidArgumentError, match='name "dltensor"'):
        tf.experimental.dlpack.from_dlpack(db.arange(3.0).__dlpack__(max_version=(1, 0)))


def test_tf_tensors_export_legacy_capsules_even_when_asked_for_versioned():
    x = tf.constant([1.0, 2.0])
    c = x.__dlpack__(max_version=(1, 3))
    assert '"dltensor"' in repr(c)
    assert capsule_view(c).shape == (2,)


def test_tf_tensors_arrive_writable():
    # TensorFlow tensors are immutable, but its legacy capsules cannot say so and
    # dlbridge marks only JAX's imports read-only: a write through dlbridge would
    # change the TensorFlow tensor (docs/guarantees.md says not to).
    x = tf.constant([1.0, 2.0, 3.0])
    u = db.from_dlpack(x)
    assert not u.is_read_only
    u.add_(10)
    assert x.numpy().tolist() == [11.0, 12.0, 13.0]


def test_tf_variables_do_not_export_dlpack():
    v = tf.Variable([1.0, 2.0])
    with pytest.raises(TypeError, match="from_dlpack expects an object with __dlpack__"):
        db.from_dlpack(v)
    assert db.from_dlpack(v.read_value()).tolist() == [1.0, 2.0]


def test_values_of_float_data_match():
    a = np.random.default_rng(2).standard_normal((30, 20)).astype(np.float32)
    x = tf.constant(a)
    np.testing.assert_array_equal(db.from_dlpack(x).numpy(), a)
    np.testing.assert_array_equal(tf.experimental.dlpack.from_dlpack(db.from_numpy(a).__dlpack__()).numpy(), a)
