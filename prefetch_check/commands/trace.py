"""`prefetch-check trace`: show the counterexample of one scenario / predicate / property, or
(`--code REPORT.json`) a counterexample of a tree's own code that `prefetch-check sglang --json`
wrote, drawn by the same viewers (model/code/trace.py).

Exit status: 0 a counterexample is shown, 1 the property has none (VERIFIED,
BOUNDED or NOT APPLICABLE: the reason is printed), 2 bad input.
"""

from __future__ import annotations

import sys
from pathlib import Path

from prefetch_check.commands import COMMANDS
from prefetch_check.explorer.result import VIOLATED
from prefetch_check.scenario import one_case
from prefetch_check.commands.common import (
    add_case_flag, add_limit_flags, add_protocol_flag, check_predicate, check_property, check_protocol, limit_defaults,
    limit_overrides, output_console, positive_int, search_workers, reductions_note,
)
from prefetch_check.scenario.overrides import apply_options, parse_sets
from prefetch_check.model.predicate_loader import load_predicate
from prefetch_check.model.source.predicate import protocol_mismatch
from prefetch_check.progress import RunProgress
from prefetch_check.scenario import InputError
from prefetch_check.scenario.runner import run_check

HELP = COMMANDS["trace"]
FORMATS = ("terminal", "html", "markdown", "json", "itf", "dot", "graphml")
GRAPH_STATES = 5000  # default cap on the exported state graph (graphs are for small scenarios)


def add_arguments(parser) -> None:
    parser.add_argument("scenario", metavar="SCENARIO", nargs="?", help="a scenario file (not with --code)")
    parser.add_argument("--code", metavar="REPORT.json",
                        help="instead of a scenario: the code counterexample of --property in a report of "
                             "`prefetch-check sglang --json` (the first tree with one, or --release)")
    parser.add_argument("--release", metavar="LABEL", help="with --code: the report's tree (its release label)")
    add_case_flag(parser)
    parser.add_argument("--predicate", default="buggy", metavar="P", help="buggy (default), fixed or package.module:function")
    parser.add_argument("--property", metavar="NAME", help="the property (default: the first one violated)")
    parser.add_argument("--set", action="append", metavar="KEY=VALUE",
                        help="replace one option of the scenario's configuration (repeatable), e.g. --set ack_match=rid: "
                             "how `prefetch-check sglang` applies a release's options on top of a scenario")
    parser.add_argument("--format", choices=FORMATS, default="terminal",
                        help="terminal (default), html, markdown, json, itf (the Informal Trace Format of Apalache "
                             "and Quint), dot, graphml")
    parser.add_argument("--out", metavar="FILE", help="write to FILE instead of stdout (required for dot and graphml)")
    parser.add_argument("--graph-states", type=positive_int, default=GRAPH_STATES, metavar="N",
                        help=f"dot and graphml: export at most N states (default {GRAPH_STATES})")
    parser.add_argument("--quiet", "-q", action="store_true", help="no progress display")
    parser.add_argument("--workers", type=int, default=1, metavar="N",
                        help="run the search on N processes (0: one per core); the same counterexample for any N from 2 on")
    add_protocol_flag(parser)
    add_limit_flags(parser)


def viewer():
    """The trace viewer module (explorer/view), with a clear message if it is missing."""
    try:
        import prefetch_check.explorer.view as view
    except ImportError as exc:
        raise InputError(f"the trace viewer is not available in this installation (explorer.view: {exc})") from None
    return view


def execute(args) -> int:
    predicate = check_predicate(args.predicate)
    if args.format in ("dot", "graphml") and not args.out:
        raise InputError(f"--format {args.format} writes a file: give it with --out FILE")
    if args.out and not Path(args.out).parent.is_dir():
        raise InputError(f"--out {args.out}: the folder {Path(args.out).parent} does not exist")
    view = viewer()
    if args.code:
        return _code_counterexample(view, args)
    if args.scenario is None:
        raise InputError("give a scenario file (or --code REPORT.json)")
    scenario, case = one_case(args.scenario, args.case)
    case = case.with_protocol(check_protocol(args.protocol, [scenario]))
    why = protocol_mismatch(*load_predicate(predicate), case.protocol)
    if why:
        raise InputError(f"{args.scenario}: {why}")
    case = case.with_config(apply_options(case.config, parse_sets(args.set)))
    prop = check_property(args.property, case.protocol) if args.property else None
    limits = scenario.limits_for(predicate, limit_overrides(args), limit_defaults())
    with RunProgress(1, quiet=args.quiet) as progress:
        progress.start(0, f"{case.name} · {predicate}")
        result = run_check(case, predicate, limits, progress.callback(0), not args.no_reductions,
                           search_workers(args.workers))
        progress.finish(0, result)
    note = reductions_note(case.protocol, result)
    if note is not None:
        print(note, file=sys.stderr)
    if prop is None:
        prop = next((n for n in result.violated), None)
        if prop is None:
            print(f"{case.name} under {predicate}: no property is violated, so there is no counterexample "
                  f"({', '.join(f'{n} {r.verdict}' for n, r in result.results.items())})")
            return 1
    pr = result.results[prop]
    if pr.verdict != VIOLATED or pr.trace is None:
        why = f": {pr.reason}" if pr.reason else ""
        print(f"{case.name} under {predicate}: {prop} is {pr.verdict}{why}; there is no counterexample to show")
        return 1
    title = f"{case.name} · {predicate} · {prop}"
    try:
        _emit(view, args, result, prop, title)
    except OSError as exc:
        raise InputError(f"--out {args.out}: cannot write: {exc.strerror}") from None
    return 0


def _emit(view, args, result, prop: str, title: str) -> None:
    if args.format == "terminal":
        if args.out:
            with open(args.out, "w", encoding="utf-8") as out:
                view.render(result, prop, console=output_console(out), title=title)
        else:
            view.render(result, prop, console=output_console(), title=title)
        return
    if args.format in ("dot", "graphml"):
        try:
            graph = view.state_graph(result.model, highlight=result.trace(prop), max_states=args.graph_states)
        except ValueError as exc:  # too many states for a readable graph
            raise InputError(f"{exc} (here: --graph-states {args.graph_states})") from None
        (view.write_dot if args.format == "dot" else view.write_graphml)(graph, args.out)
        print(f"wrote the state graph ({graph.number_of_nodes()} states, counterexample marked) to {args.out}")
        return
    text = view.render(result, prop, args.format, title=title)
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")
        print(f"wrote {args.format} to {args.out}")
    else:
        sys.stdout.write(text)


def _code_counterexample(view, args) -> int:
    """--code REPORT.json: the code's counterexample of a property, as the model's are drawn."""
    import json

    from prefetch_check.model.code.trace import to_trace

    if args.scenario is not None or args.format in ("dot", "graphml"):
        raise InputError("--code draws a report's code counterexample: no scenario, and no state graph (dot, graphml)")
    try:
        report = json.loads(Path(args.code).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InputError(f"--code {args.code}: cannot read a JSON report: {exc}") from None
    rows = [r for r in report.get("releases", []) if args.release in (None, r.get("release"))]
    found = [(row["release"], prop, entry) for row in rows
             for prop, entry in ((row.get("code") or {}).get("properties") or {}).items()
             if entry.get("verdict") == VIOLATED and args.property in (None, prop)]
    if not found:
        what = f"of {args.property}" if args.property else "at all"
        where = f"tree {args.release}" if args.release else "any tree"
        print(f"{args.code}: the code of {where} has no counterexample {what}")
        return 1
    release, prop, entry = found[0]
    if "trace" not in entry:
        raise InputError(f"--code {args.code}: {release} {prop} has no steps (a report written before they were "
                         "kept): run prefetch-check sglang --json again")
    code = to_trace({"prop": prop, "message": entry["reason"], "consequence": entry["consequence"],
                     "steps": entry["trace"]})
    from prefetch_check.explorer.view.layout import build_view

    shown = build_view(code.model, code.trace, code.result, f"{release} · its code, {entry['case']} · {prop}")
    if args.format == "terminal":
        out = open(args.out, "w", encoding="utf-8") if args.out else None
        try:
            view.render_view(shown, console=output_console(out) if out else output_console())
        finally:
            if out:
                out.close()
        return 0
    text = view.render_view(shown, args.format)
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")
        print(f"wrote {args.format} to {args.out}")
    else:
        sys.stdout.write(text)
    return 0
