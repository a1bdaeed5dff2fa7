"""The timeout clock C[r]: may fire for the request's current operation.

Every rank reads its own clock, so the clocks fire independently (that is why PP rank 0's
verdicts are reduced with MAX). From issue on (0.5.19-0.5.22), or, under the admission
deadline of 0.5.23, only once a check had to wait and never once the pages have landed
(host memory allocated and completed_tokens >= len(hash_value) * page_size).
"""

from __future__ import annotations

from prefetch_check.model.interface import Step, formats
from prefetch_check.model.protocols.ack_drain.state import LOADING, NO_OP, set_op

C = "C"


class ClockSteps:
    def clock_steps(self, r: int, rank) -> list[Step]:
        cfg = self.config
        if cfg.policy != "timeout" or not cfg.timeout_clock:
            return []
        out = []
        for q, req in enumerate(rank.reqs):
            i = req.ongoing
            if i == NO_OP:
                continue
            op = rank.ops[i]
            if op.timed_out or op.terminated:
                continue
            if cfg.deadline == "admission":
                landed = op.stage == LOADING and op.completed >= op.hash_value
                if not op.wait_started or landed:
                    continue
            out.append(Step(C, "timeout", q, set_op(rank, i, op._replace(timed_out=True))))
        return out

    @formats("C.timeout")
    def format_timeout(self, before, after, a):
        return f"the prefetch timeout of #{before.reqs[a.q].ongoing} (q{a.q}) expires on rank {a.rank}"
