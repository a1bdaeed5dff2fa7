"""The completion predicate of the ack-drain protocol (`can_terminate_prefetch`, its local answer).

Same plug-in shape as the predicate-poll protocol's (an `OperationView` in, True when this
rank may stop waiting); what the scheduler does around it (the MAX vote, the local
`is_terminated()`) is the model's. `fixed` is upstream's from 0.5.19: wait_complete never
accepts at a check (completion comes through the ACK drain). `buggy` is the pre-fix test
of the predicate-poll protocol carried over, `completed_tokens == len(hash_value) * page_size`
without the guard: what a change that brought the old predicate back would do.
"""

from __future__ import annotations

from prefetch_check.model.protocols.poll.predicates import OperationView, _explain


def fixed(op: OperationView) -> bool:
    """upstream 0.5.19+: best_effort accepts, wait_complete waits for the ACK drain, timeout when it fired."""
    if op.policy == "wait_complete":
        return False
    if op.policy == "timeout":
        return op.timed_out
    return True


def buggy(op: OperationView) -> bool:
    """The old unguarded completion test: `0 == 0` before the hit count is published."""
    if op.policy == "best_effort":
        return True
    completed = op.completed_tokens == len(op.hash_value) * op.page_size
    return completed or (op.policy == "timeout" and op.timed_out)


def _explain_fixed(op: OperationView, answer: bool) -> str:
    if op.policy == "wait_complete":
        return "can_terminate_prefetch: wait_complete -> False (completion comes through the ACK drain)"
    if op.policy == "timeout":
        return f"can_terminate_prefetch: timed_out={op.timed_out} -> {'accept' if answer else 'wait'}"
    return "can_terminate_prefetch: best_effort -> accept"


fixed.explain = _explain_fixed
buggy.explain = lambda op, answer: _explain(op, answer, guard=False)

BUILTIN = {"buggy": buggy, "fixed": fixed}
