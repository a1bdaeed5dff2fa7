"""Which lines of the tree the executor's child ran: coverage.py, measured in-process.

Why coverage.py and not a tracer of ours: it is the well-kept one (its C tracer, greenlet
support, dynamic contexts). Python 3.11 has no `sys.monitoring`, so the core is the C tracer
(`ctrace`), with `concurrency=["greenlet"]` since every thread of the code under test is a
greenlet. Only the tree's own files are measured (`include` = its srt folder), nothing is read
from a configuration file and nothing is written to disk (`data_file=None`: the data lives in
memory, in the child's process).

What it answers (`Tracer.answer()`), per file below srt:
- `lines`: every line some run (or the import of the tree, the "load") executed;
- `counted`: for each span of lines asked for (the changed statements of an edited tree,
  prefetch_check/sglang/changed.py), the number of runs (schedules) that executed a line of it,
  and whether the load did. Counting needs one coverage context per run (`switch_context`,
  coverage's documented dynamic contexts), which costs a flush per run, so contexts are switched
  only when there are spans to count; the contexts collected so far are harvested and erased
  every HARVEST runs, so memory stays flat over long searches.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

LOAD = "load"  # the context of the tree's import (module-level statements)
HARVEST = 500  # runs between two harvests of the per-run contexts


class Tracer:
    """coverage.py over the tree's files; `next_run()` marks where each schedule starts."""

    def __init__(self, srt: Path, count: Optional[dict[str, list[list[int]]]] = None):
        import coverage

        self.srt = Path(srt).resolve()
        # rel -> spans [first, last] of lines whose runs are counted
        self.count = {rel: [tuple(s) for s in spans] for rel, spans in (count or {}).items() if spans}
        self.cov = coverage.Coverage(data_file=None, include=[f"{self.srt}/*"], concurrency=["greenlet"],
                                     config_file=False, branch=False)
        self.cov.set_option("run:core", "ctrace")
        self.runs = 0
        self.lines: dict[str, set[int]] = {}
        self.span_runs: dict[str, dict[tuple[int, int], int]] = {rel: {s: 0 for s in spans}
                                                                 for rel, spans in self.count.items()}
        self.span_load: dict[str, set[tuple[int, int]]] = {rel: set() for rel in self.count}
        self.started = False

    @property
    def contexts(self) -> bool:
        """Whether each run gets its own context (only when some span is counted)."""
        return bool(self.count)

    def start(self) -> None:
        """Before the tree is imported: its module-level statements are the load's."""
        self.cov.start()
        self.started = True
        if self.contexts:
            self.cov.switch_context(LOAD)

    def next_run(self) -> None:
        """A schedule starts (the search's run, the conformance check's replay)."""
        if not self.started:
            return
        self.runs += 1
        if not self.contexts:
            return
        self.cov.switch_context(f"r{self.runs}")

    def stop(self) -> None:
        if self.started:
            self._harvest(restart=False)
            self.started = False

    def _harvest(self, restart: bool = True) -> None:
        """Fold what coverage collected into our sets and counts, then start afresh (between runs:
        no frame of the tree is alive, so stopping and starting loses nothing)."""
        self.cov.stop()
        data = self.cov.get_data()
        for path in data.measured_files():
            rel = self._rel(path)
            if rel is None:
                continue
            self.lines.setdefault(rel, set()).update(data.lines(path) or ())
            if rel in self.count:
                by_line = data.contexts_by_lineno(path)
                for span in self.count[rel]:
                    seen = set()
                    for line in range(span[0], span[1] + 1):
                        seen.update(by_line.get(line, ()))
                    if LOAD in seen:
                        self.span_load[rel].add(span)
                        seen.discard(LOAD)
                    self.span_runs[rel][span] += len(seen)
        if restart:
            self.cov.erase()
            self.cov.start()

    def _rel(self, path: str) -> Optional[str]:
        try:
            return Path(path).resolve().relative_to(self.srt).as_posix()
        except ValueError:
            return None

    def answer(self) -> dict:
        """The JSON the child sends back (see the module's docstring)."""
        return {
            "runs": self.runs,
            "contexts": self.contexts,
            "lines": {rel: sorted(lines) for rel, lines in sorted(self.lines.items())},
            "counted": {rel: [{"span": list(span), "runs": n, "load": span in self.span_load[rel]}
                              for span, n in sorted(spans.items())] for rel, spans in sorted(self.span_runs.items())},
        }


def merged(answers: list[Optional[dict]]) -> Optional[dict]:
    """One answer for several children's (the conformance check runs one child per
    configuration): lines united, per span the runs added and the load's mark kept."""
    answers = [a for a in answers if a]
    if not answers:
        return None
    lines: dict[str, set] = {}
    spans: dict[str, dict[tuple, list]] = {}
    for a in answers:
        for rel, got in a.get("lines", {}).items():
            lines.setdefault(rel, set()).update(got)
        for rel, entries in a.get("counted", {}).items():
            for e in entries:
                slot = spans.setdefault(rel, {}).setdefault(tuple(e["span"]), [0, False])
                slot[0] += e["runs"]
                slot[1] = slot[1] or e["load"]
    return {
        "runs": sum(a.get("runs", 0) for a in answers),
        "contexts": any(a.get("contexts") for a in answers),
        "lines": {rel: sorted(got) for rel, got in sorted(lines.items())},
        "counted": {rel: [{"span": list(span), "runs": n, "load": load} for span, (n, load) in sorted(by.items())]
                    for rel, by in sorted(spans.items())},
    }


def started(request: dict) -> Optional[Tracer]:
    """The child's tracer, started, when its request asks for coverage ({"coverage": {"count": ...}})."""
    if request.get("coverage") is None:
        return None
    tracer = Tracer(request["srt"], request["coverage"].get("count"))
    tracer.start()
    return tracer


def finish(tracer: Optional[Tracer], answer: dict) -> None:
    """Stop tracing and put what ran into the child's answer (under "coverage")."""
    if tracer is not None:
        tracer.stop()
        answer["coverage"] = tracer.answer()
