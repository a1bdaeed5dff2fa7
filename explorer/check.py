"""Run a search on a model and turn it into verdicts with replayed counterexamples."""

from __future__ import annotations

import gc
import time
from typing import Callable, Optional

from prefetch_check.explorer.bfs import Exploration, ProgressCallback, explore
from prefetch_check.explorer.interface import ALWAYS, ALWAYS_STEP, DEADLOCK_FREE, EVENTUALLY, Model
from prefetch_check.explorer.limits import Limits
from prefetch_check.explorer.minimize import minimize
from prefetch_check.explorer.liveness import AnalysisTimeout, find_progress_violation
from prefetch_check.explorer.replay import Divergence, replay
from prefetch_check.explorer.result import BOUNDED, NOT_APPLICABLE, VERIFIED, VIOLATED, CheckResult, PropertyResult, Stats
from prefetch_check.explorer.trace import Trace, build_trace, concrete_path


class CounterexampleNotReplayable(AssertionError):
    """A trace the search produced does not replay through the model: an explorer bug."""


def check(
    model: Model,
    limits: Limits = Limits(),
    name: str = "",
    canonical: Optional[Callable] = None,
    on_progress: Optional[ProgressCallback] = None,
    expand: Optional[Callable] = None,
    fuse: bool = False,
) -> CheckResult:
    props = list(model.properties())
    shortest: dict = {}
    wants_progress = any(p.kind == EVENTUALLY and p.not_applicable is None for p in props)
    ex = explore(
        model, limits, record_graph=wants_progress, canonical=canonical, on_progress=on_progress,
        expand=expand, fuse=fuse,
    )
    reduced = expand is not None
    if reduced:
        shortest = _shorten(model, ex, canonical, shortest_budget(ex), _shortening_time(limits, ex), limits.max_memory_mb)
    results = {}
    progress_seconds = 0.0
    bound = f"search stopped: {ex.stop_reason}; {len(ex.states)} states, depth {ex.max_depth} reached, no violation found"
    for p in props:
        if p.not_applicable is not None:
            results[p.name] = PropertyResult(p.name, NOT_APPLICABLE, p.description, p.not_applicable)
            continue
        trace, reason = None, ""
        if p.kind in (ALWAYS, ALWAYS_STEP) and p.name in ex.findings:
            source, finding = shortest.get(p.name, (ex, ex.findings[p.name]))
            trace, reason = _safety_trace(source, canonical, p, finding), finding.reason
            if reduced and p.name not in shortest:
                trace = minimize(model, trace, _first_failure(p))
                reason += NOT_SHORTENED
            _confirm(model, trace, lambda t, p=p, f=finding: _still_violates(model, p, t))
        elif p.kind == DEADLOCK_FREE and ex.deadlocks:
            source, sid = shortest.get(p.name, (ex, ex.deadlocks[0]))
            trace = _trace_to(source, canonical, sid)
            reason = "no thread of any rank can take a step"
            if reduced and p.name not in shortest:
                trace = minimize(model, trace, _first_failure(p, model))
                reason += NOT_SHORTENED
            _confirm(model, trace, lambda t: not model.successors(t.final_state))
        elif p.kind == EVENTUALLY and ex.complete:
            t0 = time.perf_counter()
            deadline = None if limits.time_limit is None else t0 + max(0.0, limits.time_limit - ex.seconds)
            collecting = gc.isenabled()
            gc.disable()  # the graph is millions of acyclic containers, as in the search
            try:
                lasso = find_progress_violation(ex, p.check, deadline, bit=ex.progress_bits[p.name])
            except AnalysisTimeout:
                progress_seconds += time.perf_counter() - t0
                results[p.name] = PropertyResult(
                    p.name, BOUNDED, p.description,
                    f"the search finished ({len(ex.states)} states) but the time limit of {limits.time_limit}s "
                    f"ran out during the progress analysis, after {progress_seconds:.1f}s of it",
                )
                continue
            except MemoryError:  # like the time limit: the analysis is cut, the verdict BOUNDED
                progress_seconds += time.perf_counter() - t0
                results[p.name] = PropertyResult(
                    p.name, BOUNDED, p.description,
                    f"the search finished ({len(ex.states)} states) but memory ran out (MemoryError) during "
                    f"the progress analysis, after {progress_seconds:.1f}s of it",
                )
                continue
            finally:
                if collecting:
                    gc.enable()
            progress_seconds += time.perf_counter() - t0
            if lasso is not None:
                trace = _lasso_trace(ex, canonical, lasso)
                reason = lasso.reason
                _confirm(model, trace, lambda t: _lasso_closes(model, t, canonical))
        if trace is not None:
            results[p.name] = PropertyResult(p.name, VIOLATED, p.description, reason, trace)
        elif ex.complete:
            results[p.name] = PropertyResult(p.name, VERIFIED, p.description)
        else:
            results[p.name] = PropertyResult(p.name, BOUNDED, p.description, bound)
    fired = set(ex.action_counts)
    stats = Stats(
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
        stored_states=len(ex.states) if ex.fused else None,
    )
    return CheckResult(name=name, results=results, stats=stats)


def shortest_budget(ex: Exploration) -> int:
    """States the shortening search may visit per counterexample: a multiple of what the reduced
    search needed, at least 200,000, at most 2,000,000 (about 20 s of plain search)."""
    return max(200_000, min(10 * ex.visited, 2_000_000))


NOT_SHORTENED = (
    " (counterexample of the reduced search, made 1-minimal: no single step can be left out; "
    "the search for a shortest one was cut by its budget)"
)


def _first_failure(prop, model=None):
    """For `minimize`: how many steps of a path to keep so that it ends in prop's violation."""
    if prop.kind == ALWAYS:
        return lambda states, actions: next((i for i, s in enumerate(states) if prop.check(s)), None)
    if prop.kind == ALWAYS_STEP:
        return lambda states, actions: next(
            (i + 1 for i, a in enumerate(actions) if prop.check(states[i], a, states[i + 1])), None
        )
    return lambda states, actions: None if model.successors(states[-1]) else len(actions)  # a deadlock


def _shortening_time(limits: Limits, ex: Exploration) -> Optional[float]:
    """Seconds the shortening may take: what the user's time limit leaves; without one, no
    time bound (the state budget bounds it), so the same input gives the same counterexample
    on any machine."""
    if limits.time_limit is not None:
        return max(0.0, limits.time_limit - ex.seconds)
    return None


def _shorten(model, ex: Exploration, canonical, budget: int, seconds: Optional[float], memory_mb=None) -> dict:
    """The partial-order reduction does not keep counterexamples shortest; symmetry does.
    For each safety violation (and deadlock) found, search without the partial-order
    reduction, no deeper than the reduced counterexample, for the same property: BFS then
    finds a shortest one. Within `budget` states each and `seconds` in all (None: no time
    bound); past them the reduced
    counterexample is kept (still real and replayed, but perhaps not the shortest).
    Returns name -> (exploration, finding) for state and step invariants, and
    name -> (exploration, deadlock state id) for deadlock freedom."""
    out = {}
    deadline = None if seconds is None else time.perf_counter() + seconds
    wanted = [(name, ex.depth[f.state_id] + (1 if f.action is not None else 0)) for name, f in ex.findings.items()]
    deadlock = next((p for p in model.properties() if p.kind == DEADLOCK_FREE and p.not_applicable is None), None)
    if deadlock is not None and ex.deadlocks:
        wanted.append((deadlock.name, ex.depth[ex.deadlocks[0]] + 1))
    for name, depth in wanted:
        left = None if deadline is None else deadline - time.perf_counter()
        if left is not None and left <= 0:
            break
        plain = explore(
            _OnlyProperty(model, name),
            Limits(max_states=budget, max_depth=depth, time_limit=left, max_memory_mb=memory_mb),
            canonical=canonical,
            stop_when_found=True,
        )
        if name in plain.findings:
            out[name] = (plain, plain.findings[name])
        elif deadlock is not None and name == deadlock.name and plain.deadlocks:
            out[name] = (plain, plain.deadlocks[0])
    return out


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
