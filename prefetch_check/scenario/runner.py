"""Run every (scenario case, predicate) pair, on one core or several, in a fixed report order.

Each pair is one task; `--jobs N` spreads tasks over N worker processes (spawned,
so a live display's thread is never forked). Results come back in task order
whatever N is, so the report is the same for any number of jobs.
"""

from __future__ import annotations

import dataclasses
import multiprocessing
import queue as queue_module
import traceback
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import dataclass

from prefetch_check.explorer.limits import Limits
from prefetch_check.explorer.report.records import Entry
from prefetch_check.explorer.result import CheckResult
from prefetch_check.model.protocols import load_protocol, protocol_label
from prefetch_check.model.protocols.poll.predicates import BUILTIN
from prefetch_check.api import check
from prefetch_check.scenario.errors import InputError
from prefetch_check.scenario.loader import Case, Scenario


class PredicateFailed(InputError):
    """A user's predicate raised: bad input, reported as one paragraph like any other."""


@dataclass(frozen=True)
class Task:
    index: int
    scenario: Scenario
    case: Case
    predicate: str
    limits: Limits
    reductions: bool = True
    protocol: str | None = None  # None: the default protocol

    @property
    def label(self) -> str:
        return f"{self.case.name} · {self.predicate}"


def plan(
    scenarios: list[Scenario], predicates: list[str], overrides: dict, reductions: bool = True, protocol: str | None = None
) -> list[Task]:
    """Scenarios in the given order, their cases in matrix order, predicates in command-line order;
    `protocol` (from --protocol) replaces each scenario's own."""
    tasks = []
    for s in scenarios:
        for case in s.cases:
            for p in predicates:
                tasks.append(Task(len(tasks), s, case, p, s.limits_for(p, overrides), reductions, protocol or s.protocol))
    return tasks


def run_one(task: Task, on_progress=None) -> CheckResult:
    return run_check(task.case.config, task.predicate, task.limits, on_progress, task.case.name, task.reductions, task.protocol)


def run_check(
    config, predicate: str, limits: Limits, on_progress, label: str, reductions: bool = True, protocol: str | None = None
) -> CheckResult:
    """`prefetch_check.api.check`, with a user's predicate that raises reported as bad input."""
    if predicate in BUILTIN:
        return check(config, predicate, limits, on_progress, reductions, protocol)
    try:
        return check(config, predicate, limits, on_progress, reductions, protocol)
    except Exception as exc:  # the user's code: say where it failed, without a traceback
        frame = traceback.extract_tb(exc.__traceback__)[-1]
        raise PredicateFailed(
            f"predicate {predicate!r} raised {type(exc).__name__}: {exc} ({frame.filename}, line {frame.lineno}, "
            f"while checking {label}); a predicate receives an OperationView with hash_value, completed_tokens, "
            f"page_size, terminated, policy and timed_out, and returns True when this rank may stop waiting"
        ) from None


def run_tasks(tasks: list[Task], jobs: int, progress) -> list[CheckResult]:
    """Every task's result, in task order; `progress` is a RunProgress (or anything with its methods)."""
    if jobs <= 1 or len(tasks) <= 1:
        results = []
        for t in tasks:
            progress.start(t.index, t.label)
            result = run_one(t, progress.callback(t.index))
            progress.finish(t.index, result)
            results.append(result)
        return results
    return _run_parallel(tasks, jobs, progress)


# ---- worker processes ----

_events = None  # the worker's queue back to the parent (set once per worker process)


def _init_worker(events) -> None:
    global _events
    _events = events


def _work(task: Task) -> tuple[int, CheckResult]:
    _events.put(("start", task.index, None))
    result = run_one(task, lambda info: _events.put(("update", task.index, info)))
    return task.index, result


def _run_parallel(tasks: list[Task], jobs: int, progress) -> list[CheckResult]:
    ctx = multiprocessing.get_context("spawn")
    events = ctx.Queue()
    labels = {t.index: t.label for t in tasks}
    results: dict[int, CheckResult] = {}
    with ProcessPoolExecutor(max_workers=min(jobs, len(tasks)), mp_context=ctx,
                             initializer=_init_worker, initargs=(events,)) as pool:
        pending = {pool.submit(_work, t) for t in tasks}
        try:
            while pending:
                done, pending = wait(pending, timeout=0.2, return_when=FIRST_COMPLETED)
                _drain(events, progress, labels, results)
                for future in done:
                    index, result = future.result()
                    results[index] = result
                    progress.finish(index, result)
        except BaseException:
            for future in pending:  # do not start what is still queued; running checks finish
                future.cancel()
            raise
    return [results[t.index] for t in tasks]


def _drain(events, progress, labels, finished) -> None:
    while True:
        try:
            kind, index, info = events.get_nowait()
        except queue_module.Empty:
            return
        if index in finished:  # a late event of a check already reported
            continue
        if kind == "start":
            progress.start(index, labels[index])
        else:
            progress.update(index, info)


# ---- results as report entries ----

def parameters(case: Case, protocol: str | None = None) -> dict:
    """The protocol's name and the case's Config as plain JSON values (frozensets become sorted lists)."""

    def plain(v):
        if isinstance(v, (frozenset, set)):
            return sorted(v)
        if isinstance(v, (list, tuple)):
            return [plain(x) for x in v]
        if isinstance(v, dict):
            return {k: plain(x) for k, x in v.items()}
        return v

    return {"protocol": protocol_label(load_protocol(protocol)), **plain(dataclasses.asdict(case.config))}


def entries(tasks: list[Task], results: list[CheckResult]) -> list[Entry]:
    out = []
    for t, r in zip(tasks, results):
        expect = t.scenario.expectation(t.predicate)
        out.append(
            Entry(
                subject=t.case.name,
                variant=t.predicate,
                result=r,
                expectations=expect.judge(r) if expect else (),
                parameters=parameters(t.case, t.protocol),
                source=t.scenario.path,
            )
        )
    return out
