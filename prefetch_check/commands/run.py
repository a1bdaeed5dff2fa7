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
from prefetch_check.commands.common import add_limit_flags, check_predicate, limit_overrides, output_console
from prefetch_check.progress import RunProgress
from prefetch_check.scenario import InputError, load_scenarios
from prefetch_check.scenario.runner import entries, plan, run_tasks
from prefetch_check.commands.never_fired import warn_never_fired

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
    if path is None:
        return
    folder = Path(path).parent
    if not folder.is_dir():
        raise InputError(f"{flag} {path}: the folder {folder} does not exist")


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
    tasks = plan(scenarios, predicates, limit_overrides(args), reductions=not args.no_reductions)
    jobs = args.jobs or os.cpu_count() or 1
    with RunProgress(len(tasks), quiet=args.quiet) as progress:
        results = run_tasks(tasks, jobs, progress)
    report = entries(tasks, results)

    console = output_console()
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
    warn_never_fired(tasks, results)  # stderr: stdout stays the verdicts alone
    return 1 if failed else 0


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
