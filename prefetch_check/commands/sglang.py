"""`prefetch-check sglang SPEC...`: check the prefetch protocol of real SGLang releases or checkouts.

For each tree a SPEC names (a release, a range of releases, a path, `installed`; with
`--commits A..B` every commit of a checkout that touched the protocol files): the protocol
shape is read from the source, mapped to a protocol and its options, the release's own
predicate is loaded from its own file, and the protocol's scenarios run with the release's
options under that predicate and, for comparison, under our transcription (`fixed`).
Verdicts are cached by the files' code and the checker's version (prefetch_check/sglang/).

Exit status: 0 every verdict of every checked tree's own predicate is VERIFIED (or not
applicable), 1 a violation (or a search a limit cut) in some tree (with `--baseline`: one the
baseline does not have, baseline.py), 2 bad input, 3 some tree got no verdicts (not modelled
(yet), not read, no scenarios: reported, not judged).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from rich.console import Console

from prefetch_check.commands import COMMANDS
from prefetch_check.commands.common import check_output_path, limit_defaults, output_console
from prefetch_check.sglang.locate import CACHE_FILES
from prefetch_check.progress import RunProgress
from prefetch_check.scenario import InputError, load_scenarios
from prefetch_check.scenario.runner import Interrupted
from prefetch_check.scenario.shipped import shipped_scenarios
from prefetch_check.sglang import coverage_report, report, terminal
from prefetch_check.sglang.baseline import from_report, from_row, is_report
from prefetch_check.sglang.cache import CACHE_ENV, cache_root
from prefetch_check.sglang.code_checks import run_code
from prefetch_check.sglang.conformance_checks import run_conformance
from prefetch_check.sglang import vouch
from prefetch_check.sglang.checks import CHECKED, ENGINES, choose_cases, exit_status, plan, run_all
from prefetch_check.sglang.errors import SglangSourceError
from prefetch_check.sglang.history import changes, commit_trees
from prefetch_check.sglang.index import list_releases
from prefetch_check.sglang.spec import PathSpec, Range, expand, parse_spec
from prefetch_check.sglang.trees import Tree, read_trees

HELP = COMMANDS["sglang"]
DEFAULT_SCENARIOS = "scenarios"
DEFAULT_MAX_RANKS = 2
STDOUT = "-"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("specs", nargs="+", metavar="SPEC",
                        help="a release (0.5.20), a range (0.5.1..0.5.22), a path (checkout, site-packages, "
                             "unpacked wheel) or 'installed'")
    parser.add_argument("--cache-dir", metavar="DIR",
                        help=f"where fetched releases and verdicts are kept (default ${CACHE_ENV} or "
                             "~/.cache/prefetch-check/sglang)")
    parser.add_argument("--commits", metavar="A..B",
                        help="with one checkout PATH: A, then every commit of A..B that touched the protocol files; "
                             "says at which commit each verdict changed")
    parser.add_argument("--baseline", metavar="SPEC|REPORT.json",
                        help="a release, a tree or an earlier --json report of this command (one checked tree): only a "
                             "violation it does not have fails the run; the table marks what is also in it and what "
                             "was fixed since")
    parser.add_argument("--pre", action="store_true",
                        help="a range also holds pre-releases (rc, dev), as pip's --pre; a pre-release named alone "
                             "(0.5.0rc2) needs no flag")
    parser.add_argument("--offline", action="store_true",
                        help="do not ask the package index for the release list; use the cached one")
    parser.add_argument("--cache-class", choices=sorted(CACHE_FILES), metavar="CLASS",
                        help="judge this cache class instead of the one the release's factory builds "
                             "(HiRadixCache: the class 0.5.19-0.5.20 ship but no longer build)")
    parser.add_argument("--scenarios", action="append", metavar="PATH",
                        help=f"scenario files or folders to run, each with the protocol it names (default: "
                             f"{DEFAULT_SCENARIOS}/, or where there is none the scenarios shipped with prefetch-check)")
    parser.add_argument("--max-ranks", type=int, default=DEFAULT_MAX_RANKS, metavar="N",
                        help=f"run the scenario cases with at most N ranks (default {DEFAULT_MAX_RANKS}: the smallest; "
                             "0: every case)")
    parser.add_argument("--jobs", "-j", type=int, default=1, metavar="N",
                        help="spread the searches over N processes (0: one per core)")
    parser.add_argument("--json", metavar="FILE",
                        help="write every tree's shape, options and verdicts as JSON (overwrites; '-': stdout, the "
                             "table then goes to stderr)")
    parser.add_argument("--markdown", metavar="FILE", help="APPEND the table as Markdown ('-': stdout)")
    parser.add_argument("--engine", choices=("both",) + ENGINES, default="both",
                        help="who answers: 'model' (the scenarios on our protocol model, for trees whose prefetch "
                             "path it follows), 'code' (the tree's own prefetch functions run by the executor on "
                             "small deployments), 'both' (default)")
    parser.add_argument("--code-trace", metavar="PROPERTY",
                        help="print, for each tree, the steps of its code's counterexample of PROPERTY (thread, "
                             "file:line, what it did)")
    parser.add_argument("--quiet", "-q", action="store_true", help="no progress display")


def execute(args) -> int:
    if args.max_ranks < 0:
        raise InputError(f"--max-ranks must be 0 (every case) or more, got {args.max_ranks}")
    if args.jobs < 0:
        raise InputError(f"--jobs must be 0 (one per core) or more, got {args.jobs}")
    outputs = _outputs(args)
    base = from_report(args.baseline) if args.baseline and is_report(args.baseline) else None
    cache = cache_root(args.cache_dir)
    scenarios = load_scenarios(args.scenarios or _default_scenarios())
    cases = choose_cases(scenarios, args.max_ranks)
    notes: list[str] = []
    trees = _commit_trees(args, cache) if args.commits else _release_trees(args, cache, notes, args.specs)
    jobs = args.jobs or _cores()
    engines = ENGINES if args.engine == "both" else (args.engine,)
    rows = [plan(tree, cases, args.cache_class, limit_defaults(jobs), engines=engines, releases=cache) for tree in trees]
    base_row = _baseline_row(args, cache, notes, cases, limit_defaults(jobs), engines)
    every = rows + ([base_row] if base_row else [])
    try:
        from_cache, searched = run_all(every, cache, jobs, lambda n: RunProgress(n, quiet=args.quiet))
    except Interrupted as stop:
        print(f"prefetch-check: interrupted ({stop}); no table or report was written", file=sys.stderr)
        return stop.exit_status
    code_cached, executed = run_code([(row.srt, row.code) for row in every if row.code.ran], cache, jobs,
                                     _code_progress(args.quiet))
    conformed_cached, conformed = run_conformance(
        [(row.srt, row.conformance) for row in every if row.conformance.planned], cache, jobs)
    coverage_report.settle(every)  # coverage: a changed statement no check ran: "not checked", no verdicts
    vouch.settle(every)  # an edited tree whose code conforms: the model's verdicts, with what they rest on
    if base_row is not None:
        base = from_row(base_row, args.baseline)
    found = changes(rows) if args.commits else []
    status = exit_status(rows, base)
    console = _table_console(outputs)
    terminal.lines(console, [f"note: {note}" for note in notes] + ([report.baseline_line(base)] if base is not None else []))
    terminal.show(console, rows, base, as_summary=bool(args.commits) or _names_a_range(args.specs))
    terminal.lines(console, report.change_lines(found) + report.left_out(rows))
    if args.code_trace:
        for line in report.code_trace_lines(rows, args.code_trace):
            console.print(line, soft_wrap=True, highlight=False)
    terminal.lines(console, [_summary(rows, from_cache, searched, cache) + f"; the code: {executed} case(s) executed, "
                             f"{code_cached} from the cache; conformance: {conformed} tree(s) checked, "
                             f"{conformed_cached} from the cache"])
    _write(outputs, rows, found, status, searched, from_cache, base)
    return status


def _default_scenarios() -> list:
    """scenarios/ where there is one; else the scenarios shipped with the package."""
    shipped = shipped_scenarios()
    return [DEFAULT_SCENARIOS] if Path(DEFAULT_SCENARIOS).exists() or not shipped else shipped


def _names_a_range(specs: list[str]) -> bool:
    """A range of releases gets the compact summary table; trees named one by one a block each."""
    return any(isinstance(parse_spec(spec), Range) for spec in specs)


def _cores() -> int:
    return os.cpu_count() or 1


def _release_trees(args, cache: Path, notes: list[str], specs: list[str]) -> list[Tree]:
    def releases():
        if not listed:
            listing = list_releases(cache, refresh=not args.offline)
            if listing.stale:
                notes.append(listing.stale)
            listed.append(listing.versions)
        return listed[0]

    listed: list = []
    return read_trees(expand(specs, releases, args.pre), cache)


def _code_progress(quiet: bool):
    """A line on stderr per executor case finished (none with --quiet)."""
    if quiet:
        return None
    err = Console(stderr=True, markup=False, highlight=False)
    done = [0]

    def finished():
        done[0] += 1
        err.print(f"      the code: {done[0]} case(s) executed")
    return finished


def _baseline_row(args, cache: Path, notes: list[str], cases, limits: dict, engines=ENGINES):
    """The row of a --baseline SPEC (checked in this run like any tree); None for none or a report."""
    if not args.baseline or is_report(args.baseline):
        return None
    trees = _release_trees(args, cache, notes, [args.baseline])
    if len(trees) != 1:
        raise InputError(f"--baseline {args.baseline}: names {len(trees)} trees; a baseline is one tree (a release, "
                         "a path) or a --json report")
    return plan(trees[0], cases, args.cache_class, limits, engines=engines, releases=cache)


def _commit_trees(args, cache: Path) -> list[Tree]:
    if len(args.specs) != 1 or not isinstance(parse_spec(args.specs[0]), PathSpec):
        raise SglangSourceError("--commits takes exactly one SPEC, the path of a git checkout of SGLang")
    return commit_trees(Path(args.specs[0]), args.commits, cache)


def _outputs(args) -> list[tuple[str, str]]:
    """(flag, path) of each report asked for, checked before anything runs."""
    wanted = [(flag, path) for flag, path in (("--json", args.json), ("--markdown", args.markdown)) if path]
    if sum(path == STDOUT for _, path in wanted) > 1:
        raise InputError("--json and --markdown both write to stdout ('-'); give one of them a FILE")
    for flag, path in wanted:
        if path != STDOUT:
            if not Path(path).parent.is_dir():
                raise InputError(f"{flag} {path}: the folder {Path(path).parent} does not exist")
            check_output_path(flag, path)
    return wanted


def _table_console(outputs) -> Console:
    if not any(path == STDOUT for _, path in outputs):
        return output_console()
    console = Console(stderr=True, markup=False)
    return console if console.is_terminal else output_console(sys.stderr)


def _write(outputs, rows, found, status: int, searched: int, from_cache: int, base) -> None:
    for flag, path in outputs:
        if flag == "--json":
            text = report.to_json(rows, found, status, searched, from_cache, base)
        else:
            text = report.to_markdown(rows, found, base)
        if path == STDOUT:
            sys.stdout.write(text)
            sys.stdout.flush()
            continue
        try:
            with open(path, "w" if flag == "--json" else "a", encoding="utf-8") as out:
                out.write(text)
        except OSError as exc:
            raise InputError(f"{flag} {path}: cannot write the report: {exc.strerror}") from None


def _summary(rows, from_cache: int, searched: int, cache: Path) -> str:
    counts: dict[str, int] = {}
    for row in rows:
        counts[row.status] = counts.get(row.status, 0) + 1
    parts = [f"{n} {status}" for status, n in sorted(counts.items(), key=lambda kv: kv[0] != CHECKED)]
    return (f"{len(rows)} tree(s): {', '.join(parts)}; {searched} search(es) made, {from_cache} check(s) "
            f"answered from the cache in {cache}")
