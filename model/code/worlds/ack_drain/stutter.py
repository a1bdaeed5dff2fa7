"""A round that changes nothing: a round starts in the very state an earlier round of the run
started in. Two ends follow from it.

- No thread but the schedulers can run: every later round is that round again, so what the run
  waits for (an ack no drain reaps, a request no check admits) never happens: progress, and no
  round starts after it (`Run.stuttered`).
- Another thread can run: the rounds between were stuttering steps, and the run goes on as if
  they had not been run. No round starts until a thread other than the schedulers has taken a
  step (`Run.held_at`, in the state key while it holds): a schedule that runs such a round again
  and again before that thread reorders nothing but rounds that change nothing. Without this the
  search follows the schedulers' rounds to its depth bound before it runs the waiting thread, on
  every schedule, and ends BOUNDED naming no consequence (an edit whose drain pops nothing the
  gate opened a round for, with a storage thread still to run). Once the other threads are done,
  the first end names the spin. The hold's opening by another thread's step is in no footprint:
  DPOR then takes that step as concurrent with the round it enables, and a race it finds there
  adds the whole persistent set where the round's thread was disabled (more schedules, never
  fewer: strategies/dpor.py `_add`).

The state compared is the run's key with what only counts rounds left out: the world's parts (a
part stamped with round or call numbers gives `_pc_stutter_snapshot`: the round views, the
collective groups' calls counted from the rank behind), each thread's status and point (a
scheduler's observations name its rounds; its loop keeps the rest in the ranks' fields, but in the
retry world, whose scheduler keeps its queue and retry counters to itself: there its observations
stay), the
ranks' fields, the gate's memory, the deadlines, and the round count up to the last round a
scripted event names (`horizon`: an abort, an eviction or a split in round k makes round k unlike
the ones before it). Two starts past it differ in the round count only, and nothing reads that
but the events. The earlier starts are the run's own memory, not the key's: a loop repeats its
state, so the first run through it sees it."""

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
    # no scheduler's digest, but in the retry world: there its stand-in's queue, its requests' retry
    # counters, the readmission counts and the retry policy's pacing are in no world part (the
    # scheduler's observations stand for them), so two of its rounds compare as their keys do
    schedulers = () if run.config.retries else run.scheduler_names()
    threads = tuple(t[:3] if t[0] in schedulers else t for t in run.baton.threads_key())
    ranks = tuple(run.rank_state(r) for r in run.ranks)
    base = min(r.rounds for r in run.ranks)
    rounds = (min(base, horizon(run)),) + tuple(r.rounds - base for r in run.ranks)
    return (threads, parts, ranks, rounds, run._gate_key(),
            run.deadlines.key() if run.deadlines is not None else None)


def horizon(run) -> int:
    """The last round a scripted event of the run names (Run.scripted_rounds; 0: none)."""
    return max(run.scripted_rounds(), default=0)


def check(run, rank) -> None:
    """At a round's start by the first scheduler to start it: the same state as an earlier round's
    start is a fault when only schedulers can run (no round starts after it, so the run ends there,
    judged as it is), and otherwise holds the next round until another thread has moved."""
    sig = signature(run)
    seen = run.__dict__.setdefault("_round_starts", {})
    run.held_at = None
    if sig in seen:
        if all(m.role == "scheduler" for m in run.baton.enabled()):
            me = run.baton.current()
            run.world.fault("progress", f"round {rank.rounds + 1} starts in the state round {seen[sig]} started in, "
                            "and only the schedulers can run: the rounds between repeat forever",
                            SPIN, me.point.site if me else "?")
            run.stuttered = True
        else:
            run.held_at = len(run.baton.steps)
    seen.setdefault(sig, rank.rounds + 1)


def holding(run) -> bool:
    """A round that changed nothing was run with another thread able to run, and since then only the
    schedulers have taken steps: no round starts yet."""
    if run.held_at is None:
        return False
    steps, schedulers = run.baton.steps, run.scheduler_names()
    return all(steps[i].choice in schedulers for i in range(run.held_at, len(steps)))
