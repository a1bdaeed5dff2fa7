"""`prefetch-check run`: check scenarios under each predicate and judge their expectations.

Exit status: 0 every stated expectation holds, 1 at least one does not, 2 bad input.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from prefetch_check.explorer.report import Labels, print_report, summary, to_json_text, to_junit, to_markdown
from prefetch_check.explorer.result import VIOLATED
from prefetch_check.model.predicate_loader import load_predicate
from prefetch_check.commands.common import (
    add_limit_flags, check_output_path, check_predicate, limit_defaults, limit_overrides, output_console,
)
from prefetch_check.progress import RunProgress
from prefetch_check.scenario import InputError, load_scenarios
from prefetch_check.scenario.runner import Interrupted, entries, plan, run_tasks

HELP = "check scenario files (buggy vs fixed by default) and judge their expectations"
DEFAULT_PATH = "scenarios"
DEFAULT_PREDICATES = ("buggy", "fixed")
LABELS = Labels(subject="scenario", variant="predicate", title="prefetch-check")


def add_arguments(parser) -> None:
    parser.add_argument("paths", nargs="*", metavar="PATH", help=f"scenario files or folders (default: {DEFAULT_PATH}/)")
    parser.add_argument("--predicate", action="append", metavar="P",
                        help="buggy, fixed or package.module:function; repeat to compare (default: buggy and fixed)")
    add_limit_flags(parser)
    parser.add_argument("--jobs", "-j", type=int, default=1, metavar="N",
                        help="spread the checks over N processes (0: one per core); results print in the same order for any N")
    parser.add_argument("--json", metavar="FILE", help="write every verdict, reason and schedule as JSON (overwrites)")
    parser.add_argument("--predicate-source", action="append", metavar="PATH.py:Class.method",
                        help="also check a predicate read from source with ast, never imported "
                             "(e.g. hiradix_cache.py:HiRadixCache.can_terminate_prefetch)")
    parser.add_argument("--junit", metavar="FILE", help="write JUnit XML, one test per scenario, predicate and property (overwrites)")
    parser.add_argument("--markdown", metavar="FILE",
                        help="APPEND a Markdown summary (works with $GITHUB_STEP_SUMMARY)")
    parser.add_argument("--quiet", "-q", action="store_true", help="no progress display")


def _writable(flag: str, path: str | None) -> None:
    """Refuse a report path that cannot be written, before any search runs (see check_output_path)."""
    if path is None:
        return
    folder = Path(path).parent
    if not folder.is_dir():
        raise InputError(f"{flag} {path}: the folder {folder} does not exist")
    check_output_path(flag, path)


def execute(args) -> int:
    named = (args.predicate or ([] if args.predicate_source else list(DEFAULT_PREDICATES))) + (args.predicate_source or [])
    predicates = [check_predicate(p) for p in named]
    if len(set(predicates)) != len(predicates):
        raise InputError("--predicate: the same predicate is named twice")
    if args.jobs < 0:
        raise InputError(f"--jobs must be 0 (one per core) or more, got {args.jobs}")
    for flag, path in (("--json", args.json), ("--junit", args.junit), ("--markdown", args.markdown)):
        _writable(flag, path)
    scenarios = load_scenarios(args.paths or [DEFAULT_PATH])  # every file validated before anything runs
    _warn_about_shapes(predicates, scenarios)
    _check_expectations(predicates, scenarios, chosen=bool(args.predicate or args.predicate_source))
    jobs = args.jobs or os.cpu_count() or 1
    searches = min(jobs, len(predicates) * sum(len(s.cases) for s in scenarios))  # at once, sharing the memory
    tasks = plan(scenarios, predicates, limit_overrides(args), reductions=not args.no_reductions,
                 defaults=limit_defaults(searches))
    console = output_console()
    try:
        with RunProgress(len(tasks), quiet=args.quiet) as progress:
            results = run_tasks(tasks, jobs, progress)
    except Interrupted as stop:
        return _partial_report(console, tasks, stop)
    report = entries(tasks, results)

    print_report(console, report, LABELS)
    _hints(console, tasks, report)
    for flag, path, text, mode in (
        ("--json", args.json, lambda: to_json_text(report, LABELS), "w"),
        ("--junit", args.junit, lambda: to_junit(report, LABELS), "w"),
        ("--markdown", args.markdown, lambda: to_markdown(report, LABELS), "a"),  # append: CI step summaries
    ):
        if path:
            try:
                with open(path, mode, encoding="utf-8") as out:
                    out.write(text())
            except OSError as exc:
                raise InputError(f"{flag} {path}: cannot write the report: {exc.strerror}") from None
    _, failed = summary(report)
    return 1 if failed else 0


def _check_expectations(predicates: list, scenarios: list, chosen: bool) -> None:
    """An [expect.X] for a predicate the run does not check is never judged. When the predicates are
    the defaults (the user did not choose), say so on stderr; when no expectation at all would be
    judged although the scenarios state some, that is an error (exit 2) rather than a silent pass."""
    if chosen:
        return  # checking other predicates than the ones with expectations is what --predicate is for
    stated = [(s, name) for s in scenarios for name in s.expect]
    unjudged = [(s, name) for s, name in stated if name not in predicates]
    if stated and len(unjudged) == len(stated):
        names = ", ".join(sorted({name for _, name in unjudged}))
        raise InputError(
            f"nothing would be judged: the scenarios state expectations only for {names}, which this run "
            f"({', '.join(predicates)}) does not check; run them with --predicate {unjudged[0][1]}"
        )
    for scenario, name in unjudged:
        print(
            f"prefetch-check: warning: {scenario.path}: [expect.\"{name}\"] is not judged: {name} is not among "
            f"the predicates of this run ({', '.join(predicates)}); add --predicate {name} to check it",
            file=sys.stderr,
        )


def _partial_report(console, tasks, stop: Interrupted) -> int:
    """What finished before SIGINT / SIGTERM, then the exit status 130 / 143 (no report files are written)."""
    done = [t for t in tasks if t.index in stop.results]
    if done:
        print_report(console, entries(done, [stop.results[t.index] for t in done]), LABELS)
    print(
        f"prefetch-check: interrupted ({stop}): {len(done)} of {len(tasks)} checks finished"
        + (" (shown above)" if done else "") + "; no report file was written",
        file=sys.stderr,
    )
    return stop.exit_status


def _warn_about_shapes(predicates: list, scenarios: list) -> None:
    """A predicate read from source performs one protocol version's termination collective; a
    scenario of the other version checks a mix of the two: say so (stderr), once per pair."""
    for spec in predicates:
        name, predicate = load_predicate(spec)
        shape = getattr(predicate, "shape", None)
        if shape is None:
            continue
        for scenario in scenarios:
            other = sorted({case.config.shape for case in scenario.cases} - {shape})
            if other:
                print(
                    f"prefetch-check: warning: {name} performs the {shape} termination collective, but "
                    f"{scenario.path} models shape = \"{other[0]}\": its verdicts there mix the two protocol "
                    f"versions (set shape = \"{shape}\" in the scenario to check the code as written)",
                    file=sys.stderr,
                )


def _hints(console, tasks, report) -> None:
    """For an unexpected violation, the command that shows its counterexample."""
    for task, entry in zip(tasks, report):
        for x in entry.failed:
            if x.actual != VIOLATED:
                continue
            case = ""
            if len(task.scenario.cases) > 1:
                case = f" --case {task.scenario.cases.index(task.case) + 1}"
            console.print(
                f"  see it: prefetch-check trace {task.scenario.path}{case} --predicate {task.predicate} --property {x.prop}",
                highlight=False, soft_wrap=True,
            )
