"""The timeout clock C[r]: a nondeterministic event that may fire any time after issue.

Each rank reads its own monotonic clock, so the clocks of different ranks fire
independently; that is why the scheduler reduces `can_terminate` over ranks.
"""

from __future__ import annotations

from prefetch_check.model.interface import Step, formats
from prefetch_check.model.protocols.poll.state import set_op

C = "C"


class ClockSteps:
    def clock_steps(self, r: int, rank) -> list[Step]:
        cfg = self.config
        if cfg.policy != "timeout" or not cfg.timeout_clock:
            return []
        out = []
        for q, op in enumerate(rank.ops):
            if op.issued and not op.ready and not op.timed_out and not op.terminated:
                out.append(Step(C, "timeout", q, set_op(rank, q, op._replace(timed_out=True))))
        return out

    @formats("C.timeout")
    def format_timeout(self, before, after, a):
        return f"the prefetch timeout of q{a.q} expires on rank {a.rank}"
