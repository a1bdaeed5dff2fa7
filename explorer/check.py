"""Run a search on a model and turn it into verdicts with replayed counterexamples."""

from __future__ import annotations

import gc
import time
from typing import Optional

from prefetch_check.explorer.bfs import Exploration, explore
from prefetch_check.explorer.graph import GraphRecorder
from prefetch_check.explorer.interface import ALWAYS, ALWAYS_STEP, DEADLOCK_FREE, EVENTUALLY, Model
from prefetch_check.explorer.limits import Limits
from prefetch_check.explorer.options import SearchObserver, SearchOptions
from prefetch_check.explorer.minimize import first_failure, minimize
from prefetch_check.explorer.liveness import AnalysisTimeout, find_progress_violation
from prefetch_check.explorer.replay import Divergence, replay
from prefetch_check.explorer.result import BOUNDED, NOT_APPLICABLE, VERIFIED, VIOLATED, CheckResult, PropertyResult, Stats
from prefetch_check.explorer.trace import Trace, build_trace, concrete_path


class CounterexampleNotReplayable(AssertionError):
    """A trace the search produced does not replay through the model: an explorer bug."""


def check(model: Model, options: SearchOptions = SearchOptions(), name: str = "") -> CheckResult:
    """Search, then judge every property: safety findings become shortest (or, when the search
    for a shortest one is cut, 1-minimal) replayed traces; progress is judged on the recorded
    graph. Observers hear each phase: search, shortening, progress analysis."""
    props = list(model.properties())
    progress_props = [p for p in props if p.kind == EVENTUALLY and p.not_applicable is None]
    graph = GraphRecorder(len(progress_props)) if progress_props else None
    ex = explore(model, options, graph)
    shortest, shortening_seconds = {}, 0.0
    if options.expand is not None:
        phase = Phase("shortening", options.observers)
        shortest = _shorten(model, ex, options, shortest_budget(ex), _shortening_time(options.limits, ex), phase)
        shortening_seconds = phase.finish()
    analysis = Phase("progress analysis", options.observers)
    results = {}
    for p in props:
        if p.not_applicable is not None:
            results[p.name] = PropertyResult(p.name, NOT_APPLICABLE, p.description, p.not_applicable)
        elif p.kind == EVENTUALLY:
            results[p.name] = _judge_progress(ex, p, options, analysis)
        else:
            results[p.name] = _judge_safety(model, ex, p, options, shortest)
    progress_seconds = analysis.finish() if progress_props and ex.complete else 0.0
    return CheckResult(name=name, results=results, stats=_stats(model, ex, progress_seconds, shortening_seconds))


class Phase:
    """A phase of a check after the search, timed and reported to the observers: once when it
    starts, at most once a second while it beats, and once when it finishes."""

    BEAT = 1.0

    def __init__(self, name: str, observers: tuple):
        self.name, self.observers = name, observers
        self.start = self.last = time.perf_counter()
        self._tell({})

    def _tell(self, info: dict) -> None:
        for observer in self.observers:
            observer.on_progress({"phase": self.name, "seconds": time.perf_counter() - self.start, **info})

    def beat(self, info: Optional[dict] = None) -> None:
        now = time.perf_counter()
        if now - self.last >= self.BEAT:
            self.last = now
            self._tell(info or {})

    def finish(self) -> float:
        self._tell({"done": True})
        return time.perf_counter() - self.start


def _judge_safety(model, ex: Exploration, p, options: SearchOptions, shortest: dict) -> PropertyResult:
    """A state or step invariant, or deadlock freedom: VIOLATED with a replayed trace, else
    VERIFIED after an exhaustive search, else BOUNDED."""
    canonical, reduced = options.canonical, options.expand is not None
    trace, reason = None, ""
    if p.kind in (ALWAYS, ALWAYS_STEP) and p.name in ex.findings:
        source, finding = shortest.get(p.name, (ex, ex.findings[p.name]))
        trace, reason = _safety_trace(source, canonical, p, finding), finding.reason
        if reduced and p.name not in shortest:
            trace = minimize(model, trace, first_failure(p))
            reason += NOT_SHORTENED
        _confirm(model, trace, lambda t, p=p: _still_violates(model, p, t))
    elif p.kind == DEADLOCK_FREE and ex.deadlocks:
        source, sid = shortest.get(p.name, (ex, ex.deadlocks[0]))
        trace = _trace_to(source, canonical, sid)
        reason = "no actor can take a step"
        if reduced and p.name not in shortest:
            trace = minimize(model, trace, first_failure(p, model))
            reason += NOT_SHORTENED
        _confirm(model, trace, lambda t: not model.successors(t.final_state))
    if trace is not None:
        return PropertyResult(p.name, VIOLATED, p.description, reason, trace)
    return _undecided(ex, p)


def _undecided(ex: Exploration, p) -> PropertyResult:
    if ex.complete:
        return PropertyResult(p.name, VERIFIED, p.description)
    return PropertyResult(
        p.name, BOUNDED, p.description,
        f"search stopped: {ex.stop_reason}; {ex.visited:,} states, depth {ex.max_depth} reached, no violation found",
    )


def _judge_progress(ex: Exploration, p, options: SearchOptions, analysis: Phase) -> PropertyResult:
    """Progress under weak fairness, on the recorded graph of an exhaustive search."""
    if not ex.complete:
        return _undecided(ex, p)
    limits = options.limits
    deadline = None if limits.time_limit is None else analysis.start + max(0.0, limits.time_limit - ex.seconds)
    collecting = gc.isenabled()
    gc.disable()  # the graph is millions of acyclic containers, as in the search
    try:
        lasso = find_progress_violation(ex, p.check, deadline, bit=ex.progress_bits[p.name], beat=analysis.beat)
    except AnalysisTimeout:
        return PropertyResult(
            p.name, BOUNDED, p.description,
            f"the search finished ({ex.visited:,} states) but the time limit of {limits.time_limit}s "
            f"ran out during the progress analysis, after {time.perf_counter() - analysis.start:.1f}s of it",
        )
    except MemoryError:
        return PropertyResult(
            p.name, BOUNDED, p.description,
            f"the search finished ({ex.visited:,} states) but memory ran out (MemoryError) during the progress analysis",
        )
    finally:
        if collecting:
            gc.enable()
    if lasso is None:
        return PropertyResult(p.name, VERIFIED, p.description)
    trace = _lasso_trace(ex, options.canonical, lasso)
    _confirm(ex.model, trace, lambda t: _lasso_closes(ex.model, t, options.canonical))
    return PropertyResult(p.name, VIOLATED, p.description, lasso.reason, trace)


def _stats(model, ex: Exploration, progress_seconds: float, shortening_seconds: float) -> Stats:
    fired = set(ex.action_counts)
    return Stats(
        states=ex.visited,
        transitions=ex.transitions,
        max_depth=ex.max_depth,
        seconds=ex.seconds,
        complete=ex.complete,
        stop_reason=ex.stop_reason,
        action_counts=dict(sorted(ex.action_counts.items())),
        never_fired=tuple(k for k in model.action_kinds() if k not in fired),
        frontier=len(ex.states) - ex.expanded,
        peak_memory_mb=ex.peak_memory_mb,
        progress_seconds=progress_seconds,
        shortening_seconds=shortening_seconds,
        stored_states=len(ex.states) if ex.fused else None,
    )


def shortest_budget(ex: Exploration) -> int:
    """States the shortening search may visit per counterexample: a multiple of what the reduced
    search needed, at least 200,000, at most 2,000,000 (about 20 s of plain search)."""
    return max(200_000, min(10 * ex.visited, 2_000_000))


NOT_SHORTENED = (
    " (counterexample of the reduced search, made 1-minimal: no single step can be left out; "
    "the search for a shortest one was cut by its budget)"
)


def _shortening_time(limits: Limits, ex: Exploration) -> Optional[float]:
    """Seconds the shortening may take: what the user's time limit leaves; without one, no
    time bound (the state budget bounds it), so the same input gives the same counterexample
    on any machine."""
    if limits.time_limit is not None:
        return max(0.0, limits.time_limit - ex.seconds)
    return None


def _shorten(model, ex: Exploration, options: SearchOptions, budget: int, seconds: Optional[float], phase: Phase) -> dict:
    """The partial-order reduction does not keep counterexamples shortest; symmetry does.
    For each safety violation (and deadlock) found, search without the partial-order
    reduction, no deeper than the reduced counterexample, for the same property: BFS then
    finds a shortest one. Within `budget` states each and `seconds` in all (None: no time
    bound); past them the reduced counterexample is kept (still real and replayed, but
    perhaps not the shortest). Returns name -> (exploration, finding) for state and step
    invariants, and name -> (exploration, deadlock state id) for deadlock freedom."""
    out = {}
    deadline = None if seconds is None else time.perf_counter() + seconds
    wanted = [(name, ex.depth[f.state_id] + (1 if f.action is not None else 0)) for name, f in ex.findings.items()]
    deadlock = next((p for p in model.properties() if p.kind == DEADLOCK_FREE and p.not_applicable is None), None)
    if deadlock is not None and ex.deadlocks:
        wanted.append((deadlock.name, ex.depth[ex.deadlocks[0]] + 1))
    beat = _Beat(phase)
    for name, depth in wanted:
        left = None if deadline is None else deadline - time.perf_counter()
        if left is not None and left <= 0:
            break
        plain = explore(
            _OnlyProperty(model, name),
            SearchOptions(
                Limits(max_states=budget, max_depth=depth, time_limit=left, max_memory_mb=options.limits.max_memory_mb),
                canonical=options.canonical, stop_when_found=True, observers=(beat,),
            ),
        )
        if name in plain.findings:
            out[name] = (plain, plain.findings[name])
        elif deadlock is not None and name == deadlock.name and plain.deadlocks:
            out[name] = (plain, plain.deadlocks[0])
    return out


class _Beat(SearchObserver):
    """The shortening searches' progress, reported as beats of the shortening phase."""

    def __init__(self, phase: Phase):
        self.phase = phase

    def on_progress(self, info: dict) -> None:
        self.phase.beat({k: v for k, v in info.items() if k in ("states", "depth")})


class _OnlyProperty:
    """A view of a model that judges one property only (for the shortening search)."""

    def __init__(self, model, name: str):
        self._model = model
        self._props = [p for p in model.properties() if p.name == name]

    def properties(self):
        return self._props

    def __getattr__(self, attr):
        return getattr(self._model, attr)


def _trace_to(ex: Exploration, canonical, sid: int) -> Trace:
    ids = [sid]
    while ex.parent[ids[-1]] >= 0:
        ids.append(ex.parent[ids[-1]])
    ids.reverse()
    initial, path = concrete_path(ex.model, ex.state_path(ids), canonical)
    return build_trace(ex.model, initial, path)


def _safety_trace(ex: Exploration, canonical, prop, finding) -> Trace:
    trace = _trace_to(ex, canonical, finding.state_id)
    if finding.action is None:
        return trace
    # a step invariant: append the first violating step from the concrete last state
    model, state = ex.model, trace.final_state
    for action, nxt in model.successors(state):
        if prop.check(state, action, nxt):
            path = [(s.action, s.state) for s in trace.steps] + [(action, nxt)]
            return build_trace(model, trace.initial, path)
    raise CounterexampleNotReplayable("the violating step is not enabled in the trace's last state")


def _lasso_trace(ex: Exploration, canonical, lasso) -> Trace:
    prefix = ex.state_path(lasso.prefix)
    canon_path = prefix + ex.state_path(lasso.prefix[-1:] + lasso.cycle)[1:]
    initial, path = concrete_path(ex.model, canon_path, canonical)
    cycle_start = len(prefix) - 1 if lasso.cycle else None
    return build_trace(ex.model, initial, path, cycle_start)


def _still_violates(model, prop, trace: Trace) -> bool:
    if prop.kind == ALWAYS:
        return bool(prop.check(trace.final_state))
    last = trace.steps[-1]
    before = trace.steps[-2].state if len(trace.steps) > 1 else trace.initial
    return bool(prop.check(before, last.action, last.state))


def _lasso_closes(model, trace: Trace, canonical) -> bool:
    if trace.cycle_start is None:  # a deadlock with work left
        return not model.successors(trace.final_state)
    canon = canonical or (lambda s: s)
    entry = trace.steps[trace.cycle_start - 1].state if trace.cycle_start > 0 else trace.initial
    return canon(trace.final_state) == canon(entry)


def _confirm(model, trace: Trace, still_bad) -> None:
    """Replay the schedule from scratch; the replay must reach the same states and still fail."""
    try:
        again = replay(model, trace.schedule, initial=trace.initial)
    except Divergence as exc:
        raise CounterexampleNotReplayable(f"counterexample does not replay ({exc}): {trace.schedule}") from None
    if [s.state for s in again.steps] != [s.state for s in trace.steps] or not still_bad(again):
        raise CounterexampleNotReplayable(f"counterexample does not replay: {trace.schedule}")
