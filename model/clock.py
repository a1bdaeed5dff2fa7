"""The timeout clock C[r]: a nondeterministic event that may fire any time after issue.

Each rank reads its own monotonic clock, so the clocks of different ranks fire
independently; that is why the scheduler reduces `can_terminate` over ranks.
"""

from __future__ import annotations

from prefetch_check.model.actions import CLOCK, Action
from prefetch_check.model.state import set_op, set_rank


class ClockSteps:
    def clock_steps(self, state, r: int) -> list:
        cfg = self.config
        if cfg.policy != "timeout" or not cfg.timeout_clock:
            return []
        rank = state[r]
        out = []
        for q, op in enumerate(rank.ops):
            if op.issued and not op.ready and not op.timed_out and not op.terminated:
                fired = set_op(rank, q, op._replace(timed_out=True))
                out.append((Action(r, CLOCK, "timeout", q), set_rank(state, r, fired)))
        return out
