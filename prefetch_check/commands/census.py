"""`prefetch-check census`: how likely a run hits each violation, under the uniform random scheduler.

Exact (the whole state graph solved as an absorbing Markov chain) where the graph has at
most --max-states states, Monte Carlo with a Wilson interval beyond. Exit status: 0 the
census is printed (it judges nothing), 2 bad input.
"""

from __future__ import annotations

import argparse
import sys

from rich import box
from rich.table import Table

from prefetch_check.commands import COMMANDS
from prefetch_check.commands.common import output_console, positive_int
from prefetch_check.commands.sampling_args import add_model_flags, chosen_cases
from prefetch_check.checker import Checker
from prefetch_check.explorer.census import DISTRIBUTION, EXACT, TooLarge
from prefetch_check.explorer.confidence import CONFIDENCE
from prefetch_check.scenario import InputError

HELP = COMMANDS["census"]
METHODS = ("auto", "exact", "sampled")
DEFAULT_MAX_STATES = 300_000
DEFAULT_RUNS = 10_000
DEFAULT_DEPTH = 5000


def confidence_value(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a confidence such as 0.95, got {text!r}") from None
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"expected a confidence strictly between 0 and 1, got {text}")
    return value


def add_arguments(parser) -> None:
    add_model_flags(parser, several_ranks=True)
    parser.add_argument("--method", choices=METHODS, default="auto",
                        help="exact: solve the whole state graph; sampled: Monte Carlo; auto (default): exact "
                             "when the graph has at most --max-states states, else sampled")
    parser.add_argument("--max-states", type=positive_int, default=DEFAULT_MAX_STATES, metavar="N",
                        help=f"largest state graph the exact census builds (default {DEFAULT_MAX_STATES:,})")
    parser.add_argument("--runs", type=positive_int, default=DEFAULT_RUNS, metavar="N",
                        help=f"sampled: random runs (default {DEFAULT_RUNS:,})")
    parser.add_argument("--seed", type=int, default=0, metavar="S", help="sampled: the seed (default 0; printed)")
    parser.add_argument("--depth", type=positive_int, default=DEFAULT_DEPTH, metavar="D",
                        help=f"sampled: steps per run at most (default {DEFAULT_DEPTH}); a run also ends when "
                             "every thread is idle")
    parser.add_argument("--confidence", type=confidence_value, default=CONFIDENCE, metavar="C",
                        help=f"sampled: the interval's confidence (default {CONFIDENCE})")


def execute(args) -> int:
    cases = chosen_cases(args, one=False)
    console = output_console()
    console.print(f"census under predicate {args.predicate}; distribution: {DISTRIBUTION}, until every thread "
                  "is idle (or none can step)", highlight=False, soft_wrap=True)
    table = Table(box=box.SIMPLE_HEAD)
    for column in ("case", "property", "P(a run violates it)", "interval", "how"):
        table.add_column(column, overflow="fold")
    notes = []
    not_judged = {}
    for case in cases:
        checker = Checker.of_case(case, args.predicate)
        name, model = case.name, checker.search_model()
        census, why = _census(args, checker)
        how = _how(census, why)
        print(f"prefetch-check census: {name}: {census.method} in {census.seconds:.1f}s", file=sys.stderr)
        first = True
        for p in model.properties():
            if p.name in census.estimates:
                e = census.estimates[p.name]
                value, interval = _figures(e, census)
            elif p.not_applicable is not None:
                value, interval = "NOT APPLICABLE", ""
            else:
                value, interval = "NOT JUDGED", ""
                not_judged[p.name] = census.not_judged.get(p.name, "")
            table.add_row(name if first else "", p.name, value, interval, how if first else "")
            first = False
        table.add_section()
        if why:
            notes.append(f"{name}: {why}")
    console.print(table)
    for note in notes:
        console.print(note, highlight=False, soft_wrap=True)
    for prop, why in not_judged.items():
        console.print(f"{prop}: NOT JUDGED: {why}", highlight=False, soft_wrap=True)
    console.print(
        "exact: the whole state graph (ranks interchanged where that changes nothing) solved as an absorbing "
        "Markov chain, in floating point; sampled: Wilson score interval, a run cut by the depth bound counted "
        "as a miss for the low end and a hit for the high end",
        highlight=False, soft_wrap=True, style="dim",
    )
    return 0


def _census(args, checker):
    """The census and, when auto fell back to sampling, why."""
    if args.method in ("auto", "exact"):
        try:
            return checker.census(max_states=args.max_states), ""
        except TooLarge as exc:
            if args.method == "exact":
                raise InputError(f"--method exact: the state graph has {exc}; raise --max-states or use "
                                 "--method sampled") from None
            why = f"sampled: the state graph has {exc} (--max-states {args.max_states:,})"
    else:
        why = ""
    return checker.census(exact=False, seed=args.seed, runs=args.runs, depth=args.depth,
                          confidence=args.confidence), why


def _how(census, why: str) -> str:
    if census.method == EXACT:
        return f"exact, {census.states:,} states"
    text = f"sampled, {census.runs:,} runs, seed {census.seed}"
    if census.cut:
        text += f", {census.cut} cut at depth {census.depth}"
    return text


def _figures(e, census) -> tuple[str, str]:
    if e.exact:
        return f"{e.probability:.6f}", "exact"
    return (f"{e.probability:.4f} ({e.hits}/{census.runs})",
            f"[{e.low:.4f}, {e.high:.4f}] at {census.confidence:.0%}")
