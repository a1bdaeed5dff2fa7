"""What several subcommands share: the search-limit flags, picking one scenario case, consoles."""

from __future__ import annotations

import argparse
import os

from rich.console import Console

from prefetch_check.model.protocols.poll.predicates import PredicateError
from prefetch_check.model.predicate_loader import load_predicate
from prefetch_check.model.protocols import ProtocolError, load_protocol
from prefetch_check.model.protocols.poll.properties import NAMES as PROPERTY_NAMES
from prefetch_check.scenario import Case, InputError, Scenario, load_scenario
from prefetch_check.scenario.errors import did_you_mean

REPORT_WIDTH = 200  # wide enough for the verdict table when stdout is not a terminal


def output_console(file=None) -> Console:
    """Results go to stdout; off a terminal use a fixed width (unless COLUMNS says otherwise)."""
    console = Console(file=file, markup=False)
    if file is not None or not console.is_terminal:
        width = int(os.environ["COLUMNS"]) if os.environ.get("COLUMNS", "").isdigit() else REPORT_WIDTH
        console = Console(file=file, width=width, markup=False)
    return console


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a number >= 1, got {value}")
    return value


def positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"expected a number of seconds > 0, got {text}")
    return value


def add_limit_flags(parser: argparse.ArgumentParser) -> None:
    g = parser.add_argument_group("search limits (override the scenario's [limits]; a cut search is BOUNDED)")
    g.add_argument("--max-states", type=positive_int, metavar="N", help="stop after N distinct states")
    g.add_argument("--max-depth", type=positive_int, metavar="N", help="do not explore beyond N steps")
    g.add_argument("--no-reductions", action="store_true",
                   help="search the plain state graph: no rank symmetry, no partial-order reduction (slower)")
    g.add_argument("--time-limit", type=positive_float, metavar="SECONDS", help="stop a search after this many seconds")


def limit_overrides(args) -> dict:
    return {"max_states": args.max_states, "max_depth": args.max_depth, "time_limit": args.time_limit}


def add_protocol_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--protocol", metavar="NAME|package.module:Class",
        help="the protocol to check: a built-in name (predicate-poll) or a variant of yours, a subclass "
             "of a built-in protocol that overrides a step or hook (replaces the scenario's protocol key)",
    )


def check_protocol(spec):
    """The --protocol value, loaded once so a bad one is reported before any search."""
    if spec is None:
        return None
    try:
        load_protocol(spec)
    except ProtocolError as exc:
        raise InputError(f"--protocol: {exc}") from None
    return spec


def add_case_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--case", type=positive_int, metavar="K",
                        help="which case of a scenario with a [matrix] (1-based; listed when missing)")


def check_predicate(spec: str) -> str:
    try:
        load_predicate(spec)
    except PredicateError as exc:
        raise InputError(f"--predicate: {exc}") from None
    return spec


def check_property(name: str) -> str:
    if name not in PROPERTY_NAMES:
        raise InputError(f"--property: unknown property {name!r}" + did_you_mean(name, PROPERTY_NAMES))
    return name


def one_case(path: str, k) -> tuple[Scenario, Case]:
    """The single case a trace or replay is about."""
    scenario = load_scenario(path)
    cases = scenario.cases
    if k is None:
        if len(cases) == 1:
            return scenario, cases[0]
        listing = "; ".join(f"--case {i}: {c.label}" for i, c in enumerate(cases, start=1))
        raise InputError(f"{path}: the scenario has {len(cases)} cases (a [matrix]); choose one with {listing}")
    if k > len(cases):
        raise InputError(f"--case {k}: {path} has only {len(cases)} case(s)")
    return scenario, cases[k - 1]
