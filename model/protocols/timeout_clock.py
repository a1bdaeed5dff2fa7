"""The timeout clock C[r] of both SGLang prefetch protocols: a nondeterministic event.

Each rank reads its own monotonic clock, so the clocks of different ranks fire independently.
The clock exists only under the timeout policy, and a scenario may stop it (`timeout_clock =
false`); which operations it may fire for is the protocol's (`timeouts`).
"""

from __future__ import annotations

from prefetch_check.model.interface import Step

C = "C"


class TimeoutClock:
    """Mixed in before `RankProtocol`; the protocol's clock module defines `timeouts`."""

    def clock_steps(self, r: int, rank) -> list[Step]:
        cfg = self.config
        if cfg.policy != "timeout" or not cfg.timeout_clock:
            return []
        return [Step(C, "timeout", q, after) for q, after in self.timeouts(rank)]

    def timeouts(self, rank):
        """(request, the rank once the timeout fired for it) for each operation it may fire for."""
        raise NotImplementedError
