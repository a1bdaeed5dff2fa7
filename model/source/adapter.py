"""The stand-ins a source predicate runs on: `self`, the operation, `torch`, `time`, `logger`.

Each supplies exactly the names upstream's `can_terminate_prefetch` (0.5.1-0.5.20) and
`UnifiedRadixCache._can_terminate_prefetch` (0.5.19+) read (`SUPPLIED`); the sandbox
(`model/source/interpreter.py`) serves nothing else of them. What each one means for the
model is explained in `model/source/predicate.py`.

Every all_reduce (`torch.distributed.all_reduce`, `self._all_reduce_attn_groups`,
`self._all_reduce`) goes to one `reduce` callable: `stop_at_collective` ends the run there
(what the checker evaluates), `PassThrough` lets it go on as a reduction over one rank would
(the tensor unchanged), which is how the loader learns how the function reads the result.
"""

from __future__ import annotations

from typing import Optional

from prefetch_check.model.protocols.poll.predicates import OperationView
from prefetch_check.model.source.interpreter import MAX_ITEMS, Bound, Stop, Supplied, Unsupplied

WORLD_SIZE = 2  # what `self.tp_world_size` reads: the multi-rank path, which reaches the collective
PP_RANK = 0  # what `self.pp_rank` reads: the pipeline stage that decides (the model has one stage)
LATE = 1.0e12  # the adapter's clock once the model's timeout fired (start_time is 0)
TIMEOUT_SETTINGS = {  # any finite positive timeout behaves alike under the two clock readings
    "prefetch_timeout": 1.0,
    "prefetch_timeout_base": 1.0,
    "prefetch_timeout_per_page": 0.1,
}

SELF_SUPPLIED = (
    "prefetch_stop_policy",
    "page_size",
    "tp_world_size",
    "tp_group",
    "pp_rank",
    "_all_reduce_attn_groups",
    "_all_reduce",
    "is_prefetch_timeout",
    "_prefetch_timeout_check_linear_func",
    "_prefetch_deadline_expired",
    "prefetch_timeout_config",
) + tuple(TIMEOUT_SETTINGS)
OPERATION_SUPPLIED = ("hash_value", "completed_tokens", "is_terminated", "start_time", "_terminated_flag")
GLOBALS_SUPPLIED = ("torch", "logger", "time")


class _Refusing(Supplied):
    """An unsupplied name is `Unsupplied` also for Python's own lookups (never a silent default)."""

    def __getattr__(self, name):
        raise Unsupplied(f"{self.LABEL}.{name}")


class CollectiveReached(Stop):
    """The run reached the collective: what this rank brings (see model/source/predicate.py)."""

    def __init__(self, tensor, op):
        super().__init__()
        self.tensor, self.op = tensor, op


class FakeTensor(_Refusing):
    """`torch.tensor` of a few numbers: enough for the termination vector and its reading."""

    SUPPLIED = frozenset({"item", "tolist"})
    LABEL = "tensor"

    def __init__(self, data, dtype=None, device=None):
        self.scalar = not isinstance(data, (list, tuple))
        values = [data] if self.scalar else list(data)
        if len(values) > MAX_ITEMS:
            raise ValueError(f"the adapter's torch.tensor takes at most {MAX_ITEMS} numbers")
        self.values = [v.item() if isinstance(v, FakeTensor) else v for v in values]
        if not all(isinstance(v, (bool, int, float)) for v in self.values):
            raise TypeError("the adapter's torch.tensor takes numbers (or a list of numbers)")

    def item(self):
        if len(self.values) != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")
        return self.values[0]

    def tolist(self):
        return self.values[0] if self.scalar else list(self.values)

    def __getitem__(self, i):
        return FakeTensor(self.values[i])

    def __len__(self):
        return len(self.values)

    def __int__(self):
        return int(self.item())

    def __bool__(self):
        return bool(self.item())

    def __eq__(self, other):
        return self.item() == (other.item() if isinstance(other, FakeTensor) else other)

    __hash__ = None

    def __repr__(self):
        return f"tensor({self.tolist()})"


class ReduceOp(_Refusing):
    SUPPLIED = frozenset({"SUM", "MIN", "MAX", "PRODUCT"})
    LABEL = "torch.distributed.ReduceOp"
    SUM, MIN, MAX, PRODUCT = "SUM", "MIN", "MAX", "PRODUCT"


def stop_at_collective(tensor, op="SUM", *args, **kwargs):
    """Any all_reduce: stop the run and hand over what this rank brings (see model/source/predicate.py)."""
    raise CollectiveReached(tensor, kwargs.get("op", op))


class PassThrough:
    """Any all_reduce as over one rank: the tensor stays as it is and the run goes on; `seen`
    records (tensor values, op) so the loader can compare them with what the function returns."""

    def __init__(self):
        self.seen: list[tuple[list, str]] = []

    def __call__(self, tensor, op="SUM", *args, **kwargs):
        values = list(tensor.values) if isinstance(tensor, FakeTensor) else tensor
        self.seen.append((values, kwargs.get("op", op)))


class _Distributed(_Refusing):
    SUPPLIED = frozenset({"ReduceOp", "all_reduce"})
    LABEL = "torch.distributed"
    ReduceOp = ReduceOp()

    def __init__(self, reduce):
        self._reduce = reduce

    def all_reduce(self, tensor, op="SUM", *args, **kwargs):
        self._reduce(tensor, op, *args, **kwargs)


class _Torch(_Refusing):
    SUPPLIED = frozenset({"int", "int32", "int64", "bool", "distributed", "tensor"})
    LABEL = "torch"
    int = int32 = int64 = "int"
    bool = "bool"
    tensor = FakeTensor

    def __init__(self, reduce):
        self.distributed = _Distributed(reduce)


class _Logger(Supplied):
    """`logger.debug(...)` and the like: accepted and ignored."""

    LABEL = "logger"

    def supplies(self, name: str) -> bool:
        return not name.startswith("_")

    def __getattr__(self, name):
        return _ignore


def _ignore(*args, **kwargs):
    return None


class _Clock(_Refusing):
    SUPPLIED = frozenset({"monotonic", "time", "perf_counter"})
    LABEL = "time"

    def __init__(self, now: float):
        self.now = now

    def monotonic(self):
        return self.now

    def time(self):
        return self.now

    def perf_counter(self):
        return self.now


class _Operation(_Refusing):
    SUPPLIED = frozenset(OPERATION_SUPPLIED)
    LABEL = "operation"

    def __init__(self, view: OperationView):
        self.hash_value = list(view.hash_value)
        self.completed_tokens = view.completed_tokens
        self.start_time = 0.0
        self._terminated_flag = view.terminated
        self._view = view

    def is_terminated(self):
        return self._view.terminated


class _TimeoutConfig(_Refusing):
    SUPPLIED = frozenset({"base", "per_ki_token", "max"})
    LABEL = "self.prefetch_timeout_config"
    base, per_ki_token, max = 1.0, 0.1, 10.0


class _Cache(_Refusing):
    """`self` of the upstream method, for one operation view; `helpers` are the class's own methods."""

    LABEL = "self"

    def __init__(self, view: OperationView, helpers: dict, reduce):
        self.SUPPLIED = frozenset(SELF_SUPPLIED) | frozenset(helpers)
        self.prefetch_stop_policy = view.policy
        self.page_size = view.page_size
        self.tp_world_size = WORLD_SIZE
        self.tp_group = "tp_group"
        self.pp_rank = PP_RANK
        self.prefetch_timeout_config = _TimeoutConfig()
        for name, value in TIMEOUT_SETTINGS.items():
            setattr(self, name, value)
        timed_out = view.timed_out
        self.is_prefetch_timeout = lambda operation: timed_out
        self._prefetch_timeout_check_linear_func = lambda operation: timed_out
        self._prefetch_deadline_expired = lambda operation: timed_out
        self._all_reduce_attn_groups = reduce
        self._all_reduce = reduce
        for name, fn in helpers.items():
            setattr(self, name, Bound(fn, self))


def supplied_globals(timed_out: Optional[bool], reduce=stop_at_collective) -> dict:
    """The module globals the function sees: torch, logger, and a clock on the right side of the timeout."""
    return {"torch": _Torch(reduce), "logger": _Logger(), "time": _Clock(LATE if timed_out else 0.0)}


def stand_ins(view: OperationView, helpers: dict, reduce=stop_at_collective) -> tuple:
    """(self, operation) for one operation view."""
    return _Cache(view, helpers, reduce), _Operation(view)
