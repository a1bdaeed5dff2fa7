"""What `simulate` and `census` share on the command line: the scenario case, the TP size, the model."""

from __future__ import annotations

import argparse
import shlex

from prefetch_check.scenario import one_case
from prefetch_check.commands.common import add_protocol_flag, check_predicate, check_protocol, positive_int
from prefetch_check.sampling import with_ranks
from prefetch_check.scenario import load_scenario

MAX_RANKS = 256  # far beyond any deployment; the model's codes stay small ints well past it


def ranks_value(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number of ranks, got {text!r}") from None
    if not 1 <= value <= MAX_RANKS:
        raise argparse.ArgumentTypeError(f"expected 1..{MAX_RANKS} ranks, got {value}")
    return value


def ranks_list(text: str) -> list[int]:
    return [ranks_value(part) for part in text.split(",") if part.strip()] or [ranks_value(text)]


def add_model_flags(parser, several_ranks: bool = False) -> None:
    parser.add_argument("scenario", metavar="SCENARIO", help="a scenario file")
    parser.add_argument("--case", type=positive_int, metavar="K",
                        help="which case of a scenario with a [matrix] (1-based)"
                        + ("; default: every case" if several_ranks else "; listed when missing"))
    if several_ranks:
        parser.add_argument("--ranks", type=ranks_list, metavar="N[,N...]",
                            help="run at these TP sizes instead of the scenario's (its ranks must be alike); "
                                 "e.g. 1,2,4,8")
    else:
        parser.add_argument("--ranks", type=ranks_value, metavar="N",
                            help="run at N tensor-parallel ranks instead of the scenario's (its ranks must be "
                                 f"alike; up to {MAX_RANKS}, beyond the scenario files' 16)")
    parser.add_argument("--predicate", default="buggy", metavar="P", help="buggy (default), fixed or package.module:function")
    add_protocol_flag(parser)


def chosen_cases(args, one: bool) -> list:
    """The case(s) to run, each with its own protocol (the scenario's, or --protocol's variant of
    it): the scenario's case(s), rescaled by --ranks."""
    check_predicate(args.predicate)  # a bad predicate is reported before anything is loaded
    if one or args.case is not None:
        scenario, case = one_case(args.scenario, args.case)
        cases = [case]
    else:
        scenario = load_scenario(args.scenario)
        cases = list(scenario.cases)
    protocol = check_protocol(args.protocol, [scenario])
    cases = [case.with_protocol(protocol) for case in cases]
    sizes = args.ranks if isinstance(args.ranks, list) else [args.ranks]
    return [at_ranks(case, n, args.scenario) for case in cases for n in sizes]


def at_ranks(case, ranks: int | None, where: str):
    """The case at `ranks` tensor-parallel ranks (named so), or as it is (None or its own size)."""
    if ranks is None or ranks == case.config.ranks:
        return case
    return case.with_config(with_ranks(case.config, ranks, where), f"at ranks={ranks}")


def replay_command(args, ranks: int | None, schedule: str) -> str:
    """The `prefetch-check replay` command line that re-runs a schedule of this case."""
    parts = ["prefetch-check", "replay", args.scenario]
    if args.case is not None:
        parts += ["--case", str(args.case)]
    if ranks is not None:
        parts += ["--ranks", str(ranks)]
    if args.protocol is not None:
        parts += ["--protocol", args.protocol]
    parts += ["--predicate", args.predicate, schedule]
    return shlex.join(parts)
