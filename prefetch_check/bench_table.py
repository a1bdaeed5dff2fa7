"""The whole release table's bench row (issue 22): what `prefetch-check sglang 0.5.1..0.5.23 -j 2`
costs a user, cold and cached.

Cold means an empty verdict cache: every model search, every code case and every conformance
check runs. The releases' protocol files are copied from the source cache first (fetching them
is the package index's time, not ours, and is reported apart when it happens); the run is
`--offline`, so a missing release is an error rather than a download inside the figure. Cached
is the same command again on the same folder: everything comes from the verdict cache. Each run
is the installed command in a fresh process, as a shell runs it. The figures that do not depend
on the machine (rows, what was executed, the exit status) come from the run's JSON report.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from prefetch_check.bench_startup import command

SECTION = "table"
SPEC = "0.5.1..0.5.23"
JOBS = 2
TIMEOUT = 3600.0  # seconds per run: the cold table takes minutes


@dataclass(frozen=True)
class TableRow:
    key: str
    spec: str = SPEC
    jobs: int = JOBS
    quick: bool = False

    @property
    def section(self) -> str:
        return SECTION

    @property
    def command(self) -> str:
        return f"prefetch-check sglang {self.spec} -j {self.jobs}"


# the whole table, and the ack-drain releases alone: every world of the code engine runs there
# (issue 29's row: its cases on 0.5.19-0.5.23, cold and cached)
TABLE_ROWS: tuple[TableRow, ...] = (TableRow("sglang-table"), TableRow("sglang-table-ack-drain", spec="0.5.19..0.5.23"))


@dataclass
class TableRun:
    """One run of the command: wall seconds, exit status, what its report says it did."""

    seconds: float = 0.0
    status: int = 0
    rows: int = 0
    executed: dict = field(default_factory=dict)  # kind -> how many ran (not from the cache)

    def as_json(self) -> dict:
        return {"seconds": round(self.seconds, 2), "exit_status": self.status, "rows": self.rows,
                "executed": self.executed}


@dataclass
class TableMeasurement:
    row: TableRow
    fetch_seconds: float = 0.0  # releases fetched into the source cache first (0: all were there)
    cold: TableRun | None = None
    cached: TableRun | None = None
    error: str = ""

    def summary(self) -> str:
        if self.error:
            return f"ERROR: {self.error}"
        return f"{self.cold.rows} rows, exit status {self.cold.status} (cold) / {self.cached.status} (cached)"

    def as_json(self) -> dict:
        return {"row": self.row.key, "section": SECTION, "command": self.row.command,
                "fetch_seconds": round(self.fetch_seconds, 2), "error": self.error,
                "cold": self.cold.as_json() if self.cold else None,
                "cached": self.cached.as_json() if self.cached else None}


def executed_counts(report: dict) -> dict:
    """How much of the report's work ran rather than came from the verdict cache."""
    counts = {"model searches": report.get("searches", 0), "code cases": 0, "conformance checks": 0}
    for row in report["releases"]:
        code = row.get("code") or {}
        counts["code cases"] += sum(1 for c in code.get("cases", []) if not c.get("cached"))
        conformance = row.get("conformance") or {}
        counts["conformance checks"] += int(bool(conformance.get("configurations")) and not conformance.get("cached"))
    return counts


def _run(argv: list[str], report: Path) -> TableRun:
    start = time.perf_counter()
    done = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, timeout=TIMEOUT)
    run = TableRun(seconds=time.perf_counter() - start, status=done.returncode)
    if done.returncode == 2 or not report.is_file():
        raise RuntimeError(f"exit status {done.returncode}: {done.stderr.strip()[-300:]}")
    doc = json.loads(report.read_text())
    run.rows, run.executed = len(doc["releases"]), executed_counts(doc)
    return run


def fetch_releases(spec: str, source_cache: Path) -> None:
    """The releases of `spec` into the source cache (those already there are not fetched again)."""
    from prefetch_check.sglang.index import list_releases
    from prefetch_check.sglang.spec import expand
    from prefetch_check.sglang.trees import read_trees

    targets = expand([spec], lambda: list_releases(source_cache).versions)
    unread = [t for t in read_trees(targets, source_cache) if t.error]
    if unread:
        raise RuntimeError(f"{unread[0].label}: {unread[0].error}")


def measure_table(row: TableRow, source_cache: Path, keep_report: Path | None = None) -> TableMeasurement:
    """Fetch what is missing into `source_cache`, then time the row cold and cached on a copy;
    `keep_report`: where to copy the table's own JSON report (the cached run's), if anywhere."""
    m = TableMeasurement(row)
    base = command() + ["sglang", row.spec, "-j", str(row.jobs), "-q"]
    try:
        start = time.perf_counter()
        fetch_releases(row.spec, source_cache)
        m.fetch_seconds = time.perf_counter() - start
        with tempfile.TemporaryDirectory(prefix="prefetch-check-table-") as tmp:
            cache = Path(tmp) / "cache"
            cache.mkdir()
            for release in sorted(source_cache.iterdir()):
                if (release / "SOURCE.json").is_file():
                    shutil.copytree(release, cache / release.name, symlinks=True)
            for listing in source_cache.glob("*.json"):
                shutil.copy2(listing, cache / listing.name)
            report = Path(tmp) / "report.json"
            argv = base + ["--offline", "--cache-dir", str(cache), "--json", str(report)]
            m.cold = _run(argv, report)
            m.cached = _run(argv, report)
            if keep_report is not None:
                shutil.copyfile(report, keep_report)
    except (RuntimeError, subprocess.TimeoutExpired, OSError) as exc:
        m.error = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return m
