"""Error parity: the same mistake raises the same exception class with the same message
in dlbridge as in torch (``torch.`` spelled ``dlbridge.``).

Each case is a function of the module (``db`` or ``torch``) that must raise.
"""

import numpy as np
import pytest
import torch

import dlbridge as db
from conftest import NO_CUDA, without_cuda


def _iadd_float(m):
    t = m.tensor([1, 2])
    t += 1.5


def _set_requires_grad(m):
    m.tensor([1, 2]).requires_grad = True


CASES = {
    "from_numpy(list)": lambda m: m.from_numpy([1, 2]),
    "from_numpy(int)": lambda m: m.from_numpy(3),
    "numpy() with grad": lambda m: m.ones(2, requires_grad=True).numpy(),
    "int += float": _iadd_float,
    "int.add_(float)": lambda m: m.tensor([1, 2]).add_(1.5),
    "int.mul_(float tensor)": lambda m: m.tensor([1, 2]).mul_(m.tensor([1.5, 2.0])),
    "int.div_(int)": lambda m: m.tensor([1, 2]).div_(2),
    "float.add_(complex)": lambda m: m.tensor([1.0]).add_(1j),
    "bool.add_(int)": lambda m: m.tensor([True]).add_(1),
    "bool - bool": lambda m: m.tensor([True]) - m.tensor([False]),  # message: see also test_ops.py
    "-bool": lambda m: -m.tensor([True]),
    "mean(int)": lambda m: m.tensor([1, 2]).mean(),
    "mean(bool)": lambda m: m.tensor([True]).mean(),
    "rand_like(int)": lambda m: m.rand_like(m.ones(2, dtype=m.int8)),
    "rand(int dtype)": lambda m: m.rand(2, dtype=m.int64),
    "item of many": lambda m: m.zeros(3).item(),
    "item of empty": lambda m: m.zeros(0).item(),
    "index out of range": lambda m: m.zeros(2, 3)[2],
    "negative index out of range": lambda m: m.zeros(2, 3)[0, -4],
    "too many indices": lambda m: m.zeros(2)[0, 0],
    "negative step": lambda m: m.zeros(3)[::-1],
    "index 0-d": lambda m: m.tensor(1.0)[0],
    "size(dim) out of range": lambda m: m.zeros(2, 3).size(-3),
    "stride(dim) out of range": lambda m: m.zeros(2, 3).stride(2),
    "len of 0-d": lambda m: len(m.tensor(1.0)),
    "requires_grad on int": _set_requires_grad,
    "tensor(requires_grad) on int": lambda m: m.tensor([1], requires_grad=True),
    "ragged list": lambda m: m.tensor([[1, 2], [3]]),
    "tensor of None": lambda m: m.tensor(None),
    "bool() of many": lambda m: bool(m.zeros(2)),
    "float() of many": lambda m: float(m.zeros(2)),
    "int() of many": lambda m: int(m.zeros(2)),
    "index() of float": lambda m: m.tensor(1.0).__index__(),
    "device('cpu:x')": lambda m: m.device("cpu:x"),
    "device('cuda:-1')": lambda m: m.device("cuda:-1"),
    "dlpack requires grad": lambda m: m.ones(2, requires_grad=True).__dlpack__(),
    "empty negative size": lambda m: m.empty(2, -3),
    "zeros negative size": lambda m: m.zeros(-1),
    "eye negative": lambda m: m.eye(-1),
    "arange zero step": lambda m: m.arange(0, 5, 0),
    "arange wrong sign": lambda m: m.arange(0, 5, -1),
}

# dlbridge adds detail after torch's wording (the shapes, the byte order, a hint): the message
# must start with torch's, up to the given marker.
PREFIX_CASES = {
    "from_numpy(object array)": (lambda m: m.from_numpy(np.array([None, 1], dtype=object)), "numpy.object_."),
    "from_numpy(big-endian)": (lambda m: m.from_numpy(np.arange(2, dtype=">f8")), "native byte order"),
    "shape mismatch": (lambda m: m.zeros(3) + m.zeros(4), "dimension 0"),
    "copy_ shape mismatch": (lambda m: m.zeros(2, 3).copy_(m.zeros(2)), "dimension 1"),
    "device(-1)": (lambda m: m.device(-1), "must not be negative"),
}


def _raised(f, m):
    with pytest.raises(Exception) as info:  # noqa: PT011 - the class is what is compared
        f(m)
    return type(info.value), str(info.value)


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_error_matches_torch(case):
    """Same message; same class, except that a plain RuntimeError stands for torch's
    NotImplementedError (a RuntimeError subclass) here: test_not_implemented_errors_keep_their_class
    checks that class on its own."""
    theirs_type, theirs_msg = _raised(case, torch)
    ours_type, ours_msg = _raised(case, db)
    assert ours_type is theirs_type or (theirs_type is NotImplementedError and ours_type is RuntimeError), \
        f"{ours_type.__name__}: {ours_msg}"
    assert ours_msg == theirs_msg.replace("torch.", "dlbridge.")


@pytest.mark.parametrize("case,marker", PREFIX_CASES.values(), ids=PREFIX_CASES.keys())
def test_error_starts_like_torch(case, marker):
    theirs_type, theirs_msg = _raised(case, torch)
    ours_type, ours_msg = _raised(case, db)
    assert ours_type is theirs_type
    head = theirs_msg[: theirs_msg.index(marker) + len(marker)]
    assert ours_msg.startswith(head), ours_msg


def test_not_implemented_errors_keep_their_class():
    """torch raises NotImplementedError for these; `except NotImplementedError` must catch ours."""
    wrong = {}
    for name, case in CASES.items():
        theirs_type, _ = _raised(case, torch)
        if theirs_type is NotImplementedError:
            ours_type, _ = _raised(case, db)
            if ours_type is not NotImplementedError:
                wrong[name] = ours_type.__name__
    assert not wrong, wrong


# Errors whose wording is dlbridge's own (CUDA, read-only memory, DLPack capsules): checked by
# class and by the documented fragment.


@pytest.mark.parametrize("call", [
    lambda: db.zeros(2, device="cuda"),
    lambda: db.tensor([1.0], device="cuda:0"),
    lambda: db.ones(2).cuda(),
    lambda: db.ones(2).to("cuda"),
    lambda: db.from_dlpack(np.zeros(2), device="cuda"),
    lambda: db.eye(2, device=0),
], ids=["zeros", "tensor", "cuda()", "to", "from_dlpack", "eye"])
@without_cuda()
def test_cuda_errors(call):
    with pytest.raises(RuntimeError, match=NO_CUDA):
        call()


def test_read_only_write_error_is_runtime_error_and_says_why():
    a = np.zeros(2)
    a.flags.writeable = False
    with pytest.raises(RuntimeError, match="(?i)read-only|read only|not writ"):
        db.from_numpy(a).fill_(1)


def test_legacy_export_of_read_only_says_why():
    a = np.zeros(2)
    a.flags.writeable = False
    with pytest.raises(BufferError, match="(?i)read-only"):
        db.from_numpy(a).__dlpack__()


def test_reused_capsule_error():
    c = db.zeros(2).__dlpack__()
    db.from_dlpack(c)
    with pytest.raises(ValueError, match="(?i)consumed"):
        db.from_dlpack(c)


def test_from_dlpack_type_error_names_the_type():
    with pytest.raises(TypeError, match="list"):
        db.from_dlpack([1, 2])
