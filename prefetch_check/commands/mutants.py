"""`prefetch-check mutants`: run the mutant catalogue and show which property catches each mutant.

Exit status: 0 every mutant is killed or explained as equivalent, 1 a gap (a mutant no
scenario kills and nobody explained) or an equivalence claim a scenario refutes, 2 bad input.
A variant of yours (`--protocol`) that no property catches is "not caught", not a gap (it may
be a fix: its repairs are listed, where the unmutated protocol fails and it does not): exit 0.
"""

from __future__ import annotations

from prefetch_check.commands import COMMANDS
from prefetch_check.explorer.limits import Limits
from prefetch_check.commands.common import add_limit_flags, check_protocol, limit_defaults, limit_overrides, output_console
from prefetch_check.mutation import (
    EQUIVALENT,
    GAP,
    KILLED,
    NOT_CAUGHT,
    WRONG_EQUIVALENCE,
    MutationRun,
    NamedConfig,
    as_mutant,
    as_named_configs,
    catalogue,
    run_mutants,
)
from prefetch_check.model.protocols import family, load_protocol
from prefetch_check.model.protocols.registry import descriptor, names
from prefetch_check.progress import RunProgress
from prefetch_check.scenario import InputError, load_scenarios
from prefetch_check.scenario.errors import did_you_mean

HELP = COMMANDS["mutants"]
PREDICATE = "fixed"
# A mutant may blow up a search the fixed protocol keeps small (a TP=8 case of 500 states becomes
# millions): where neither the scenario nor a flag bounds the states, each search stops here and
# the mutant's row says which searches were cut (BOUNDED), never that it survived them.
MUTANT_STATE_BUDGET = 200_000


def add_arguments(parser) -> None:
    parser.add_argument(
        "paths", nargs="*", metavar="SCENARIO",
        help="scenario files or folders (default: the built-in small configurations)",
    )
    parser.add_argument("--builtin", action="store_true", help="also run the built-in small configurations")
    parser.add_argument("--mutant", action="append", metavar="NAME", help="only this mutant (repeatable)")
    parser.add_argument("--catalogue", choices=("all",) + names(), default="all",
                        help="the protocol whose mutants to run (default: every protocol's catalogue; with scenario "
                             "files and no --builtin, every catalogue of their protocols)")
    parser.add_argument("--list", action="store_true", help="list the catalogue and exit")
    parser.add_argument("--no-traces", action="store_true", help="omit the counterexample steps")
    parser.add_argument("--markdown", action="store_true", help="print only the score table, as Markdown (for the README)")
    parser.add_argument("--quiet", "-q", action="store_true", help="no progress display")
    parser.add_argument("--protocol", metavar="package.module:Class",
                        help="run a protocol variant of yours like a mutant (instead of the catalogue): "
                             "which property in which scenario catches it")
    add_limit_flags(parser)


def execute(args) -> int:
    if args.protocol and args.mutant:
        raise InputError("--protocol and --mutant: choose one (a variant of yours, or mutants of the catalogue)")
    console = output_console()
    batches = _batches(args)
    if args.list:
        for protocol, mutants in batches:
            console.print(f"{protocol}:", highlight=False)
            for line in catalogue_lines(mutants):
                console.print(line, highlight=False, soft_wrap=True)
        return 0
    runs = []
    for protocol, mutants in batches:
        configs = _configs(args, protocol)
        with RunProgress((len(mutants) + 1) * len(configs), quiet=args.quiet or args.markdown) as progress:
            runs.append(run_mutants(configs, mutants, PREDICATE, reductions=not args.no_reductions, progress=progress))
    for (protocol, _), run in zip(batches, runs):
        if len(runs) > 1:
            console.print(f"{'### ' if args.markdown else '== '}the {protocol} protocol", highlight=False)
            console.print("", highlight=False)
        lines = markdown_lines(run) if args.markdown else report_lines(run, traces=not args.no_traces)
        for line in lines:
            console.print(line, highlight=False, soft_wrap=True)
        if len(runs) > 1:
            console.print("", highlight=False)
    return 0 if all(run.complete for run in runs) else 1


def _batches(args) -> list[tuple[str, list]]:
    """(protocol, mutants) to run: a variant of the user's, the mutants named, or the catalogues."""
    if args.protocol:
        variant = load_protocol(check_protocol(args.protocol))
        return [(family(variant), [as_mutant(variant)])]
    protocols = list(names()) if args.catalogue == "all" else [args.catalogue]
    if args.catalogue == "all" and args.paths and not args.builtin:  # the protocols of the scenarios given
        present = {family(load_protocol(s.protocol)) for s in load_scenarios(args.paths)}
        protocols = [p for p in protocols if p in present]
    catalogues = {p: catalogue(p)[0] for p in protocols}
    if not args.mutant:
        return [(p, list(mutants)) for p, mutants in catalogues.items()]
    by_name = {m.name: (p, m) for p, mutants in catalogues.items() for m in mutants}
    for name in args.mutant:
        if name not in by_name:
            raise InputError(f"--mutant: no mutant {name!r}" + did_you_mean(name, list(by_name)))
    chosen: dict = {}
    for name in dict.fromkeys(args.mutant):
        protocol, mutant = by_name[name]
        chosen.setdefault(protocol, []).append(mutant)
    return list(chosen.items())


def _configs(args, protocol: str) -> list[NamedConfig]:
    """The scenario cases of this protocol (from the paths given), and its built-in configurations."""
    overrides = limit_overrides(args)
    defaults = {**limit_defaults(), "max_states": MUTANT_STATE_BUDGET}
    configs = []
    if args.paths:
        for scenario in load_scenarios(args.paths):  # every file validated before anything runs
            if family(load_protocol(scenario.protocol)) != protocol:
                continue
            limits = scenario.limits_for(PREDICATE, overrides, defaults)
            configs += [NamedConfig(case.name, case.config, limits) for case in scenario.cases]
    if args.builtin or not args.paths:
        limits = Limits(**{**defaults, **{k: v for k, v in overrides.items() if v is not None}})
        builtin = catalogue(protocol)[1]
        if args.protocol:  # a variant may be a fix: also where the protocol itself fails (dropped assumptions)
            builtin += as_named_configs(descriptor(protocol).assumption_configs())
        configs += [NamedConfig(c.name, c.config, limits) for c in builtin]
    names = [c.name for c in configs]
    clash = sorted({n for n in names if names.count(n) > 1})
    if clash:
        raise InputError(f"two scenarios are named {clash[0]!r}; scenario names must differ to tell kills apart")
    if not configs:
        raise InputError(f"no scenario of the {protocol} protocol among the paths given (add --builtin for its built-in configurations)")
    return configs


# ---- text ----


def catalogue_lines(mutants) -> list[str]:
    out = []
    for i, m in enumerate(mutants, start=1):
        out.append(f"{i:2}. {m.name}")
        out.append(f"    change:   {m.description}")
        if m.upstream:  # a user variant's mutants may not name an upstream change
            out.append(f"    upstream: {m.upstream}")
        if m.equivalent:
            out.append(f"    equivalent: {m.equivalent}")
        else:
            out.append(f"    expected to violate: {m.expected}")
    return out


def report_lines(run: MutationRun, traces: bool = True) -> list[str]:
    out = [
        f"prefetch-check mutants: {len(run.outcomes)} mutant(s) x {len(run.scenarios)} scenario(s), "
        f"predicate {run.predicate}",
        "",
    ]
    out += _baseline_lines(run)
    for i, o in enumerate(run.outcomes, start=1):
        m = o.mutant
        out.append("")
        best = o.best
        if o.status in (KILLED, WRONG_EQUIVALENCE):
            head = f"KILLED by {best.prop} in {best.scenario}, {best.steps} steps"
            if o.status == WRONG_EQUIVALENCE:
                head += "  (declared equivalent: the explanation is wrong)"
        elif o.status == EQUIVALENT:
            head = "EQUIVALENT (no scenario kills it; explained below)"
        elif o.status == NOT_CAUGHT:
            head = ("NOT CAUGHT: no property in any scenario tells it from the protocol (a fix: what you want, "
                    "and `run --protocol` verifies it; a bug: no scenario reaches it)")
        elif o.bounded:
            head = "GAP: no scenario kills it within the search limits (raise them, or add a smaller scenario)"
        else:
            head = "GAP: no scenario kills it (an equivalent mutant to explain, or a missing scenario or property)"
        out.append(f"{i:2}. {m.name}: {head}")
        out.append(f"    change:   {m.description}")
        if m.upstream:  # a user variant's mutants may not name an upstream change
            out.append(f"    upstream: {m.upstream}")
        if o.status == EQUIVALENT:
            out.append(f"    why equivalent: {m.equivalent}")
        for scenario, message in o.errors:
            out.append(f"    ERROR in {scenario}: {message}")
        if o.bounded and not o.killed:
            out.append(f"    searches cut by a limit (BOUNDED): {', '.join(o.bounded)}")
        if o.repairs:
            out.append("    repairs:  " + ", ".join(f"{prop} in {scenario}" for scenario, prop in o.repairs)
                       + " (the unmutated protocol violates it there; this one verifies it)")
        if best is None:
            continue
        others = [f"{k.scenario}/{k.prop} ({k.steps})" for k in o.kills if k is not best]
        if others:
            out.append(f"    also killed by: {', '.join(others)}")
        out.append(f"    why:      {best.reason}")
        out.append(f"    schedule: {best.trace.schedule}")
        if traces:
            out += _steps(best.trace)
    out.append("")
    out += table_lines(run)
    out.append("")
    out.append(score_line(run))
    return out


def _baseline_lines(run: MutationRun) -> list[str]:
    out = []
    for name, result in run.baseline.items():
        if result.violated:
            out.append(
                f"note: the unmutated protocol already violates {', '.join(result.violated)} in {name}; "
                "those properties do not count as kills there"
            )
    if not out:
        out.append("the unmutated protocol violates no property in any scenario")
    cut = [name for name, result in run.baseline.items() if not result.stats.complete]
    if cut:
        out.append(f"searches cut by a limit (verdicts BOUNDED) for the unmutated protocol in: {', '.join(cut)}")
    return out


def _steps(trace) -> list[str]:
    out = []
    width = max((len(s.action_id) for s in trace.steps), default=0)
    for n, step in enumerate(trace.steps, start=1):
        if trace.cycle_start is not None and n - 1 == trace.cycle_start:
            out.append("      -- from here the steps repeat forever --")
        out.append(f"    {n:3}. {step.action_id:<{width}}  {step.description}")
    return out


def _row(o) -> tuple[str, str, str, str, str]:
    best = o.best
    verdict = {KILLED: "killed", EQUIVALENT: "equivalent", GAP: "GAP", WRONG_EQUIVALENCE: "killed (claimed equivalent)",
               NOT_CAUGHT: "not caught"}[o.status]
    if best is None:
        return o.mutant.name, verdict, "-", "-", "-"
    return o.mutant.name, verdict, best.scenario, best.prop, str(best.steps)


HEADER = ("mutant", "verdict", "scenario", "property", "steps")


def table_lines(run: MutationRun) -> list[str]:
    rows = [HEADER] + [_row(o) for o in run.outcomes]
    widths = [max(len(r[i]) for r in rows) for i in range(len(HEADER))]
    return ["  ".join(cell.ljust(w) for cell, w in zip(r, widths)).rstrip() for r in rows]


def markdown_lines(run: MutationRun) -> list[str]:
    out = ["| mutant | what changed | caught by | scenario | steps |", "|---|---|---|---|---|"]
    for o in run.outcomes:
        name, verdict, scenario, prop, steps = _row(o)
        caught = prop if o.killed else f"*{verdict}*"
        out.append(f"| `{name}` | {o.mutant.description} | {caught} | {scenario} | {steps} |")
    out.append("")
    out.append(score_line(run))
    return out


def score_line(run: MutationRun) -> str:
    killed, killable = run.score
    percent = f"{100 * killed / killable:.0f}%" if killable else "n/a"
    text = f"mutation score: {killed} of {killable} killable mutants killed ({percent})"
    if run.equivalent:
        text += f"; {len(run.equivalent)} equivalent mutant(s), explained"
    text += f"; {len(run.gaps)} gap(s)" if run.gaps else "; no gaps"
    if run.wrong_equivalences:
        text += f"; {len(run.wrong_equivalences)} equivalence claim(s) refuted"
    return text
