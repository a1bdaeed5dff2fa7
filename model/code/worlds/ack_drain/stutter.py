"""A scheduler loop that spins: a round starts in the very state the round before started in, and
no thread but the schedulers can run. Every later round is then that round again, so what the
run waits for (an ack no drain reaps, a request no check admits) never happens: progress. Without
this the search follows the loop to its depth bound on every schedule and ends BOUNDED, naming no
consequence (an edit whose drain pops nothing the gate opened a round for).

The state compared is the run's key with the round counters left out: the world's parts (a part
stamped with round numbers gives `_pc_stutter_snapshot`), each thread's status and point (a
scheduler's observations name its rounds, and its loop keeps the rest in the ranks' fields), the
ranks' fields, the gate's memory and the deadlines. The previous round start's state is the run's
own memory, not the key's: a loop repeats its state, so the first run through it sees it."""

from __future__ import annotations

SPIN = ("the scheduler spins: its rounds repeat with nothing changing, so what it waits for (an ack "
        "reaped, a request admitted) never happens and the request hangs")


def signature(run) -> tuple:
    """The state a round starts in, read without entering the running step's footprint (a
    judgement of the run, not a read of the code's: DPOR's choices stay what they were)."""
    baton, stepping = run.baton, run.baton.stepping
    baton.stepping = False
    try:
        return _state(run)
    finally:
        baton.stepping = stepping


def _state(run) -> tuple:
    parts = tuple(getattr(p, "_pc_stutter_snapshot", p.snapshot)() for p in run.world.parts)
    schedulers = {m.name for m in run.baton.threads if m.role == "scheduler"}
    threads = tuple(t[:3] if t[0] in schedulers else t for t in run.baton.threads_key())  # no scheduler's digest
    ranks = tuple(run.rank_state(r) for r in run.ranks)
    return (threads, parts, ranks, run._gate_key(), run.deadlines.key() if run.deadlines is not None else None)


def check(run, rank) -> None:
    """At a round's start by the first scheduler to start it: the same state as the last round's
    start with only schedulers able to run is a fault, and the gate stays closed after it (the
    run ends there, judged as it is)."""
    sig = signature(run)
    seen = run.__dict__.setdefault("_round_starts", {})
    if sig in seen and all(m.role == "scheduler" for m in run.baton.enabled()):
        me = run.baton.current()
        run.world.fault("progress", f"round {rank.rounds + 1} starts in the state round {seen[sig]} started in, "
                        "and only the schedulers can run: the rounds between repeat forever",
                        SPIN, me.point.site if me else "?")
        run.stuttered = True
    seen.setdefault(sig, rank.rounds + 1)
