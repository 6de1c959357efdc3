"""docs/tour.md's API, typed: `mypy --strict` must accept this file as written
(tests/python/test_typing.py runs it, and runs the script itself so it stays true
to what the runtime accepts). Every call here is one the runtime takes."""

from typing import List, Tuple

import numpy as np

import dlbridge as db


def creation() -> List[db.Tensor]:
    a = np.array([0.0, 1.0, 2.0])
    t = db.from_numpy(a)
    made = [
        t,
        db.from_numpy(np.eye(3)).type(db.float32),
        db.Tensor(np.array([5, 7, 1], dtype=np.int32)),
        db.Tensor(2, 3),
        db.tensor([0.0, 1.0, 2.0]),
        db.tensor([[1, 2], [3, 4]], dtype=db.int64, device="cpu"),
        db.zeros(2, 3),
        db.zeros((2, 3), dtype=db.float64),
        db.ones([2, 3], device=db.device("cpu")),
        db.empty(4),
        db.full((2, 2), 1.5),
        db.arange(6),
        db.arange(0, 1, 0.25, dtype=db.float64),
        db.eye(3, 4),
        db.rand(2, 2),
        db.zeros_like(t),
        db.ones_like(t, dtype=db.int32),
        db.empty_like(t),
        db.full_like(t, 7),
        db.rand_like(t),
    ]
    db.manual_seed(0)
    return made


def metadata(t: db.Tensor) -> Tuple[int, ...]:
    shape: db.Size = t.shape
    size: db.Size = t.size()
    n: int = t.size(0) + t.dim() + t.ndim + t.numel() + t.element_size() + t.nbytes + t.data_ptr()
    strides: Tuple[int, ...] = t.stride()
    flags: List[bool] = [t.is_contiguous(), t.is_cuda, t.is_read_only, t.requires_grad]
    dev: db.device = t.device
    kind: str = dev.type
    dt: db.dtype = t.dtype
    assert shape == size and n >= 0 and flags and kind and dt.itemsize > 0
    return (shape.numel(), *strides)


def conversions(t: db.Tensor) -> List[db.Tensor]:
    return [
        t.to("cpu"),
        t.to(db.float64),
        t.to("cpu", db.int32),
        t.to(db.device("cpu"), dtype=db.float16),
        t.to(dtype=db.int8, copy=True),
        t.to(device="cpu"),
        t.to(t),
        t.cpu(),
        t.float(), t.double(), t.half(), t.bfloat16(), t.int(), t.long(), t.bool(),
        t.clone(), t.contiguous(), t.detach(), t.requires_grad_(False),
    ]


def views(t: db.Tensor) -> List[db.Tensor]:
    m = t.reshape(2, 3)
    return [
        m.T, m.t(), m.transpose(0, 1),
        m.permute(1, 0), m.permute((1, 0)), m.permute([1, 0]),
        m.unsqueeze(0),
        m.expand(2, 2, 3), m.expand((2, 2, 3)),
        m.view(6), m.view(-1), m.view((3, 2)), m.view([-1]), m.view(db.int32),
        m.reshape(3, 2), m.reshape((6,)), m.reshape([-1, 1]),
        m.flatten(), m.flatten(0, -1),
        m[0], m[:, 1:], m[..., None], m[::2],
    ]


def arithmetic(t: db.Tensor) -> List[db.Tensor]:
    a = np.ones(t.shape, dtype=np.float32)
    u = t + 1
    u = u - t * 2.0 / (t + 1)
    u = 1 + u + a
    u += 1
    u *= t
    u.add_(1).sub_(t).mul_(2).div_(3)
    u[0] = 5
    return [
        -u, abs(u), u ** 2, 2 ** u, u.pow(2), u.pow_(1),
        u == t, u != 1, u < t, u <= a, u > 0, u >= 1,
        u.eq(t), u.ne(1), u.lt(t), u.le(1), u.gt(t), u.ge(1),
        u.sum(), u.sum(0), u.sum((0,), keepdim=True), u.mean(dtype=db.float64),
        u.amax(), u.amin(0), u.max(), u.min(),
        u.max(0).values, u.min(0, keepdim=True).indices,
        db.sum(u), db.abs(u), db.max(u),
        u // 2, 3 % (u + 1), db.floor_divide(7, u + 1), db.remainder(u, 2.5), db.fmod(u, 2),
        db.add(1, u, alpha=2), db.sub(u, t), u.div(2, rounding_mode="floor"),
        u.fill_(0), u.zero_(), u.copy_(t),
    ]


def values(t: db.Tensor) -> None:
    one = t.reshape(-1)[0]
    x: float = float(one)
    i: int = int(one.long())
    item = one.item()
    listed = t.tolist()
    array: np.ndarray = t.numpy()
    assert len(t) >= 0 and (x, i, item, listed, array.shape) is not None


def exchange(t: db.Tensor) -> db.Tensor:
    capsule = t.__dlpack__(max_version=(1, 3))
    assert capsule is not None
    kind, index = t.__dlpack_device__()
    assert kind == 1 and index == 0
    back = db.from_dlpack(np.from_dlpack(t))
    return db.from_dlpack(back, device="cpu", copy=True)


def main() -> None:
    made = creation()
    t = db.arange(6, dtype=db.float32).reshape(2, 3)
    assert metadata(t)
    assert len(conversions(t)) == 19
    assert views(t.reshape(-1))
    assert arithmetic(t.clone())
    values(t)
    exchange(t)
    assert db.cuda.is_available() in (True, False)
    print(f"tour_typed: {len(made)} tensors made, every call accepted")


if __name__ == "__main__":
    main()
