"""The completion predicate (`can_terminate_prefetch`, local part) as a plug-in.

A predicate is a pure function of an `OperationView` returning True when this rank
may stop waiting. The model performs the collective itself, exactly as upstream does
after the local decision. `buggy` and `fixed` ship; a user's own is loaded from
`package.module:function`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class OperationView:
    """What the scheduler can read of one operation on one rank (read-only).

    `hash_value` is a tuple of page-hash strings so that `len(op.hash_value)` works
    as in upstream code.
    """

    hash_value: tuple[str, ...]
    completed_tokens: int
    page_size: int
    terminated: bool
    policy: str
    timed_out: bool

    def is_terminated(self) -> bool:
        return self.terminated


Predicate = Callable[[OperationView], bool]


def _finish(op: OperationView, completed: bool) -> bool:
    if op.policy == "wait_complete":
        return completed
    if op.policy == "timeout":
        return completed or op.timed_out
    return True


def buggy(op: OperationView) -> bool:
    """The predicate before the fix: `0 == 0` holds before the page list is published."""
    if op.policy == "best_effort":
        return True
    completed = op.completed_tokens == len(op.hash_value) * op.page_size
    return _finish(op, completed)


def fixed(op: OperationView) -> bool:
    """The predicate after the fix: an empty page list is never complete."""
    if op.policy == "best_effort":
        return True
    completed = len(op.hash_value) > 0 and op.completed_tokens == len(op.hash_value) * op.page_size
    return _finish(op, completed)


def _explain(op: OperationView, answer: bool, guard: bool) -> str:
    """Spell out the evaluation, e.g. `completed_tokens=0, len(hash_value)=0 -> 0 == 0 -> accept`."""
    if op.policy == "best_effort":
        return "best_effort -> accept"
    n, c, total = len(op.hash_value), op.completed_tokens, len(op.hash_value) * op.page_size
    text = f"completed_tokens={c}, len(hash_value)={n} -> "
    if guard:
        text += f"{n} > 0 and {c} == {total}"
    else:
        text += f"{c} == {total}"
    if op.policy == "timeout":
        text += f" or timed_out={op.timed_out}"
    return text + (" -> accept" if answer else " -> wait")


buggy.explain = lambda op, answer: _explain(op, answer, guard=False)
fixed.explain = lambda op, answer: _explain(op, answer, guard=True)

BUILTIN: dict[str, Predicate] = {"buggy": buggy, "fixed": fixed}


class PredicateError(ValueError):
    """A predicate name or path that cannot be turned into a function."""
