"""What the child processes of test_engines.py run: spawned pools, Ray workers,
Dask workers and DataLoader workers.

A module of its own, importing only NumPy and dlbridge, so that a child
unpickles these functions by reference without importing torch, Ray, Dask or
the test module. Torch is imported inside the functions that need it (they run
in DataLoader workers, where torch is loaded anyway).
"""

import os

import numpy as np

import dlbridge as db


def whoami():
    """This process's pid, and the dlbridge package and extension it imported."""
    return os.getpid(), db.__file__, db._core.__file__


def describe(t):
    """What a receiver sees of a tensor: everything a round trip must keep, and
    whether it may be written."""
    return dict(type=type(t).__name__, dtype=str(t.dtype), shape=tuple(t.shape), stride=t.stride(),
                requires_grad=t.requires_grad, read_only=t.is_read_only,
                data=t.detach().contiguous().numpy().tobytes())


def echo(tensors):
    """The tensors back, with this process's pid and what it saw of each."""
    return os.getpid(), [describe(t) for t in tensors], tensors


def mapping_of(address):
    """The path of the mapping in /proc/self/maps that holds `address` ("" for an
    anonymous one, "[heap]" for the heap), or None when no mapping holds it."""
    with open("/proc/self/maps") as f:
        for line in f:
            fields = line.split(maxsplit=5)
            lo, hi = (int(x, 16) for x in fields[0].split("-"))
            if lo <= address < hi:
                return fields[5].strip() if len(fields) > 5 else ""
    return None


def where_it_lies(x):
    """For a dlbridge tensor or a NumPy array received here: the mapping its data
    lies in, whether it is read-only, and its values' checksum."""
    if isinstance(x, np.ndarray):
        return mapping_of(x.__array_interface__["data"][0]), not x.flags.writeable, float(x.sum())
    return mapping_of(x.data_ptr()), x.is_read_only, float(x.sum().item())


def affine(t, scale, shift):
    """A new tensor, t * scale + shift, made here."""
    return t * scale + shift


def add_into(t, value):
    """Adds `value` into t in place and returns what t holds afterwards."""
    t.add_(value)
    return t.tolist()


def add_into_torch(x, value):
    """The same with a torch tensor (torch's own pickling, in dlbridge's place)."""
    x.add_(value)
    return x.tolist()


def total(*tensors):
    """A 0-d float64 tensor: the sum of the tensors' sums (a task that takes the
    results of other tasks)."""
    out = db.tensor(0.0, dtype=db.float64)
    for t in tensors:
        out = out + t.double().sum()
    return out


def square_sum(t):
    """A plain float: the sum of t's squares."""
    return float((t * t).sum().item())


def gloo_rank(rank, world, init_file, out):
    """One rank of a torch.distributed group (gloo, on the loopback interface):
    an all_reduce on torch's zero-copy view of a dlbridge tensor, which sums
    into dlbridge's memory, and all_gather_object of dlbridge tensors, which
    pickles them. Puts (rank, the reduced tensor's values, what was gathered)
    on `out`."""
    import datetime

    os.environ["GLOO_SOCKET_IFNAME"] = "lo"
    import torch
    import torch.distributed as dist

    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=60))
    try:
        t = db.full((4,), float(rank + 1))
        dist.all_reduce(torch.from_dlpack(t))
        gathered = [None] * world
        dist.all_gather_object(gathered, db.arange(3, dtype=db.int64) * (rank + 1))
        out.put((rank, t.tolist(), [(type(g).__name__, str(g.dtype), g.tolist()) for g in gathered]))
    finally:
        dist.destroy_process_group()


class TensorDataset:
    """A map-style dataset for torch's DataLoader whose items hold dlbridge
    tensors, and say which DataLoader worker (and process) made them."""

    def __init__(self, n, dtype_name="float32"):
        self.n = n
        self.dtype_name = dtype_name

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        from torch.utils.data import get_worker_info

        info = get_worker_info()
        x = db.full((3,), i, dtype=getattr(db, self.dtype_name))
        return {"x": x, "i": i, "worker": -1 if info is None else info.id, "pid": os.getpid()}


def stack_dlbridge(batch, *, collate_fn_map=None):
    """Stacks a batch of dlbridge tensors into one new dlbridge tensor (one copy,
    as torch.stack makes), dtype kept."""
    return db.from_numpy(np.stack([t.detach().numpy() for t in batch]))


def dlbridge_collate(batch):
    """torch's default_collate, with dlbridge tensors stacked into dlbridge
    tensors: torch's collate with its type map extended by one entry."""
    from torch.utils.data._utils.collate import collate, default_collate_fn_map

    return collate(batch, collate_fn_map={**default_collate_fn_map, db.Tensor: stack_dlbridge})
