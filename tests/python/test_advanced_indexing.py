"""Advanced indexing (index tensors, lists, masks; read and write) against
PyTorch, key by key: the values, shapes, dtypes and error classes and
messages must be torch's."""

import re

import numpy as np
import pytest
import torch

import dlbridge as db


def pair(shape=(2, 3, 4), dtype=torch.int64):
    t = torch.arange(int(np.prod(shape))).reshape(shape).to(dtype)
    return db.from_dlpack(t.clone()), t


def same(d, t):
    """A dlbridge tensor equal to the torch one: shape, dtype name, values."""
    assert tuple(d.shape) == tuple(t.shape)
    assert str(d.dtype).split(".")[1] == str(t.dtype).split(".")[1]
    np.testing.assert_array_equal(np.asarray(d), t.numpy())


def key_for(lib, key):
    """The key with index tensors made in `lib` (torch or dlbridge). A
    top-level nested list is an index tensor, as NumPy reads it and as
    PyTorch announces for 2.9 (this torch still reads it as a tuple, with a
    deprecation warning): torch gets `torch.tensor(key)` for it."""
    if lib is torch and isinstance(key, list) and key and isinstance(key[0], list):
        return torch.tensor(key)
    if isinstance(key, tuple):
        return tuple(key_for(lib, k) for k in key)
    if isinstance(key, torch.Tensor):
        return key if lib is torch else db.from_dlpack(key.clone())
    return key


IDX = torch.tensor([1, 0, 1])
IDX2 = torch.tensor([[0, 1], [1, 0]])
KEYS = [
    [0, 1],
    [1, -1, 0],
    [[0, 1], [1, 0]],
    (slice(None), [0, 2]),
    (slice(None), [2, 0, 1]),
    (..., [0, 3]),
    ([0, 1], slice(None), [1, 2]),  # separated: the index dimension goes first
    (0, slice(None), [0, 1]),  # an integer is basic in torch: (3, 2)
    ([0, 1], [1, 2]),
    ([0, 1], [1, 2], [3, 0]),
    (slice(None), [0, 1], [1, 2]),  # adjacent in the middle
    ([[0], [1]], slice(None), [1, 2]),  # broadcast index shapes
    (None, [0, 1], ..., None),
    ([0, 1], None, [1, 2]),  # None between: not adjacent
    (slice(0, 2), IDX2),
    IDX,
    IDX2,
    (slice(None), IDX),
    ([], slice(None)),
    [],
    (slice(None, None, 2), [1], slice(1, 3)),
    (..., [True, False, True, False]),
    ([True, False],),
    (torch.tensor(1),),  # 0-d integer tensor: an integer
    torch.tensor(True),
    torch.tensor(False),
    (slice(None), torch.tensor([[True, False, True, True], [False] * 4, [True] * 4])),
]


@pytest.mark.parametrize("key", KEYS, ids=repr)
def test_read_matches_torch(key):
    d, t = pair()
    same(d[key_for(db, key)], t[key_for(torch, key)])


@pytest.mark.parametrize("key", KEYS, ids=repr)
def test_write_matches_torch(key):
    d, t = pair()
    d[key_for(db, key)] = -7
    t[key_for(torch, key)] = -7
    same(d, t)


@pytest.mark.parametrize("key", KEYS, ids=repr)
def test_write_a_tensor_matches_torch(key):
    d, t = pair()
    shape = t[key_for(torch, key)].shape
    values = -torch.arange(int(np.prod(shape))).reshape(shape) - 1
    d[key_for(db, key)] = db.from_dlpack(values.clone())
    t[key_for(torch, key)] = values
    same(d, t)


def test_mask_read_and_write_as_in_the_tutorials():
    d, t = pair((3, 4))
    same(d[d > 5], t[t > 5])
    d[d > 5] = 0
    t[t > 5] = 0
    same(d, t)
    d2, t2 = pair((3, 4), torch.float32)
    mask = torch.rand(3, 4) > 0.5
    same(d2[db.from_dlpack(mask.clone())], t2[mask])
    d2[db.from_dlpack(mask.clone())] = db.tensor([1.5]).expand(int(mask.sum()))
    t2[mask] = 1.5
    same(d2, t2)


def test_mask_2d_and_mask_with_slices():
    d, t = pair((2, 3, 4))
    m = t[:, :, 0] % 2 == 0
    same(d[db.from_dlpack(m.clone())], t[m])
    same(d[1:, db.from_dlpack(m[1:].clone()[0])], t[1:, m[1:][0]])
    same(d[db.from_dlpack(m.clone()), 1:3], t[m, 1:3])


def test_index_tensors_of_every_integer_dtype_and_numpy():
    d, t = pair((5,))
    for dt in (db.int8, db.int16, db.int32, db.int64, db.uint8):
        idx = db.tensor([4, 0, 2], dtype=dt)
        if dt == db.uint8:  # uint8 is a mask in torch
            continue
        np.testing.assert_array_equal(np.asarray(d[idx]), [4, 0, 2])
    np.testing.assert_array_equal(np.asarray(d[np.array([4, 0])]), [4, 0])
    np.testing.assert_array_equal(np.asarray(d[torch.tensor([3, 1])]), [3, 1])
    np.testing.assert_array_equal(np.asarray(d[np.array([True, False, True, False, False])]), [0, 2])


def test_the_result_is_a_copy_and_keeps_requires_grad():
    d = db.arange(6.0).reshape(2, 3)
    r = d[[0, 1]]
    r.add_(100)
    assert d[0, 0].item() == 0.0
    g = db.ones(3, requires_grad=True)
    assert g[[0, 2]].requires_grad


def test_repeated_indices_read_repeat_and_write_one_of_them():
    d, t = pair((4,))
    same(d[[1, 1, 3, 1]], t[[1, 1, 3, 1]])
    d[[2, 2]] = 9
    t[[2, 2]] = 9
    same(d, t)


def test_value_of_another_dtype_is_refused_as_torch():
    d, t = pair((4,))
    with pytest.raises(RuntimeError) as te:
        t[[0]] = torch.ones(1)
    with pytest.raises(RuntimeError) as de:
        d[[0]] = db.ones(1)
    assert str(de.value) == str(te.value)
    # numbers and lists take the tensor's dtype
    d[[0, 1]] = 2.7
    d[[2, 3]] = [5, 6]
    assert d.tolist() == [2, 2, 5, 6]


def test_value_the_shape_cannot_broadcast_to():
    d, t = pair((2, 3, 4))
    with pytest.raises(RuntimeError) as te:
        t[[0, 1]] = torch.ones(3, dtype=torch.int64)
    with pytest.raises(RuntimeError) as de:
        d[[0, 1]] = db.ones(3, dtype=db.int64)
    assert str(de.value) == str(te.value)


ERRORS = [
    [5],
    [-3],
    (slice(None), [3]),
    (slice(None), slice(None), [7]),
    ([0], slice(None), [7]),
    ([0], [9]),
    (0, slice(None), [7]),
    ([0, 1], [0, 1, 2]),
    torch.ones(3, dtype=torch.bool),
    (slice(None), torch.ones(2, 4, dtype=torch.bool)),
    torch.ones(2),
    1.5,
    (0, object()),
]


@pytest.mark.parametrize("key", ERRORS, ids=lambda k: re.sub(r" at 0x[0-9a-f]+", "", repr(k)))
def test_errors_match_torch(key):
    d, t = pair()
    with pytest.raises(Exception) as te:
        t[key_for(torch, key)]
    with pytest.raises(Exception) as de:
        d[key_for(db, key)]
    assert type(de.value) is type(te.value)
    assert str(de.value) == str(te.value)
    with pytest.raises(type(te.value)):
        d[key_for(db, key)] = 0


def test_out_of_range_write_leaves_the_tensor_untouched():
    d, _ = pair((3,))
    with pytest.raises(IndexError, match="index 5 is out of bounds for dimension 0 with size 3"):
        d[[0, 5]] = 99
    assert d.tolist() == [0, 1, 2]


@pytest.mark.parametrize(
    "dtype",
    [db.float16, db.bfloat16, db.complex64, db.bool, db.float8_e4m3fn, db.uint64, db.float64],
    ids=str,
)
def test_every_dtype_moves_bit_for_bit(dtype):
    base = db.arange(12).reshape(3, 4).to(dtype) if dtype != db.float8_e4m3fn else db.rand(3, 4).to(dtype)
    got = base[[2, 0], 1:]
    assert got.dtype == dtype

    def bits(x):
        return np.asarray(x.view({1: db.uint8, 2: db.int16, 4: db.int32, 8: db.int64}[x.dtype.itemsize]))

    np.testing.assert_array_equal(bits(got), bits(base)[[2, 0], 1:])


def test_read_only_tensor_refuses_an_indexed_write():
    a = np.arange(4)
    a.flags.writeable = False
    t = db.from_numpy(a)
    with pytest.raises(RuntimeError):
        t[[0]] = 1
    assert a.tolist() == [0, 1, 2, 3]


def test_misaligned_memory():
    buf = bytearray(8 * 6 + 1)
    a = np.frombuffer(memoryview(buf)[1:], dtype=np.int64)
    a[:] = np.arange(6)
    t = db.from_numpy(a)
    assert t[[5, 0]].tolist() == [5, 0]
    t[t > 3] = -1
    assert a.tolist() == [0, 1, 2, 3, -1, -1]


def test_strided_views_and_large_masks():
    big = np.random.default_rng(0).standard_normal((300, 200))
    t = db.from_numpy(big)[:, ::2]
    m = t > 0.5
    np.testing.assert_array_equal(np.asarray(t[m]), big[:, ::2][big[:, ::2] > 0.5])
    t[m] = 0.0
    assert not (big[:, ::2] > 0.5).any()


def test_numpy_scalars_and_0d_arrays_index_as_integers_and_bools():
    d, t = pair((2, 3))
    for key in [np.int64(1), np.int32(-1), np.array(1), (slice(None), np.int16(2)), np.True_, np.False_]:
        # torch refuses NumPy's bool scalars; dlbridge reads them as Python's bools
        tkey = torch.tensor(key) if isinstance(key, np.ndarray) else bool(key) if isinstance(key, np.bool_) else key
        same(d[key], t[tkey])
