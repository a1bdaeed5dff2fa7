"""The progress display: plain, throttled lines off a terminal; a live view on one."""

from __future__ import annotations

import io

from rich.console import Console

from prefetch_check import progress as progress_module
from prefetch_check.api import check
from prefetch_check.progress import RunProgress
from prefetch_check.model.protocols.poll.config import uniform_config


def plain_console():
    return Console(file=io.StringIO(), force_terminal=False, width=120)


def clock_reads(monkeypatch, *times: float) -> None:
    """The progress display's clock reads `times`, one a call."""
    clock = iter(times)
    monkeypatch.setattr(progress_module.time, "perf_counter", lambda: next(clock))


def test_plain_lines_report_each_finished_check_with_its_numbers():
    console = plain_console()
    result = check(uniform_config(ranks=1, pages=1), "fixed")
    with RunProgress(2, console=console) as p:
        p.start("a", "seed · fixed")
        p.finish("a", result)
    text = console.file.getvalue()
    assert text == f"[1/2] seed · fixed: {result.stats.states:,} states, {result.stats.seconds + result.stats.progress_seconds:.2f}s\n"


def test_plain_progress_lines_are_throttled(monkeypatch):
    console = plain_console()
    clock_reads(monkeypatch, 0.0, 1.0, 20.0)
    with RunProgress(1, console=console) as p:
        p.start("a", "big · buggy")  # t=0
        p.update("a", {"states": 4096, "frontier": 100, "depth": 7, "seconds": 1.0})  # t=1: too soon
        p.update("a", {"states": 40960, "frontier": 900, "depth": 12, "seconds": 20.0})  # t=20: printed
    assert console.file.getvalue() == "      big · buggy: 40,960 states (2,048/s), frontier 900, depth 12, 20s\n"


def test_plain_progress_lines_name_the_phase_after_the_search(monkeypatch):
    console = plain_console()
    clock_reads(monkeypatch, 0.0, 5.0, 30.0)
    with RunProgress(1, console=console) as p:
        p.start("a", "big · buggy")  # t=0
        p.update("a", {"phase": "search", "states": 4096, "frontier": 0, "depth": 7, "seconds": 5.0, "done": True})
        p.update("a", {"phase": "shortening", "seconds": 25.0})  # t=30: printed
    assert console.file.getvalue() == "      big · buggy: shortening, 25s of it (30s in all)\n"


def test_quiet_prints_nothing():
    console = plain_console()
    with RunProgress(1, console=console, quiet=True) as p:
        p.start("a", "x")
        p.finish("a", check(uniform_config(ranks=1, pages=1), "fixed"))
    assert console.file.getvalue() == ""


def test_live_view_shows_states_rate_frontier_and_depth():
    console = Console(file=io.StringIO(), force_terminal=True, width=120)
    p = RunProgress(3, console=console)
    assert p.live
    p.start("a", "tp4 · buggy")
    p.update("a", {"states": 10000, "frontier": 2500, "depth": 14, "seconds": 2.0})
    rendered = Console(file=io.StringIO(), width=120)
    rendered.print(p._render())
    text = rendered.file.getvalue()
    assert "0/3 checks done" in text
    for needle in ("states/s", "frontier", "depth", "tp4 · buggy", "10,000", "5,000", "2,500", "14"):
        assert needle in text
