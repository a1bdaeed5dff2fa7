"""A tiny torch: 1-D tensors of Python ints with the operations the prefetch path uses
(CODE-PATH.md section 3), and `torch.distributed` forwarding to the collective stand-in."""

from __future__ import annotations

import types
from typing import Iterable


class dtype:  # noqa: N801 - torch's spelling
    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return f"torch.{self.name}"


int32, int64, bool_, uint8 = dtype("int32"), dtype("int64"), dtype("bool"), dtype("uint8")


class Tensor:
    """An immutable-length list of ints (a 0-d tensor holds one value and has `scalar` set)."""

    __slots__ = ("data", "scalar")

    def __init__(self, data: Iterable[int], scalar: bool = False):
        self.data = [int(x) for x in data]
        self.scalar = scalar

    def __len__(self) -> int:
        if self.scalar:
            raise TypeError("len() of a 0-d tensor")
        return len(self.data)

    def numel(self) -> int:
        return len(self.data)

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return Tensor(self.data[idx])
        return Tensor([self.data[idx]], scalar=True)

    def __setitem__(self, idx, value) -> None:
        self.data[idx] = int(value.item() if isinstance(value, Tensor) else value)

    def __iter__(self):
        return (Tensor([x], scalar=True) for x in self.data)

    def fill_(self, value) -> "Tensor":
        """Every element set to `value`, in place (a unit-level script's stand-in collective)."""
        self.data = [int(value.item() if isinstance(value, Tensor) else value)] * len(self.data)
        return self

    def item(self) -> int:
        if len(self.data) != 1:
            raise RuntimeError("item() of a tensor with more than one element")
        return self.data[0]

    def __int__(self) -> int:
        return self.item()

    def __index__(self) -> int:
        return self.item()

    def tolist(self):
        return self.data[0] if self.scalar else list(self.data)

    def split(self, size: int):
        return tuple(Tensor(self.data[i:i + size]) for i in range(0, len(self.data), size))

    def clone(self) -> "Tensor":
        return Tensor(self.data, self.scalar)

    def cpu(self) -> "Tensor":
        return self

    def to(self, *args, **kwargs) -> "Tensor":
        return self

    def __eq__(self, other):  # elementwise in torch; here only what a test can ask
        return isinstance(other, Tensor) and other.data == self.data

    __hash__ = None

    def __repr__(self) -> str:
        return f"tensor({self.data[0] if self.scalar else self.data})"


def tensor(x, dtype=None, device=None) -> Tensor:
    if isinstance(x, Tensor):
        return x.clone()
    if isinstance(x, (list, tuple)):
        return Tensor(x)
    return Tensor([x], scalar=True)


def empty(n: int = 0, dtype=None, device=None) -> Tensor:
    return Tensor([0] * n)


def zeros(n: int, dtype=None, device=None) -> Tensor:
    return Tensor([0] * n)


def cat(tensors, dim: int = 0) -> Tensor:
    out: list[int] = []
    for t in tensors:
        out.extend(t.data)
    return Tensor(out)


def equal(a: Tensor, b: Tensor) -> bool:
    return a.data == b.data


def make_torch(collective_ops, not_modelled) -> types.ModuleType:
    """The `torch` module object; `collective_ops` provides all_reduce/get_world_size/get_rank (and
    isend/recv)."""
    torch = types.ModuleType("torch")
    dist = types.ModuleType("torch.distributed")

    class ReduceOp:
        MIN, MAX, SUM = "MIN", "MAX", "SUM"

    class ProcessGroup:
        pass

    dist.ReduceOp = ReduceOp
    dist.ProcessGroup = ProcessGroup
    dist.all_reduce = collective_ops.all_reduce
    dist.get_world_size = collective_ops.get_world_size
    dist.get_rank = collective_ops.get_rank
    dist.barrier = collective_ops.barrier
    dist.get_process_group_ranks = collective_ops.get_process_group_ranks
    dist.isend = collective_ops.isend  # point-to-point (stand_ins/p2p.py): PP stages only
    dist.recv = collective_ops.recv
    dist.__getattr__ = lambda name: not_modelled(f"torch.distributed.{name}")
    for name, value in dict(Tensor=Tensor, tensor=tensor, empty=empty, zeros=zeros, cat=cat, equal=equal, dtype=dtype,
                            int=int32, int32=int32, int64=int64, long=int64, bool=bool_, uint8=uint8,
                            distributed=dist).items():
        setattr(torch, name, value)
    torch.__getattr__ = lambda name: not_modelled(f"torch.{name}")
    return torch
