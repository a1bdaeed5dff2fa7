"""The benchmark of issue 4: which rows it runs, how one row is measured, and how it is judged.

Each row runs in a fresh process (multiprocessing, 'spawn') so that the peak resident
memory it reports is that row's alone, and so that a row can be killed when it outlives
its budget. The search itself gets the budget as its time limit; a row whose search is
cut, or that is killed at budget plus grace (for instance in the progress analysis), is
BOUNDED with the figures it reached, never verified.

Figures of one row:
  seconds          search plus progress analysis (`Stats.seconds + Stats.progress_seconds`)
  states           distinct states the search visited; stored: those kept in the visited set
                   (the reduced search walks through a state with a single chosen step
                   without storing it, see explorer/bfs.py)
  states/s         distinct states per second of the search alone
  peak MiB         peak resident memory of the row's process (ru_maxrss), progress analysis included
  bytes per state  (peak RSS when the search ends - RSS before it) / distinct states: what one
                   stored state costs, visited set, BFS bookkeeping and the edges kept for the
                   progress analysis together (approximate: RSS grows in pages and the
                   allocator keeps freed memory)
"""

from __future__ import annotations

import multiprocessing
import os
import platform
import time
from dataclasses import asdict, dataclass, field
from typing import Callable, Optional

from prefetch_check.bench_sampling import SAMPLING_ROWS
from prefetch_check.bench_sampling import SECTION as SAMPLING
from prefetch_check.bench_startup import SECTION as STARTUP
from prefetch_check.bench_startup import STARTUP_ROWS
from prefetch_check.bench_table import SECTION as TABLE
from prefetch_check.bench_table import TABLE_ROWS
from prefetch_check.explorer.limits import Limits, peak_memory_mb
from prefetch_check.explorer.result import BOUNDED, NOT_APPLICABLE, VERIFIED, VIOLATED
from prefetch_check.model.protocols.registry import DEFAULT, descriptor, names

PREDICATE = "fixed"
POLICY = "wait_complete"
DEFAULT_BUDGET = 60.0  # seconds per row
DEFAULT_MAX_MEMORY_MB = 8192  # per row: the machine is shared; a row over it is BOUNDED


def grace_for(budget: float) -> float:
    """How long past its budget a row may run (progress analysis, traces) before it is killed."""
    return 5.0 + budget / 2


@dataclass(frozen=True)
class Target:
    """A target figure of issue 4 and how a row is held against it."""

    text: str
    max_seconds: Optional[float] = None
    min_states_per_second: Optional[float] = None


@dataclass(frozen=True)
class Row:
    key: str  # what --rows names
    section: str  # reference | throughput | growth
    ranks: int
    requests: int
    pages: int
    reductions: bool
    target: Optional[Target] = None
    quick: bool = False  # part of `--quick`
    note: str = ""
    policy: str = POLICY
    workers: int = 1  # processes the row's one search runs on
    protocol: str = DEFAULT  # a registered protocol's name
    options: tuple = ()  # (field, value) pairs of its configuration beyond the row's sizes

    @property
    def configuration(self) -> str:
        short = descriptor(self.protocol).short
        text = (f"{short} " if short else "") + f"R={self.ranks} q={self.requests} p={self.pages}"
        if self.policy != POLICY:
            text += f" {self.policy}"
        return text + (f" x{self.workers} proc" if self.workers > 1 else "")

    def config(self):
        uniform = descriptor(self.protocol).uniform_config()
        return uniform(ranks=self.ranks, requests=self.requests, pages=self.pages, policy=self.policy, **dict(self.options))


# the ack-drain rows (issue 23): one page per storage batch, threshold one page
ACK = dict(protocol="ack-drain", options=(("storage_batch_size", 1), ("prefetch_threshold", 1)))


ALL_PROPERTIES = "all properties (the C reference: safety only)"
ROWS: tuple[Row, ...] = (
    Row("ref-3x2x3-off", "reference", 3, 2, 3, False, note=ALL_PROPERTIES),
    Row("ref-3x2x3-on", "reference", 3, 2, 3, True, note=ALL_PROPERTIES,
        target=Target("<= 9 s (C: 565,000 states)", max_seconds=9.0)),
    Row("ref-2x2x2-off", "reference", 2, 2, 2, False, quick=True),
    Row("ref-2x2x2-on", "reference", 2, 2, 2, True, quick=True,
        target=Target("<= 4 s (C: 10,750 states)", max_seconds=4.0)),
    Row("plain-2x2x2", "throughput", 2, 2, 2, False, quick=True,
        target=Target(">= 100,000 states/s", min_states_per_second=100_000.0)),
) + tuple(
    Row(f"growth-R{r}", "growth", r, 2, 4, True, quick=r <= 2,
        target=Target("<= 60 s, all verified", max_seconds=60.0) if r == 8 else None)
    for r in range(1, 9)
) + (
    # issue 13: TP=16 and the timeout policy at TP=8, exhaustively on one core
    Row("scale-R16", "scale", 16, 2, 2, True, quick=True,
        target=Target("<= 60 s, all verified (issue 13)", max_seconds=60.0)),
    Row("scale-R8-timeout", "scale", 8, 2, 2, True, policy="timeout",
        target=Target("<= 60 s, all verified (issue 13)", max_seconds=60.0)),
    # one search on one process and on two (the speed-up is judged below the table)
    Row("parallel-small-w1", "parallel", 2, 2, 2, True, policy="timeout", quick=True),
    Row("parallel-small-w2", "parallel", 2, 2, 2, True, policy="timeout", quick=True, workers=2),
    Row("parallel-w1", "parallel", 4, 2, 2, True, policy="timeout"),
    Row("parallel-w2", "parallel", 4, 2, 2, True, policy="timeout", workers=2),
) + (
    # issue 23: the protocol users run (ack-drain) under the default policy (timeout), two requests;
    # ack-drain rows: 2 pages, storage batch 1, threshold 1; the predicate-poll rows beside them
    Row("ack-R3x1-timeout", "timeout", 3, 1, 2, True, policy="timeout", **ACK),
    Row("ack-R2x2-wait", "timeout", 2, 2, 2, True, policy="wait_complete", **ACK, quick=True),
    Row("ack-R2x2-timeout", "timeout", 2, 2, 2, True, policy="timeout", **ACK,
        target=Target("<= 60 s, all verified (issue 23)", max_seconds=60.0)),
    Row("poll-R2x2-timeout", "timeout", 2, 2, 2, True, policy="timeout"),
    Row("ack-R3x2-timeout", "timeout", 3, 2, 2, True, policy="timeout", **ACK),
    Row("ack-R4x2-timeout", "timeout", 4, 2, 2, True, policy="timeout", **ACK),
    Row("poll-R4x2-timeout", "timeout", 4, 2, 2, True, policy="timeout"),
)
SECTIONS = ("reference", "throughput", "growth", "scale", "parallel", "timeout")
SPEEDUP_TARGET = 1.7  # issue 13: one search on 2 processes against 1


def select_rows(names: Optional[list[str]], quick: bool) -> list[Row]:
    """Rows by key or section name (in the benchmark's order), or all / the quick ones."""
    from prefetch_check.scenario.errors import InputError, did_you_mean

    if not names:
        return [r for r in ROWS if r.quick or not quick]
    valid = ([r.key for r in ROWS] + list(SECTIONS) + [r.key for r in SAMPLING_ROWS] + [SAMPLING]
             + [r.key for r in STARTUP_ROWS] + [STARTUP] + [r.key for r in TABLE_ROWS] + [TABLE])
    for n in names:
        if n not in valid:
            raise InputError(f"--rows: unknown row {n!r}" + did_you_mean(n, valid))
    return [r for r in ROWS if (r.key in names or r.section in names) and (r.quick or not quick)]


def select_startup_rows(names: Optional[list[str]], quick: bool) -> list:
    """The start-up rows (bench_startup.py) named, or all (they take seconds: part of --quick too)."""
    if not names:
        return [r for r in STARTUP_ROWS if r.quick or not quick]
    return [r for r in STARTUP_ROWS if (r.key in names or r.section in names) and (r.quick or not quick)]


def select_table_rows(names: Optional[list[str]]) -> list:
    """The release-table rows (bench_table.py), only when named: they take minutes and fetch releases."""
    return [r for r in TABLE_ROWS if names and (r.key in names or r.section in names)]


def select_sampling_rows(names: Optional[list[str]], quick: bool) -> list:
    """The sampling rows (bench_sampling.py) named, or all / the quick ones (names checked by select_rows)."""
    if not names:
        return [r for r in SAMPLING_ROWS if r.quick or not quick]
    return [r for r in SAMPLING_ROWS if (r.key in names or r.section in names) and (r.quick or not quick)]


# ---- one row, measured in its own process ----


@dataclass
class Measurement:
    row: Row
    ran: bool = True  # False: not run because an earlier growth row was bounded
    complete: bool = False
    killed: bool = False
    error: str = ""  # the row's process died without a result
    states: int = 0  # distinct states visited
    stored: Optional[int] = None  # of them, kept in the visited set (the rest were fused through)
    transitions: int = 0
    depth: int = 0
    search_seconds: float = 0.0
    progress_seconds: float = 0.0
    check_seconds: float = 0.0  # the whole check() call: search, progress, counterexample replay
    peak_mib: Optional[float] = None
    search_peak_mib: Optional[float] = None  # peak when the search ended, before the progress analysis
    baseline_mib: Optional[float] = None
    stop_reason: str = ""
    verdicts: dict = field(default_factory=dict)

    @property
    def seconds(self) -> float:
        return self.search_seconds + self.progress_seconds

    @property
    def states_per_second(self) -> Optional[float]:
        return self.states / self.search_seconds if self.search_seconds > 0 else None

    @property
    def bytes_per_state(self) -> Optional[float]:
        if self.search_peak_mib is None or self.baseline_mib is None or not self.states:
            return None
        grown = self.search_peak_mib - self.baseline_mib
        return grown * 1024 * 1024 / self.states if grown > 0 else None  # too small a search to see

    @property
    def bounded(self) -> bool:
        return self.ran and not self.error and not self.complete

    def summary(self) -> str:
        """VERIFIED all / VIOLATED: which / BOUNDED: why (with what is already violated)."""
        if not self.ran:
            return f"not run: {self.stop_reason}"
        if self.error:
            return f"ERROR: {self.error}"
        violated = [n for n, v in self.verdicts.items() if v == VIOLATED]
        cut = [n for n, v in self.verdicts.items() if v == BOUNDED]  # after a full search: the analysis was cut
        if self.complete and not violated and not cut:
            na = sum(v == NOT_APPLICABLE for v in self.verdicts.values())
            return f"{VERIFIED} all" + (f" ({na} not applicable)" if na else "")
        parts = [f"{VIOLATED}: " + ", ".join(violated)] if violated else []
        if not self.complete:
            parts.append(f"{BOUNDED}: {self.stop_reason}")
        elif cut:
            parts.append(f"{BOUNDED}: " + ", ".join(cut) + " (the budget ran out after the search)")
        return "; ".join(parts)

    def met(self) -> Optional[bool]:
        """Whether the row meets its target (None: the row has none). A row that did not
        verify everything does not meet a target, however fast it was."""
        t = self.row.target
        if t is None:
            return None
        if not self.ran or self.error or not self.complete:
            return False
        if t.max_seconds is not None and not (self.seconds <= t.max_seconds and self.summary().startswith(VERIFIED)):
            return False
        if t.min_states_per_second is not None and not (self.states_per_second or 0) >= t.min_states_per_second:
            return False
        return True

    def as_json(self) -> dict:
        t = self.row.target
        return {
            "row": self.row.key,
            "section": self.row.section,
            "configuration": {"ranks": self.row.ranks, "requests": self.row.requests, "pages": self.row.pages,
                              "predicate": PREDICATE, "policy": self.row.policy, "protocol": self.row.protocol},
            "workers": self.row.workers,
            "reductions": self.row.reductions,
            "note": self.row.note,
            "ran": self.ran,
            "complete": self.complete,
            "bounded": self.bounded,
            "killed": self.killed,
            "error": self.error,
            "stop_reason": self.stop_reason,
            "states": self.states,
            "stored": self.stored,
            "transitions": self.transitions,
            "depth": self.depth,
            "seconds": self.seconds,
            "search_seconds": self.search_seconds,
            "progress_seconds": self.progress_seconds,
            "check_seconds": self.check_seconds,
            "states_per_second": self.states_per_second,
            "peak_mib": self.peak_mib,
            "search_peak_mib": self.search_peak_mib,
            "baseline_mib": self.baseline_mib,
            "bytes_per_state": self.bytes_per_state,
            "verdicts": self.verdicts,
            "summary": self.summary(),
            "target": None if t is None else {**asdict(t), "met": self.met()},
        }


def _child(row: Row, budget: float, max_memory_mb: int, conn) -> None:
    """The row's process: one check, progress and the figures sent back over `conn`."""
    from prefetch_check.api import check

    config = row.config()
    baseline = peak_memory_mb()
    conn.send(("baseline", baseline))

    def progress(info: dict) -> None:
        if info.get("done"):  # the search has ended; the progress analysis comes next
            info = {**info, "search_peak_mib": peak_memory_mb()}
        conn.send(("progress", info))

    t0 = time.perf_counter()
    search_end: dict = {}

    def progress_and_peak(info: dict) -> None:
        if info.get("done") and info.get("phase") == "search":
            search_end.setdefault("mib", peak_memory_mb())
        progress(info)

    result = check(config, PREDICATE, Limits(time_limit=budget, max_memory_mb=max_memory_mb),
                   on_progress=progress_and_peak, reductions=row.reductions, workers=row.workers,
                   protocol=row.protocol)
    check_seconds = time.perf_counter() - t0
    s = result.stats
    peak = peak_memory_mb()
    if row.workers > 1:  # the workers' peaks (in the search's figure) come on top of this process's
        peak += max(0.0, s.peak_memory_mb - search_end.get("mib", s.peak_memory_mb))
    conn.send(("result", {
        "complete": s.complete, "states": s.states, "transitions": s.transitions, "depth": s.max_depth,
        "stored": s.stored_states if s.stored_states is not None else s.states,
        "search_seconds": s.seconds, "progress_seconds": s.progress_seconds, "check_seconds": check_seconds,
        "peak_mib": peak, "baseline_mib": baseline, "stop_reason": s.stop_reason or "",
        "verdicts": {n: r.verdict for n, r in result.results.items()},
    }))
    conn.close()


def _high_water_mib(pid: int) -> Optional[float]:
    """Peak RSS of a live process from /proc (Linux), for a row about to be killed."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def measure(row: Row, budget: float = DEFAULT_BUDGET, max_memory_mb: int = DEFAULT_MAX_MEMORY_MB,
            grace: Optional[float] = None) -> Measurement:
    """Run one row in a fresh process; kill it at budget + grace."""
    ctx = multiprocessing.get_context("spawn")
    receiver, sender = ctx.Pipe(duplex=False)
    # a row whose search starts workers cannot be daemonic; its workers end with it (parallel.py)
    proc = ctx.Process(target=_child, args=(row, budget, max_memory_mb, sender), daemon=row.workers == 1)
    proc.start()
    sender.close()
    grace = grace_for(budget) if grace is None else grace
    deadline = time.monotonic() + budget + grace
    last: dict = {}
    baseline, started = None, None
    figures = None
    while figures is None:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            break
        try:
            if not receiver.poll(min(remaining, 0.5)):
                continue
            kind, payload = receiver.recv()
        except EOFError:  # the process ended without a result
            break
        if kind == "progress":
            last = payload
        elif kind == "baseline":
            baseline, started = payload, time.monotonic()
        else:
            figures = payload
    m = Measurement(row, search_peak_mib=last.get("search_peak_mib"))
    if figures is not None:
        proc.join()
        for k, v in figures.items():
            setattr(m, k, v)
        if not m.complete:
            m.stop_reason = m.stop_reason.replace(" reached", "")
        return m
    if proc.is_alive():
        m.killed = True
        m.peak_mib = _high_water_mib(proc.pid)
        proc.kill()
        proc.join()
        m.check_seconds = time.monotonic() - started if started is not None else 0.0
        m.stop_reason = f"killed at {budget + grace:g} s"
        if last.get("done"):  # the search had finished: the time since went to the progress analysis
            m.stop_reason += " during the progress analysis"
            m.progress_seconds = max(0.0, m.check_seconds - last.get("seconds", 0.0))
    else:
        proc.join()
        m.error = f"the row's process exited with status {proc.exitcode} without a result"
    m.baseline_mib = baseline
    m.states, m.transitions = last.get("states", 0), last.get("transitions", 0)
    m.depth, m.search_seconds = last.get("depth", 0), last.get("seconds", 0.0)
    if m.killed and not last.get("done"):
        m.search_seconds = m.check_seconds
    return m


def run(rows: list[Row], budget: float = DEFAULT_BUDGET, max_memory_mb: int = DEFAULT_MAX_MEMORY_MB,
        on_row: Optional[Callable] = None, grace: Optional[float] = None) -> list[Measurement]:
    """Measure the rows in order; growth stops after its first bounded row (larger R is only slower)."""
    out = []
    stopped: Optional[Row] = None
    for i, row in enumerate(rows):
        if on_row is not None:
            on_row(i, row, None)
        if row.section == "growth" and stopped is not None:
            m = Measurement(row, ran=False, stop_reason=f"{stopped.key} was bounded")
        else:
            m = measure(row, budget, max_memory_mb, grace)
            if row.section == "growth" and (m.bounded or m.error):
                stopped = row
        out.append(m)
        if on_row is not None:
            on_row(i, row, m)
    return out


# ---- judging the growth with R ----


@dataclass(frozen=True)
class Growth:
    ranks: tuple[int, ...]  # the growth rows searched in full
    states: tuple[int, ...]
    ratios: tuple[float, ...]  # states(R) / states(R-1), for consecutive R
    met: Optional[bool]  # None: not judged, the run did not ask for every R = 1..8 (e.g. --quick)
    text: str


def growth(measurements: list[Measurement]) -> Optional[Growth]:
    """States against R for the complete growth rows, and whether the growth is polynomial.

    Polynomial growth makes the ratio states(R)/states(R-1) fall towards 1 as R grows;
    exponential growth keeps it near a constant above 1. The target counts as met when
    every R = 1..8 was searched in full and the ratio falls at every step from R=3 on
    (R=1, a single rank, has no interleaving and is left out of the trend). A run that
    did not ask for every R = 1..8 (`--quick`, `--rows`) leaves it unjudged (met None): a
    target cannot be missed by rows that were never run; one that asked for them and
    saw a row bounded (or not run after it) has not met it.
    """
    asked = {m.row.ranks for m in measurements if m.row.section == "growth"}
    rows = [m for m in measurements if m.row.section == "growth" and m.complete]
    if not rows:
        return None
    ranks = tuple(m.row.ranks for m in rows)
    states = tuple(m.states for m in rows)
    steps = [(rb, b / a) for (ra, a), (rb, b) in zip(zip(ranks, states), zip(ranks[1:], states[1:])) if rb == ra + 1]
    ratios = tuple(r for _, r in steps)
    trend = [r for rank, r in steps if rank >= 3]
    falling = all(later < earlier for earlier, later in zip(trend, trend[1:]))
    full = ranks == tuple(range(1, 9))
    met = (full and falling) if asked >= set(range(1, 9)) else None
    if met is None:
        why = f"not judged: only R={','.join(map(str, sorted(asked)))} run, the target needs R=1..8"
    elif not full:
        why = f"only R={','.join(map(str, ranks))} searched in full"
    else:
        why = "the ratio falls at every step" if falling else "the ratio does not fall at every step"
    text = "states(R)/states(R-1): " + (", ".join(f"R={rank}: x{r:.2f}" for rank, r in steps) or "-") + f" ({why})"
    return Growth(ranks, states, ratios, met, text)


def rank_costs(measurements: list[Measurement]) -> list[str]:
    """For the timeout section (issue 23): what one more rank costs, per protocol, from the rows
    R x 2 requests that ran: states(R)/states(R-1) and seconds(R)/seconds(R-1) where both were
    searched in full, or the states a bounded row had reached when its budget ran out."""
    lines = []
    for protocol in sorted(names()):
        rows = sorted((m for m in measurements if m.row.section == "timeout" and m.row.protocol == protocol
                       and m.row.requests == 2 and m.row.policy == "timeout" and m.ran and not m.error),
                      key=lambda m: m.row.ranks)
        if len(rows) < 2:
            continue
        parts = []
        for a, b in zip(rows, rows[1:]):
            if a.complete and b.complete and a.states:
                parts.append(f"R={a.row.ranks}->{b.row.ranks} ({b.row.ranks - a.row.ranks} rank(s)): states "
                             f"x{b.states / a.states:.2f}, seconds x{b.seconds / max(a.seconds, 1e-9):.2f}")
            elif a.complete and not b.complete:
                parts.append(f"R={b.row.ranks}: BOUNDED after {b.states:,} states (more than x{b.states / max(a.states, 1):.2f} "
                             f"the R={a.row.ranks} count)")
        if parts:
            lines.append(f"{protocol}, 2 requests, timeout: " + "; ".join(parts))
    return lines


@dataclass(frozen=True)
class Speedup:
    one: str  # row keys
    two: str
    factor: float  # seconds of the search on one process / on two
    met: bool
    text: str


def speedups(measurements: list[Measurement], headroom: Optional[float] = None) -> list[Speedup]:
    """For each pair of rows `X-w1` / `X-w2` that both finished: how much faster the search ran on
    two processes, against the target; `headroom` (see `parallel_headroom`) says what two processes
    could gain on this machine at the time."""
    by_key = {m.row.key: m for m in measurements}
    out = []
    for key, one in by_key.items():
        if not key.endswith("-w1"):
            continue
        two = by_key.get(key[:-3] + "-w2")
        if two is None or not (one.complete and two.complete) or not two.search_seconds:
            continue
        factor = one.search_seconds / two.search_seconds
        met = factor >= SPEEDUP_TARGET
        text = (f"{two.row.key}: search {factor:.2f}x as fast as {one.row.key} ({one.search_seconds:.2f} s -> "
                f"{two.search_seconds:.2f} s; target >= {SPEEDUP_TARGET}x: {'met' if met else 'NOT MET'})")
        if two.seconds:  # the progress analysis runs in one process after either search, on every stored state
            text += (f"; the whole check {one.seconds / two.seconds:.2f}x ({one.seconds:.2f} s -> {two.seconds:.2f} s, "
                     f"progress analysis included)")
        if headroom is not None:
            text += f"; two busy processes ran {headroom:.2f}x as fast as one on this machine just before"
        out.append(Speedup(one.row.key, two.row.key, factor, met, text))
    return out


def _spin(n: int, conn) -> None:
    start = time.process_time()
    x = 0
    for i in range(n):
        x += i
    conn.send(time.process_time() - start)


def parallel_headroom(n: int = 10_000_000) -> float:
    """What two processes gain on this machine now: the same pure-Python loop in one process, then
    in two at once (wall time); 2.0 on two idle cores, less when other work shares them."""
    ctx = multiprocessing.get_context("fork")

    def wall(k: int) -> float:
        pipes = [ctx.Pipe(duplex=False) for _ in range(k)]
        procs = [ctx.Process(target=_spin, args=(n, w)) for _, w in pipes]
        t0 = time.perf_counter()
        for p in procs:
            p.start()
        for (r, _), p in zip(pipes, procs):
            r.recv()
            p.join()
        return time.perf_counter() - t0

    one = wall(1)
    return 2 * one / wall(2)


def machine() -> dict:
    return {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform(),
            "load_average": list(os.getloadavg()) if hasattr(os, "getloadavg") else None}


def to_json(measurements: list[Measurement], budget: float, max_memory_mb: int, headroom: Optional[float] = None) -> dict:
    g = growth(measurements)
    return {
        "predicate": PREDICATE,
        "policy": POLICY,
        "budget_seconds": budget,
        "grace_seconds": grace_for(budget),
        "max_memory_mb": max_memory_mb,
        "machine": machine(),
        "bytes_per_state": "(peak RSS when the search ends - RSS before it) / distinct states: visited set, "
                           "BFS bookkeeping and the edges kept for the progress analysis; approximate",
        "rows": [m.as_json() for m in measurements],
        "growth": None if g is None else {"ranks": g.ranks, "states": g.states, "ratios": g.ratios,
                                          "polynomial_met": g.met, "text": g.text},
        "rank_costs": rank_costs(measurements),
        "parallel_headroom": headroom,
        "speedups": [asdict(x) for x in speedups(measurements, headroom)],
    }
