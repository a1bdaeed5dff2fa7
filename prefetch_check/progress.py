"""Progress of long searches: states, states/s, frontier and depth while checks run.

On a terminal it is a live rich display (redrawn in place); anywhere else (CI logs,
pipes) it is plain lines, throttled, so logs stay readable. It writes to stderr:
stdout carries only the results, identical whatever the display or `--jobs`.
"""

from __future__ import annotations

import time
from typing import Optional

from rich.console import Console, Group
from rich.live import Live
from rich.table import Table
from rich.text import Text

PLAIN_EVERY = 10.0  # seconds between plain progress lines of one running check


def progress_console() -> Console:
    return Console(stderr=True, markup=False)


class RunProgress:
    """Tracks many checks by key; `callback(key)` gives the explorer's `on_progress`."""

    def __init__(self, total: int, console: Optional[Console] = None, live: Optional[bool] = None, quiet: bool = False):
        self.console = console or progress_console()
        self.total = total
        self.done = 0
        self.quiet = quiet
        self.live = self.console.is_terminal if live is None else live
        self.running: dict = {}  # key -> {"label", "start", "info", "printed"}
        self._live: Optional[Live] = None

    # ---- context: start and stop the live display ----

    def __enter__(self) -> "RunProgress":
        if self.live and not self.quiet:
            self._live = Live(console=self.console, get_renderable=self._render, refresh_per_second=4, transient=True)
            self._live.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        if self._live is not None:
            self._live.__exit__(*exc)
            self._live = None

    # ---- events ----

    def start(self, key, label: str) -> None:
        now = time.perf_counter()
        self.running[key] = {"label": label, "start": now, "info": {}, "printed": now}

    def update(self, key, info: dict) -> None:
        run = self.running.get(key)
        if run is None:
            return
        phase = info.get("phase", "search")
        if phase == "search":
            run["info"] = info
        run["phase"] = phase
        run["phase_seconds"] = info.get("seconds", 0.0)
        now = time.perf_counter()
        if not self.live and not self.quiet and now - run["printed"] >= PLAIN_EVERY:
            run["printed"] = now
            if phase == "search":
                text = _numbers(info)
            else:  # after the search: say which phase the time goes to
                text = f"{phase}, {run['phase_seconds']:.0f}s of it ({now - run['start']:.0f}s in all)"
            self.console.print(f"      {run['label']}: {text}", highlight=False, soft_wrap=True)

    def finish(self, key, result) -> None:
        run = self.running.pop(key, {"label": str(key)})
        self.done += 1
        if self.quiet:
            return
        st = result.stats
        width = len(str(self.total))
        line = f"[{self.done:>{width}}/{self.total}] {run['label']}: {st.states:,} states, {st.total_seconds:.2f}s"
        if not st.complete:
            line += f" ({st.stop_reason})"
        if self._live is not None:
            self._live.console.print(line, style="dim", highlight=False, soft_wrap=True)
        else:
            self.console.print(line, highlight=False, soft_wrap=True)

    def callback(self, key):
        """An `on_progress` function for one check."""
        return lambda info: self.update(key, info)

    # ---- the live view ----

    def _render(self):
        table = Table(box=None, show_header=True, header_style="bold", pad_edge=False)
        for name, justify in (("checking", "left"), ("phase", "left"), ("states", "right"), ("states/s", "right"),
                              ("frontier", "right"), ("depth", "right"), ("time", "right")):
            table.add_column(name, justify=justify)
        now = time.perf_counter()
        for run in list(self.running.values()):
            info = run["info"]
            secs = info.get("seconds") or (now - run["start"])
            rate = info.get("states", 0) / secs if secs > 0 else 0
            table.add_row(
                Text(run["label"]), run.get("phase", "search"), f"{info.get('states', 0):,}", f"{rate:,.0f}", f"{info.get('frontier', 0):,}",
                str(info.get("depth", 0)), f"{now - run['start']:.1f}s",
            )
        head = Text(f"{self.done}/{self.total} checks done", style="bold")
        return Group(head, table)


def _numbers(info: dict) -> str:
    secs = info.get("seconds", 0)
    rate = info.get("states", 0) / secs if secs else 0
    return (
        f"{info.get('states', 0):,} states ({rate:,.0f}/s), frontier {info.get('frontier', 0):,}, "
        f"depth {info.get('depth', 0)}, {secs:.0f}s"
    )
