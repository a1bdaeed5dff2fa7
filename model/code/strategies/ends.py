"""The rules every exploring strategy ends a run by, in one order (the executor's, unchanged):
no thread enabled, a cycle the world ends runs at (both judged as the end of the run), a state
already expanded (`seen`), a run longer than `max_depth`; and replaying a recorded choice."""

from __future__ import annotations

from typing import Optional

from prefetch_check.model.code.rt.decision import DEPTH, SEEN, TERMINAL, Stop


def replayed(decision, choice: str):
    """The recorded `choice` at this step, which must be enabled (else the replay diverged)."""
    if decision.can_run(choice):  # the common case, without asking every other thread's guard
        return choice
    every = decision.every()
    if not every:
        return Stop(TERMINAL)
    raise RuntimeError(f"replay diverged at step {decision.depth}: {choice} not among {every}")


def explored_end(decision, seen: Optional[set], max_depth: int) -> Optional[Stop]:
    """Where an exploring run ends, or None to go on. `seen`: the states already expanded (a state
    key added here when the run goes on from it); None: no state cache (a replay, a sample)."""
    if not decision.enabled():
        return Stop(TERMINAL)
    if decision.closes_cycle():  # only the schedulers move and nothing changes: judged as an end
        return Stop(TERMINAL)
    if seen is not None:
        key = decision.key()
        if key in seen:
            return Stop(SEEN)
        seen.add(key)
    if decision.depth >= max_depth:
        return Stop(DEPTH)
    return None
