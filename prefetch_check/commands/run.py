"""`prefetch-check run`: check scenarios under each predicate and judge their expectations.

Exit status: 0 every stated expectation holds, 1 at least one does not, 2 bad input.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from prefetch_check.commands import COMMANDS
from prefetch_check import __version__
from prefetch_check.explorer.report import Labels, exit_status, print_report
from prefetch_check.explorer.result import VIOLATED
from prefetch_check.model.predicate_loader import load_predicate
from prefetch_check.commands.common import (
    add_limit_flags, add_protocol_flag, check_predicate, check_protocol, limit_defaults, limit_overrides, output_console,
    search_workers, reductions_note,
)
from prefetch_check.commands import run_outputs
from prefetch_check.progress import RunProgress
from prefetch_check.scenario import InputError, load_scenarios
from prefetch_check.scenario.shipped import shipped_scenarios
from prefetch_check.scenario.runner import Interrupted, entries, plan, run_tasks
from prefetch_check.commands.never_fired import warn_never_fired

HELP = COMMANDS["run"]
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
    parser.add_argument("--workers", type=int, default=1, metavar="N",
                        help="run each search on N processes (0: one per core): the same counts, verdicts and "
                             "counterexamples for any N from 2 on; for one large search (not with --jobs)")
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
    workers = search_workers(args.workers)
    if workers > 1 and args.jobs != 1:
        raise InputError("--workers and --jobs both spread work over processes: give one of them (--workers for "
                         "one large search, --jobs for many checks)")
    reports = run_outputs.requested(args)
    pages = run_outputs.traces_folder(args.traces_dir)
    scenarios = load_scenarios(args.paths or _default_paths())  # every file validated before anything runs
    protocol = check_protocol(args.protocol, scenarios)
    _refuse_other_protocols(predicates, scenarios, protocol)
    _warn_about_shapes(predicates, scenarios, protocol)
    _check_expectations(predicates, scenarios, chosen=bool(args.predicate or args.predicate_source))
    jobs = args.jobs or os.cpu_count() or 1
    searches = min(jobs, len(predicates) * sum(len(s.cases) for s in scenarios))  # at once, sharing the memory
    tasks = plan(scenarios, predicates, limit_overrides(args), reductions=not args.no_reductions,
                 defaults=limit_defaults(searches), protocol=protocol, workers=workers)
    console = output_console()
    try:
        with RunProgress(len(tasks), quiet=args.quiet) as progress:
            results = run_tasks(tasks, jobs, progress)
    except Interrupted as stop:
        return _partial_report(console, tasks, stop)
    report = entries(tasks, results)

    written = run_outputs.write_trace_pages(pages, tasks, report) if pages else {}
    print_report(run_outputs.table_console(reports), report, LABELS, _hints(tasks, report, written))
    run_outputs.write_reports(reports, report, LABELS)
    warn_never_fired(tasks, results)  # stderr: stdout stays the verdicts alone
    _say_reductions(tasks, results)
    return exit_status(report)


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


def _refuse_other_protocols(predicates: list, scenarios: list, protocol) -> None:
    """A predicate read from source knows the protocol it belongs to (model/source/predicate.py);
    pairing it with a scenario of the other protocol is bad input (exit 2), never a verdict."""
    for spec in predicates:
        name, predicate = load_predicate(spec)
        if getattr(predicate, "protocol", None) is None:
            continue  # knows no protocol: fits either (protocol_mismatch says None; its module not imported)
        from prefetch_check.model.source.predicate import protocol_mismatch

        for scenario in scenarios:
            why = protocol_mismatch(name, predicate, protocol or scenario.protocol)
            if why:
                raise InputError(f"{scenario.path}: {why}")


def _warn_about_shapes(predicates: list, scenarios: list, protocol) -> None:
    """A predicate from source performs one shape's termination collective (seed or late2025 of
    the predicate-poll protocol: its descriptor's `source_shape_option`); a scenario of its protocol
    modelling another shape checks a mix of the two: say so (stderr), once per pair. (A protocol
    without that option, as ack-drain, needs no warning: the local answer the model asks for is
    the same whether the check around the function votes or not.)"""
    from prefetch_check.model.protocols.registry import descriptor

    for spec in predicates:
        name, predicate = load_predicate(spec)
        own = descriptor(getattr(predicate, "protocol", None) or "")
        if own is None or not own.source_shape_option:
            continue
        from prefetch_check.model.source.predicate import builtin_protocol

        shape, option = predicate.shape, own.source_shape_option
        for scenario in scenarios:
            if builtin_protocol(protocol or scenario.protocol) != own.name:
                continue
            other = sorted({getattr(case.config, option) for case in scenario.cases} - {shape})
            if other:
                print(
                    f"prefetch-check: warning: {name} performs the {shape} termination collective, but "
                    f"{scenario.path} models {option} = \"{other[0]}\": its verdicts there mix the two protocol "
                    f"versions (set {option} = \"{shape}\" in the scenario to check the code as written)",
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
    """Each variant's reductions note (`reductions_note`), once per protocol and outcome."""
    said = set()
    for task, result in zip(tasks, results):
        note = reductions_note(task.protocol, result)
        if note is not None and note not in said:
            said.add(note)
            print(note, file=sys.stderr)


def _hints(tasks, report, pages: dict):
    """For an unexpected violation, the command that shows its counterexample (and its page from
    --traces-dir), printed under the failure it belongs to."""
    task_of = {id(entry): task for task, entry in zip(tasks, report)}

    def hint(entry, x) -> list[str]:
        if x.actual != VIOLATED:
            return []
        task = task_of[id(entry)]
        number = task.scenario.case_number(task.case)
        case = "" if number is None else f" --case {number}"
        if task.protocol is not None and task.protocol != task.scenario.protocol:
            case += f" --protocol {task.protocol}"
        lines = [f"see it: prefetch-check trace {task.scenario.path}{case} --predicate {task.predicate} --property {x.prop}"]
        page = pages.get((entry.subject, entry.variant, x.prop))
        if page is not None:
            lines.append(f"page:   {page}")
        return lines

    return hint
