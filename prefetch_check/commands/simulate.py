"""`prefetch-check simulate`: seeded random walks or PCT over the model, beyond exhaustive reach.

Exit status: 0 no violation found (which proves nothing: the output says what the runs
are worth), 1 a violation found (shrunk, replayed and shown), 2 bad input.
"""

from __future__ import annotations

import sys

from prefetch_check.commands import COMMANDS
from prefetch_check.commands.common import output_console, positive_float, positive_int
from prefetch_check.commands.sampling_args import add_model_flags, chosen_cases, replay_command
from prefetch_check.commands.replay import print_steps
from prefetch_check.commands.trace import viewer
from prefetch_check.explorer.confidence import CONFIDENCE, all_miss, clean_bound
from prefetch_check.explorer.pct import PCT, pct_bound
from prefetch_check.explorer.random_walk import RandomWalk
from prefetch_check.explorer.replay import replay
from prefetch_check.explorer.result import VIOLATED, PropertyResult
from prefetch_check.checker import Checker
from prefetch_check.explorer.walk import DEADLOCK, DEPTH, SETTLED
from prefetch_check.scenario import InputError

HELP = COMMANDS["simulate"]
STRATEGIES = ("random", "pct")
DEFAULT_SCHEDULES = 1000
DEFAULT_DEPTH = 2000
DEFAULT_PCT_DEPTH = 3
NOT_FOUND = "NO VIOLATION FOUND (sampled)"
NOT_JUDGED = "NOT JUDGED"
MAX_VIEWER_THREADS = 32  # beyond this, the trace viewer's lanes are too narrow to read: a step list instead


def add_arguments(parser) -> None:
    add_model_flags(parser)
    parser.add_argument("--seed", type=int, required=True, metavar="S",
                        help="the seed: the same seed gives the same schedules and the same output")
    parser.add_argument("--schedules", type=positive_int, default=DEFAULT_SCHEDULES, metavar="N",
                        help=f"how many runs (default {DEFAULT_SCHEDULES})")
    parser.add_argument("--depth", type=positive_int, default=DEFAULT_DEPTH, metavar="D",
                        help=f"steps per run at most (default {DEFAULT_DEPTH}); a run also ends when every "
                             "thread is idle or none can step")
    parser.add_argument("--strategy", choices=STRATEGIES, default="random",
                        help="random: every enabled action equally likely (default); pct: random priorities "
                             "per thread with d-1 priority change points")
    parser.add_argument("--pct-depth", type=positive_int, metavar="d",
                        help=f"PCT's bug depth d (default {DEFAULT_PCT_DEPTH}): d-1 change points per run")
    parser.add_argument("--keep-going", action="store_true",
                        help="run every schedule even after each property has a violation")
    parser.add_argument("--time-limit", type=positive_float, metavar="SECONDS",
                        help="stop starting new runs after this many seconds (the output says so; it then "
                             "depends on the machine's speed, not on the seed alone)")
    parser.add_argument("--no-trace", action="store_true", help="print the schedules, not the step-by-step traces")


def strategy_of(args):
    if args.strategy == "pct":
        return PCT(args.pct_depth or DEFAULT_PCT_DEPTH)
    if args.pct_depth is not None:
        raise InputError("--pct-depth: only the pct strategy has a depth (add --strategy pct)")
    return RandomWalk()


def execute(args) -> int:
    strategy = strategy_of(args)
    [case] = chosen_cases(args, one=True)
    checker = Checker.of_case(case, args.predicate)
    name, model = case.name, checker.search_model()
    console = output_console()
    console.print(
        f"simulate {name} · predicate {args.predicate} · {strategy.describe()} · seed {args.seed} · "
        f"up to {args.schedules} schedule(s) of depth <= {args.depth}",
        highlight=False, soft_wrap=True,
    )
    sim = checker.simulate(strategy, args.seed, args.schedules, args.depth,
                           stop_when_found=not args.keep_going, time_limit=args.time_limit)
    console.print(_summary(sim), highlight=False, soft_wrap=True)
    print(_timing(sim), file=sys.stderr)
    _verdicts(console, model, sim)
    clean = [n for n in sim.judged if n not in sim.violations]
    if clean and sim.runs:
        console.print(_worth(model, sim, strategy, clean), highlight=False, soft_wrap=True)
    if sim.violations:
        _show(console, args, case, model, sim)
    return 1 if sim.violations else 0


def _summary(sim) -> str:
    ends = []
    for key, words in ((SETTLED, "ended with every thread idle"), (DEADLOCK, "ended in a deadlock"),
                       (DEPTH, f"cut at depth {sim.depth}")):
        if sim.ends.get(key):
            ends.append(f"{sim.ends[key]} {words}")
    text = f"ran {sim.runs} schedule(s): {sim.steps:,} steps, the longest {sim.longest} ({'; '.join(ends) or 'none'})"
    if sim.stop_reason:
        text += f"; stopped early: {sim.stop_reason}"
    return text


def _timing(sim) -> str:
    """Times go to stderr: stdout depends on the seed alone."""
    text = f"prefetch-check simulate: sampling took {sim.seconds:.2f}s"
    for v in sim.violations.values():
        text += f"; {v.name} found after {v.found_seconds:.2f}s"
    if sim.violations:
        text += f"; shrinking took {sim.shrink_seconds:.2f}s"
    return text


def _verdicts(console, model, sim) -> None:
    width = max(len(p.name) for p in model.properties())
    for p in model.properties():
        if p.not_applicable is not None:
            line = f"NOT APPLICABLE: {p.not_applicable}"
        elif p.name in sim.violations:
            v = sim.violations[p.name]
            line = (f"VIOLATED in schedule #{v.run} (step {v.found_steps}); "
                    f"shrunk to {len(v.trace)} steps, replayed: {v.reason}")
        elif p.name in sim.not_judged:
            line = f"{NOT_JUDGED}: {sim.not_judged[p.name]}"
        else:
            line = NOT_FOUND
        console.print(f"  {p.name:<{width}}  {line}", highlight=False, soft_wrap=True)


def _worth(model, sim, strategy, clean: list) -> str:
    """What the runs without a violation of `clean` are worth, with the formula."""
    n, conf = sim.runs, CONFIDENCE
    names = ", ".join(clean)
    text = f"what this is worth for {names}: no violation in {n} schedule(s) of depth <= {sim.depth}"
    if sim.cut_by_depth:
        text += f" ({sim.cut_by_depth} cut by the depth bound before every thread was idle)"
    text += ". Not a proof. "
    if isinstance(strategy, PCT):
        d, k = strategy.depth, sim.depth
        actors = len(model.actors()) if hasattr(model, "actors") else sim.actors
        p = pct_bound(actors, k, d)
        text += (
            f"PCT with depth d={d} finds a bug of depth {d} with probability at least p = 1/(n * k^(d-1)) per run, "
            f"with n = {actors} threads (actors) and k = {k} steps (the depth bound): p = {p:.3g}; "
            f"{n} independent runs all miss such a bug with probability at most (1-p)^N = {all_miss(p, n):.3g}."
        )
    else:
        q = clean_bound(n, conf)
        text += (
            f"A violation that one uniform random schedule hits with probability q is missed by all N = {n} "
            f"with probability (1-q)^N; so with {conf:.0%} confidence any such violation has q < "
            f"1 - {1 - conf:.2g}^(1/N) = {q:.3g} per schedule."
        )
    return text


def _show(console, args, case, model, sim) -> None:
    view = viewer()  # a clear message if the viewer is missing from this installation
    from prefetch_check.explorer.view.layout import build_view
    from prefetch_check.explorer.view.terminal import verdict_panel

    name, spec = case.name, case.model(args.predicate)
    ranks = case.config.ranks if args.ranks is not None else None
    descriptions = {p.name: p.description for p in model.properties()}
    for prop, v in sim.violations.items():
        console.print()
        trace = replay(spec, v.trace.schedule)  # in the specification's readable states
        result = PropertyResult(prop, VIOLATED, descriptions[prop], v.reason, trace)
        title = f"{name} · {args.predicate} · {prop} · seed {sim.seed}, schedule #{v.run}, shrunk"
        layout = None if args.no_trace else build_view(spec, trace, result, title)
        if layout is None:
            console.print(title, highlight=False, soft_wrap=True)
        elif len(layout.columns) <= MAX_VIEWER_THREADS:
            view.render_trace(console, spec, trace, result, title)
        else:  # too many threads for one column (or lane) each: the steps as a list, then the verdict
            console.print(title, style="bold", highlight=False, soft_wrap=True)
            print_steps(console, spec, trace)
            console.print(verdict_panel(layout))
        console.print(f"  replay it: {replay_command(args, ranks, trace.schedule)}", highlight=False, soft_wrap=True)
