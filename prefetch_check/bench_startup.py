"""The start-up row of the benchmark (issue 23): what a user and CI pay before any search.

Wall seconds of the installed command, each in a fresh interpreter (a subprocess, as a shell
runs it): `prefetch-check --version`, and `prefetch-check run` of one shipped scenario of
about 550 states (release-seed.toml: 552 states over buggy and fixed, a few hundredths of a
second of search). Each is run `REPEATS` times; the table gives the median and the fastest, so a
moment of contention on a shared machine does not make the figure. Whether Python may write
its bytecode cache (PYTHONDONTWRITEBYTECODE) is reported: without one, every start compiles the
package's modules again, which is part of what is measured.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

SECTION = "startup"
REPEATS = 5
SCENARIO = "release-seed.toml"  # 552 states over buggy and fixed (667 before issue 22 counted 0.5.1's whole batch)


@dataclass(frozen=True)
class StartupRow:
    key: str
    argv: tuple  # after the command
    target_seconds: float
    quick: bool = True

    @property
    def section(self) -> str:
        return SECTION

    @property
    def target(self) -> str:
        return f"median <= {self.target_seconds:g} s"


STARTUP_ROWS: tuple[StartupRow, ...] = (
    StartupRow("startup-version", ("--version",), 0.2),
    StartupRow("startup-run", ("run", "{scenario}", "-q"), 0.5),
)


@dataclass
class StartupMeasurement:
    row: StartupRow
    command: str = ""
    times: list = field(default_factory=list)
    error: str = ""

    @property
    def median(self) -> Optional[float]:
        return statistics.median(self.times) if self.times else None

    @property
    def fastest(self) -> Optional[float]:
        return min(self.times) if self.times else None

    def met(self) -> Optional[bool]:
        if self.error or not self.times:
            return False
        return self.median <= self.row.target_seconds

    def summary(self) -> str:
        return f"ERROR: {self.error}" if self.error else f"{len(self.times)} runs"

    def as_json(self) -> dict:
        return {"row": self.row.key, "section": SECTION, "command": self.command, "seconds": self.times,
                "median_seconds": self.median, "fastest_seconds": self.fastest, "error": self.error,
                "target": {"median_seconds": self.row.target_seconds, "met": self.met()},
                "bytecode_cache": not os.environ.get("PYTHONDONTWRITEBYTECODE")}


def command() -> list[str]:
    """The installed `prefetch-check` beside this interpreter, else `python -m prefetch_check`."""
    script = Path(sys.executable).with_name("prefetch-check")
    if script.is_file():
        return [str(script)]
    found = shutil.which("prefetch-check")
    return [found] if found else [sys.executable, "-m", "prefetch_check"]


def scenario_path() -> Optional[Path]:
    from prefetch_check.scenario.shipped import shipped_scenarios

    local = Path("scenarios") / SCENARIO
    if local.is_file():
        return local
    return next((p for p in shipped_scenarios() if p.name == SCENARIO), None)


def measure_startup(row: StartupRow, repeats: int = REPEATS) -> StartupMeasurement:
    scenario = scenario_path()
    argv = [a.format(scenario=scenario) for a in row.argv]
    m = StartupMeasurement(row, command=" ".join(["prefetch-check"] + argv))
    if scenario is None and any("{scenario}" in a for a in row.argv):
        m.error = f"the shipped scenario {SCENARIO} is not found"
        return m
    for _ in range(repeats):
        t0 = time.perf_counter()
        done = subprocess.run(command() + argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                              timeout=120)
        elapsed = time.perf_counter() - t0
        if done.returncode != 0:
            m.error = f"exit status {done.returncode}: {done.stderr.strip()[-200:]}"
            return m
        m.times.append(elapsed)
    return m
