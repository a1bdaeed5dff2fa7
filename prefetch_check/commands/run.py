"""`prefetch-check run`: check scenarios under each predicate and judge their expectations.

Exit status: 0 every stated expectation holds, 1 at least one does not, 2 bad input.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from prefetch_check import __version__
from prefetch_check.explorer.report import Labels, print_report, summary
from prefetch_check.explorer.result import VIOLATED
from prefetch_check.model.predicate_loader import load_predicate
from prefetch_check.commands.common import (
    add_limit_flags, add_protocol_flag, check_predicate, check_protocol, limit_overrides,
)
from prefetch_check.commands import run_outputs
from prefetch_check.progress import RunProgress
from prefetch_check.scenario import InputError, load_scenarios
from prefetch_check.scenario.shipped import shipped_scenarios
from prefetch_check.scenario.runner import entries, plan, run_tasks
from prefetch_check.commands.never_fired import warn_never_fired

HELP = "check scenario files (buggy vs fixed by default) and judge their expectations"
DEFAULT_PATH = "scenarios"
DEFAULT_PREDICATES = ("buggy", "fixed")
LABELS = Labels(subject="scenario", variant="predicate", title="prefetch-check")


def add_arguments(parser) -> None:
    parser.add_argument("paths", nargs="*", metavar="PATH",
                        help=f"scenario files or folders (default: {DEFAULT_PATH}/, or where there is none the "
                             "scenarios shipped with prefetch-check)")
    parser.add_argument("--predicate", action="append", metavar="P",
                        help="buggy, fixed or package.module:function; repeat to compare (default: buggy and fixed)")
    add_limit_flags(parser)
    parser.add_argument("--jobs", "-j", type=int, default=1, metavar="N",
                        help="spread the checks over N processes (0: one per core); results print in the same order for any N")
    parser.add_argument("--json", metavar="FILE",
                        help="write every verdict, reason and schedule as JSON (overwrites; '-': stdout, the table "
                             "then goes to stderr; schema: docs/report-schema.md)")
    parser.add_argument("--predicate-source", action="append", metavar="PATH.py:Class.method",
                        help="check a predicate read from source with ast, never imported "
                             "(e.g. hiradix_cache.py:HiRadixCache.can_terminate_prefetch); like --predicate it "
                             "replaces the default buggy and fixed: add --predicate fixed to compare")
    parser.add_argument("--junit", metavar="FILE",
                        help="write JUnit XML, one test per scenario, predicate and property (overwrites; '-': stdout)")
    parser.add_argument("--markdown", metavar="FILE",
                        help="APPEND a Markdown summary (works with $GITHUB_STEP_SUMMARY; '-': stdout)")
    parser.add_argument("--traces-dir", metavar="DIR",
                        help="write each violation that no expectation calls for as an HTML counterexample page "
                             "into DIR (made if missing)")
    parser.add_argument("--quiet", "-q", action="store_true", help="no progress display")
    add_protocol_flag(parser)


def execute(args) -> int:
    named = (args.predicate or ([] if args.predicate_source else list(DEFAULT_PREDICATES))) + (args.predicate_source or [])
    predicates = [check_predicate(p) for p in named]
    if len(set(predicates)) != len(predicates):
        raise InputError("--predicate: the same predicate is named twice")
    if args.jobs < 0:
        raise InputError(f"--jobs must be 0 (one per core) or more, got {args.jobs}")
    reports = run_outputs.requested(args)
    pages = run_outputs.traces_folder(args.traces_dir)
    scenarios = load_scenarios(args.paths or _default_paths())  # every file validated before anything runs
    _warn_about_shapes(predicates, scenarios)
    protocol = check_protocol(args.protocol)
    tasks = plan(scenarios, predicates, limit_overrides(args), reductions=not args.no_reductions, protocol=protocol)
    jobs = args.jobs or os.cpu_count() or 1
    with RunProgress(len(tasks), quiet=args.quiet) as progress:
        results = run_tasks(tasks, jobs, progress)
    report = entries(tasks, results)

    written = run_outputs.write_trace_pages(pages, tasks, report) if pages else {}
    print_report(run_outputs.table_console(reports), report, LABELS, _hints(tasks, report, written))
    run_outputs.write_reports(reports, report, LABELS)
    _, failed = summary(report)
    warn_never_fired(tasks, results)  # stderr: stdout stays the verdicts alone
    _say_reductions(tasks, results)
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


def _default_paths() -> list:
    """scenarios/ where there is one; else the scenarios shipped with the package (said on stderr)."""
    shipped = shipped_scenarios()
    if Path(DEFAULT_PATH).exists() or not shipped:
        return [DEFAULT_PATH]  # if it is missing, the loader says so
    print(f"prefetch-check: no {DEFAULT_PATH}/ here: running the {len(shipped)} scenarios shipped with "
          f"prefetch-check {__version__} ({shipped[0].parent})", file=sys.stderr)
    return shipped


def _say_reductions(tasks, results) -> None:
    """A protocol variant's reductions are vouched for at run time, or left off: say which (stderr),
    once per protocol and outcome."""
    said = set()
    for task, result in zip(tasks, results):
        note = result.stats.reductions
        if task.protocol is None or (task.protocol, note) in said:
            continue
        said.add((task.protocol, note))
        print(f"prefetch-check: reductions for {task.protocol}: {note}", file=sys.stderr)


def _hints(tasks, report, pages: dict):
    """For an unexpected violation, the command that shows its counterexample (and its page from
    --traces-dir), printed under the failure it belongs to."""
    task_of = {id(entry): task for task, entry in zip(tasks, report)}

    def hint(entry, x) -> list[str]:
        if x.actual != VIOLATED:
            return []
        task = task_of[id(entry)]
        case = ""
        if len(task.scenario.cases) > 1:
            case = f" --case {task.scenario.cases.index(task.case) + 1}"
        if task.protocol is not None and task.protocol != task.scenario.protocol:
            case += f" --protocol {task.protocol}"
        lines = [f"see it: prefetch-check trace {task.scenario.path}{case} --predicate {task.predicate} --property {x.prop}"]
        page = pages.get((entry.subject, entry.variant, x.prop))
        if page is not None:
            lines.append(f"page:   {page}")
        return lines

    return hint
