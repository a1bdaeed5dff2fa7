"""Run every (scenario case, predicate) pair, on one core or several, in a fixed report order.

Each pair is one task; `--jobs N` spreads tasks over N worker processes of our own (spawned,
so a live display's thread is never forked). Results come back in task order whatever N is,
so the report is the same for any number of jobs.

Interrupts: SIGINT (Ctrl-C, `kill -INT`, `timeout -s INT`) or SIGTERM ends the run with
`Interrupted`, which holds the results of the checks that finished (for a partial report)
and the exit status (130 or 143). The workers ignore SIGINT (a Ctrl-C reaches the whole
process group; the parent decides) and are terminated by the parent, which never waits on
a worker: they report through a queue the parent alone reads, so nobody blocks on a full
pipe.
"""

from __future__ import annotations

import contextlib
import dataclasses
import multiprocessing
import os
import pickle
import queue as queue_module
import signal
import threading
import traceback
from dataclasses import dataclass

from prefetch_check.explorer.limits import Limits
from prefetch_check.explorer.report.records import Entry
from prefetch_check.explorer.result import CheckResult
from prefetch_check.model.protocols import protocol_label
from prefetch_check.model.protocols.poll.predicates import PredicateError
from prefetch_check.checker import Checker
from prefetch_check.scenario.errors import InputError
from prefetch_check.scenario.loader import Case, Scenario

POLL_SECONDS = 0.2  # how often the parent looks at its workers while waiting for events
STOP_SECONDS = 2.0  # how long a terminated worker gets before it is killed


class PredicateFailed(InputError):
    """A user's predicate raised: bad input, reported as one paragraph like any other."""


class WorkerDied(InputError):
    """A worker process ended without a result (killed, e.g. by the kernel when memory ran out)."""


class Interrupted(Exception):
    """SIGINT or SIGTERM ended the run; `results` (task index -> CheckResult) are the checks that finished."""

    def __init__(self, signum: int, results: dict):
        super().__init__(signal.Signals(signum).name)
        self.signum, self.results = signum, results

    @property
    def exit_status(self) -> int:
        return 128 + self.signum  # the shell's convention: 130 for SIGINT, 143 for SIGTERM


class _Terminated(BaseException):
    """SIGTERM, raised where the parent happens to be (like KeyboardInterrupt for SIGINT)."""


@dataclass(frozen=True)
class Task:
    index: int
    scenario: Scenario
    case: Case
    predicate: str
    limits: Limits
    reductions: bool = True
    workers: int = 1  # processes the one search runs on (--workers)

    @property
    def protocol(self):
        """The protocol the case is checked under (its own, or --protocol's; None: the default)."""
        return self.case.protocol

    @property
    def label(self) -> str:
        return f"{self.case.name} · {self.predicate}"


def plan(scenarios: list[Scenario], predicates: list[str], overrides: dict, reductions: bool = True,
         defaults: dict | None = None, protocol: str | None = None, workers: int = 1) -> list[Task]:
    """Scenarios in the given order, their cases in matrix order, predicates in command-line order.
    `defaults` are limits that apply where neither the scenario nor `overrides` set one;
    `protocol` (from --protocol) replaces each scenario's own."""
    tasks = []
    for s in scenarios:
        for case in s.cases:
            for p in predicates:
                tasks.append(Task(len(tasks), s, case.with_protocol(protocol), p, s.limits_for(p, overrides, defaults),
                                  reductions, workers))
    return tasks


def run_one(task: Task, on_progress=None) -> CheckResult:
    return run_check(task.case, task.predicate, task.limits, on_progress, task.reductions, task.workers)


class OutOfMemory(InputError):
    """Memory ran out after the search (which itself stops as BOUNDED), while its results were made."""


def run_check(case: Case, predicate: str, limits: Limits, on_progress, reductions: bool = True, workers: int = 1) -> CheckResult:
    """The case's `Checker.check()`, with a user's predicate that raises reported as bad input."""
    try:
        return _check(case, predicate, limits, on_progress, reductions, workers)
    except MemoryError:
        raise OutOfMemory(
            f"memory ran out while making the results of {case.name} under {predicate} (after its search); "
            f"give a lower --max-memory (now {limits.describe()}) so that the search stops earlier"
        ) from None


def _check(case: Case, predicate: str, limits: Limits, on_progress, reductions: bool, workers: int) -> CheckResult:
    label = case.name
    checker = Checker.of_case(case, predicate).limits(limits).on_progress(on_progress).reductions(reductions)
    checker = checker.workers(workers)
    if predicate in case.protocol_class.builtin_predicates:
        return checker.check()
    try:
        return checker.check()
    except PredicateError as exc:  # a source predicate refused on a state the load did not probe: file and line
        raise PredicateFailed(f"{exc}\n(while checking {label})") from None
    except MemoryError:
        raise  # not the predicate's fault (see run_check)
    except Exception as exc:  # the user's code: say where it failed, without a traceback
        frame = traceback.extract_tb(exc.__traceback__)[-1]
        raise PredicateFailed(
            f"predicate {predicate!r} raised {type(exc).__name__}: {exc} ({frame.filename}, line {frame.lineno}, "
            f"while checking {label}); a predicate receives an OperationView with hash_value, completed_tokens, "
            f"page_size, terminated, policy and timed_out, and returns True when this rank may stop waiting"
        ) from None


def run_tasks(tasks: list[Task], jobs: int, progress) -> list[CheckResult]:
    """Every task's result, in task order; `progress` is a RunProgress (or anything with its methods).
    Raises `Interrupted` (with the finished results) on SIGINT or SIGTERM."""
    if jobs <= 1 or len(tasks) <= 1:
        results: dict = {}
        try:
            with _terminate_as_exception():
                for t in tasks:
                    progress.start(t.index, t.label)
                    result = run_one(t, progress.callback(t.index))
                    progress.finish(t.index, result)
                    results[t.index] = result
        except KeyboardInterrupt:
            raise Interrupted(signal.SIGINT, results) from None
        except _Terminated:
            raise Interrupted(signal.SIGTERM, results) from None
        return [results[t.index] for t in tasks]
    return _run_parallel(tasks, jobs, progress)


@contextlib.contextmanager
def _terminate_as_exception():
    """SIGTERM raises `_Terminated` in the main thread while inside (so a partial report can be made)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def raise_terminated(signum, frame):
        raise _Terminated()

    previous = signal.signal(signal.SIGTERM, raise_terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextlib.contextmanager
def _signals_held():
    """SIGINT and SIGTERM ignored while inside: cleaning up must not be cut short by a second signal."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {s: signal.signal(s, signal.SIG_IGN) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


# ---- worker processes ----


def _worker(tasks: list[Task], todo, events) -> None:
    """Take task indices from `todo` until None; report ("start" | "update" | "done" | "error", index, payload)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides what an interrupt means
    while True:
        index = todo.get()
        if index is None:
            return
        events.put(("start", index, os.getpid()))
        try:
            result = run_one(tasks[index], lambda info, index=index: events.put(("update", index, info)))
        except BaseException as exc:  # noqa: BLE001 - every failure goes back to the parent, which decides
            events.put(("error", index, _portable(exc)))
            return
        events.put(("done", index, result))


def _portable(exc: BaseException) -> BaseException:
    """The exception itself if it pickles (bad input stays bad input), else its traceback as text."""
    if isinstance(exc, InputError):
        try:
            pickle.dumps(exc)
            return exc
        except Exception:  # noqa: BLE001
            return InputError(str(exc))
    text = "".join(traceback.format_exception(exc))
    return RuntimeError(f"a check failed in a worker process:\n{text}")


def _run_parallel(tasks: list[Task], jobs: int, progress) -> list[CheckResult]:
    ctx = multiprocessing.get_context("spawn")
    todo, events = ctx.Queue(), ctx.Queue()
    workers = [ctx.Process(target=_worker, args=(tasks, todo, events), daemon=True)
               for _ in range(min(jobs, len(tasks)))]
    for t in tasks:
        todo.put(t.index)
    for _ in workers:
        todo.put(None)
    labels = {t.index: t.label for t in tasks}
    results: dict[int, CheckResult] = {}
    running: dict[int, int] = {}  # task index -> pid of the worker checking it
    try:
        with _terminate_as_exception():
            for w in workers:
                w.start()
            while len(results) < len(tasks):
                try:
                    kind, index, payload = events.get(timeout=POLL_SECONDS)
                except queue_module.Empty:
                    _check_workers(workers, running, labels, events)
                    continue
                if kind == "start":
                    running[index] = payload
                    progress.start(index, labels[index])
                elif kind == "update":
                    progress.update(index, payload)
                elif kind == "done":
                    running.pop(index, None)
                    results[index] = payload
                    progress.finish(index, payload)
                else:
                    raise payload
    except KeyboardInterrupt:
        raise Interrupted(signal.SIGINT, results) from None
    except _Terminated:
        raise Interrupted(signal.SIGTERM, results) from None
    finally:
        _stop(workers, todo, events)
    return [results[t.index] for t in tasks]


def _check_workers(workers, running: dict, labels: dict, events) -> None:
    """A worker that died holding a task (e.g. killed when memory ran out) ends the run with a clear message.
    (A worker that exits normally has flushed its events first: exit status 0 is never a death.)"""
    by_pid = {pid: index for index, pid in running.items()}
    for w in workers:
        if w.exitcode and w.pid in by_pid:
            how = f"was killed by {signal.Signals(-w.exitcode).name}" if w.exitcode < 0 else f"exited with {w.exitcode}"
            raise WorkerDied(
                f"the worker process checking {labels[by_pid[w.pid]]} {how} before it finished (out of memory? "
                "try a lower --max-memory, or fewer --jobs)"
            )
    if all(w.exitcode is not None for w in workers) and events.empty():
        raise WorkerDied("every worker process ended before all checks finished")


def _stop(workers, todo, events) -> None:
    """End every worker (terminate, then kill the ones that linger) and release the queues."""
    with _signals_held():
        for w in workers:
            if w.pid is not None and w.exitcode is None:
                w.terminate()
        for w in workers:
            if w.pid is not None:
                w.join(STOP_SECONDS)
                if w.exitcode is None:
                    w.kill()
                    w.join()
        for q in (todo, events):
            q.cancel_join_thread()  # never wait at exit to flush what nobody will read
            q.close()


# ---- results as report entries ----

def parameters(case: Case) -> dict:
    """The protocol's name and the case's Config as plain JSON values (frozensets become sorted lists)."""

    def plain(v):
        if isinstance(v, (frozenset, set)):
            return sorted(v)
        if isinstance(v, (list, tuple)):
            return [plain(x) for x in v]
        if isinstance(v, dict):
            return {k: plain(x) for k, x in v.items()}
        return v

    return {"protocol": protocol_label(case.protocol_class), **plain(dataclasses.asdict(case.config))}


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
                parameters=parameters(t.case),
                source=t.scenario.path,
            )
        )
    return out
