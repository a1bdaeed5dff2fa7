"""An action: one atomic step of one thread, named in the protocol's words."""

from __future__ import annotations

from typing import NamedTuple

# thread letters: scheduler, prefetch thread, IO thread, the timeout clock
SCHEDULER, PREFETCH, IO, CLOCK = "S", "P", "I", "C"
THREADS = (SCHEDULER, PREFETCH, IO, CLOCK)
THREAD_NAMES = {SCHEDULER: "scheduler", PREFETCH: "prefetch", IO: "io", CLOCK: "clock"}


class Action(NamedTuple):
    rank: int
    thread: str
    step: str  # e.g. "check", "publish", "increment"
    q: int = -1  # request, or -1 for steps that are not about one request

    @property
    def actor(self) -> tuple[int, str]:
        return (self.rank, self.thread)

    @property
    def id(self) -> str:
        """Stable text used in schedule strings, e.g. `S0.check.q0`."""
        base = f"{self.thread}{self.rank}.{self.step}"
        return base if self.q < 0 else f"{base}.q{self.q}"

    @property
    def kind(self) -> str:
        """The action class without rank and request, e.g. `S.check` (for statistics)."""
        return f"{self.thread}.{self.step}"


def parse_action_id(text: str) -> Action:
    """Inverse of `Action.id`; raises ValueError on text that is not an action id."""
    parts = text.strip().split(".")
    if len(parts) not in (2, 3) or len(parts[0]) < 2 or parts[0][0] not in THREADS:
        raise ValueError(f"not an action id: {text!r} (expected e.g. 'S0.check.q0')")
    thread, rank = parts[0][0], parts[0][1:]
    q = -1
    if len(parts) == 3:
        if not parts[2].startswith("q"):
            raise ValueError(f"not an action id: {text!r}")
        q = int(parts[2][1:])
    return Action(int(rank), thread, parts[1], q)


# Every action class the protocol can take; an entry that never fires in a run is a hint
# that the model or the scenario does not exercise that part of the protocol.
ACTION_KINDS = (
    "S.issue",
    "S.issue_alloc_failed",
    "S.issue_skipped",
    "S.drain_arrive",
    "S.drain",
    "S.ready_without_prefetch",
    "S.check",
    "S.keep_waiting",
    "S.terminate",
    "S.insert",
    "P.take",
    "P.revoke",
    "P.publish",
    "I.take",
    "I.write",
    "I.load_failed",
    "I.increment",
    "I.increment_refused",
    "I.release",
    "C.timeout",
)
