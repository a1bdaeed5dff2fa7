"""Where `prefetch-check run` writes what it found: the report files (`-` is stdout), and with
`--traces-dir` one HTML page per counterexample that no expectation called for.

When a report goes to stdout the verdict table goes to stderr, so `--json - | jq` reads clean
JSON and the person at the terminal still sees the table.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from rich.console import Console

from prefetch_check.commands.common import check_output_path, output_console
from prefetch_check.explorer.report.records import Labels
from prefetch_check.explorer.result import VIOLATED
from prefetch_check.scenario import InputError

STDOUT = "-"

# flag, the args attribute, the renderer (module, function: imported only when asked for), the
# file mode (Markdown appends: CI step summaries)
REPORTS = (("--json", "json", ("json_report", "to_json_text"), "w"), ("--junit", "junit", ("junit", "to_junit"), "w"),
           ("--markdown", "markdown", ("markdown", "to_markdown"), "a"))


def _renderer(where: tuple):
    import importlib

    module, name = where
    return getattr(importlib.import_module(f"prefetch_check.explorer.report.{module}"), name)


def requested(args) -> list[tuple]:
    """(flag, path, renderer, mode) of each report asked for, checked before anything runs:
    the folder exists, and at most one report goes to stdout."""
    wanted = [(flag, getattr(args, attr), _renderer(render), mode) for flag, attr, render, mode in REPORTS
              if getattr(args, attr)]
    to_stdout = [flag for flag, path, _, _ in wanted if path == STDOUT]
    if len(to_stdout) > 1:
        raise InputError(f"{' and '.join(to_stdout)} both write to stdout ('-'); give all but one of them a FILE")
    for flag, path, _, _ in wanted:
        folder = Path(path).parent
        if path != STDOUT and not folder.is_dir():
            raise InputError(f"{flag} {path}: the folder {folder} does not exist")
        if path != STDOUT:
            check_output_path(flag, path)  # a folder, a read-only place, a full device: say so now
    return wanted


def table_console(reports: list[tuple]) -> Console:
    """stdout, unless a report goes there: then stderr."""
    if not any(path == STDOUT for _, path, _, _ in reports):
        return output_console()
    console = Console(stderr=True, markup=False)
    return console if console.is_terminal else output_console(sys.stderr)


def write_reports(reports: list[tuple], entries, labels: Labels) -> None:
    for flag, path, render, mode in reports:
        text = render(entries, labels)
        if path == STDOUT:
            sys.stdout.write(text)
            sys.stdout.flush()
            continue
        try:
            with open(path, mode, encoding="utf-8") as out:
                out.write(text)
        except OSError as exc:
            raise InputError(f"{flag} {path}: cannot write the report: {exc.strerror}") from None


def traces_folder(path: str | None) -> Path | None:
    """The --traces-dir folder, made (with its parents) before anything runs."""
    if path is None:
        return None
    folder = Path(path)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"--traces-dir {path}: cannot make the folder: {exc.strerror}") from None
    return folder


def unexpected_violations(entry) -> list[str]:
    """The properties violated where no expectation says VIOLATED (a failed expectation, or
    a predicate without expectations): the counterexamples someone should look at."""
    out = []
    for name, r in entry.result.results.items():
        x = entry.expectation(name)
        if r.verdict == VIOLATED and r.trace is not None and (x is None or x.expected != VIOLATED):
            out.append(name)
    return out


def page_name(entry, prop: str) -> str:
    """`tp2[ranks=2].fixed.progress.html`: the subject, variant and property, safe as a file name."""
    return re.sub(r"[^A-Za-z0-9._=+-]+", "_", f"{entry.subject}.{entry.variant}.{prop}").strip("_") + ".html"


def write_trace_pages(folder: Path, tasks, entries) -> dict:
    """One HTML counterexample page per unexpected violation; (subject, variant, property) -> path."""
    from prefetch_check.commands.trace import viewer

    view, written = viewer(), {}
    for task, entry in zip(tasks, entries):
        props = unexpected_violations(entry)
        if not props:
            continue
        model = task.case.model(task.predicate)
        for prop in props:
            pr = entry.result.results[prop]
            path = folder / page_name(entry, prop)
            html = view.trace_to_html(model, pr.trace, pr, f"{entry.subject} · {entry.variant} · {prop}")
            try:
                path.write_text(html, encoding="utf-8")
            except OSError as exc:
                raise InputError(f"--traces-dir {folder}: cannot write {path.name}: {exc.strerror}") from None
            written[(entry.subject, entry.variant, prop)] = path
    return written
