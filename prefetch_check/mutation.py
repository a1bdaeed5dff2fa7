"""Run the mutant catalogue against scenarios: does the checker catch seeded protocol bugs?

Every mutant is checked with the same predicate (normally `fixed`) in every scenario.
A mutant is killed in a scenario by a property the mutant violates there and the
unmutated protocol does not (a property the unmutated protocol already violates in a
scenario says nothing about a mutant). A mutant no scenario kills is a gap, unless it
carries an explanation of why it is equivalent.

Searches take the API's one search path with rank symmetry (every mutant runs the same
code on every rank and keeps the prefetch, IO and clock steps irreversible, which is what
`model/engine/symmetry.py` relies on), but never the partial-order reduction of
`model/engine/reduction.py`: its argument needs the scheduler's loop to pass through
collectives, which a mutant (drain without its collective) may break. Symmetry alone
also keeps every kill's counterexample shortest.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Optional, Sequence

from prefetch_check.explorer.limits import Limits
from prefetch_check.explorer.result import BOUNDED, VERIFIED, VIOLATED, CheckResult
from prefetch_check.explorer.trace import Trace
from prefetch_check.model.protocols.mutant import MutantInfo as Mutant
from prefetch_check.model.protocols import builtin_ancestor, load_protocol, protocol_label
from prefetch_check.model.protocols.registry import DEFAULT, descriptor
from prefetch_check.api import check

KILLED = "killed"
EQUIVALENT = "equivalent"  # not killed, and the mutant explains why it cannot be
GAP = "gap"  # not killed and not explained: a missing scenario or property
NOT_CAUGHT = "not caught"  # a user's variant (`as_mutant`) that no property tells from the protocol: no gap
WRONG_EQUIVALENCE = "killed although declared equivalent"


@dataclass(frozen=True)
class NamedConfig:
    """One configuration to run every mutant in: a built-in one, or a case of a scenario file."""

    name: str
    config: object  # the configuration of the mutants' protocol
    limits: Limits = Limits()


def catalogue(protocol: str = DEFAULT) -> tuple[tuple, tuple]:
    """(mutants, built-in configurations) of a registered protocol: the CATALOGUE and CONFIGS of
    the mutants module its descriptor names (small configurations, each exercising one part of
    the protocol; together they kill the whole catalogue in seconds)."""
    mutants, configs = descriptor(protocol).catalogue()
    return mutants, as_named_configs(configs)


@dataclass(frozen=True)
class Kill:
    scenario: str
    prop: str
    reason: str
    trace: Trace

    @property
    def steps(self) -> int:
        return len(self.trace)


@dataclass(frozen=True)
class MutantOutcome:
    mutant: type[Mutant]
    kills: tuple[Kill, ...]  # in scenario order, then property order
    bounded: tuple[str, ...] = ()  # scenarios whose search a limit cut short
    errors: tuple[tuple[str, str], ...] = ()  # (scenario, message) where the mutant could not be checked
    repairs: tuple[tuple[str, str], ...] = ()  # (scenario, property) the unmutated protocol violates and it verifies

    @property
    def killed(self) -> bool:
        return bool(self.kills)

    @property
    def best(self) -> Optional[Kill]:
        """The kill with the shortest trace (the first scenario and property on ties)."""
        return min(self.kills, key=lambda k: k.steps) if self.kills else None

    @property
    def status(self) -> str:
        if self.kills:
            return WRONG_EQUIVALENCE if self.mutant.equivalent else KILLED
        if getattr(self.mutant, "variant", False) and not self.errors:
            return NOT_CAUGHT  # a fix, say: not a hole in the catalogue's scenarios
        return EQUIVALENT if self.mutant.equivalent else GAP

    def killed_by(self, prop: str) -> list[Kill]:
        return [k for k in self.kills if k.prop == prop]


@dataclass(frozen=True)
class MutationRun:
    scenarios: tuple[NamedConfig, ...]
    predicate: str
    baseline: dict  # scenario name -> CheckResult of the unmutated protocol
    outcomes: tuple[MutantOutcome, ...]

    def outcome(self, name: str) -> MutantOutcome:
        for o in self.outcomes:
            if o.mutant.name == name:
                return o
        raise KeyError(name)

    def with_status(self, status: str) -> list[MutantOutcome]:
        return [o for o in self.outcomes if o.status == status]

    killed = property(lambda self: self.with_status(KILLED))
    equivalent = property(lambda self: self.with_status(EQUIVALENT))
    gaps = property(lambda self: self.with_status(GAP))
    wrong_equivalences = property(lambda self: self.with_status(WRONG_EQUIVALENCE))

    @property
    def score(self) -> tuple[int, int]:
        """(killed, mutants that could be killed): explained-equivalent mutants are left out."""
        killable = len(self.outcomes) - len(self.equivalent)
        return sum(1 for o in self.outcomes if o.killed), killable

    @property
    def complete(self) -> bool:
        """Every mutant killed or explained, and no explanation contradicted."""
        return not self.gaps and not self.wrong_equivalences


def as_named_configs(items: Iterable) -> tuple["NamedConfig", ...]:
    """Accept NamedConfig values or (name, Config) / (name, Config, Limits) tuples."""
    return tuple(item if isinstance(item, NamedConfig) else NamedConfig(*item) for item in items)


def run_mutants(
    scenarios: Iterable = None,
    mutants: Sequence[type[Mutant]] = None,
    predicate="fixed",
    reductions: bool = True,
    progress=None,
) -> MutationRun:
    """Check the unmutated protocol and every mutant in every scenario.

    `progress` is optional and has RunProgress's methods: start(key, label),
    callback(key) -> on_progress, finish(key, result).
    """
    if mutants is None or scenarios is None:
        default_mutants, default_configs = catalogue()
        mutants = default_mutants if mutants is None else mutants
        scenarios = default_configs if scenarios is None else scenarios
    scenarios = as_named_configs(scenarios)
    name, predicate = _named(predicate)
    counter = iter(range(1 << 30))

    def run(model_class, sc: NamedConfig) -> CheckResult:
        key = next(counter)
        label = f"{getattr(model_class, 'name', '') or 'unmutated'} · {sc.name}"
        if progress is not None:
            progress.start(key, label)
        result = _check(model_class, sc, name, predicate, reductions, progress.callback(key) if progress else None)
        if progress is not None:
            progress.finish(key, result)
        return result

    default = load_protocol(DEFAULT)
    unmutated = {builtin_ancestor(m) or default for m in mutants} or {default}
    if len(unmutated) > 1:
        raise ValueError("mutants of different protocols cannot share one run")
    (unmutated,) = unmutated
    baseline = {sc.name: run(unmutated, sc) for sc in scenarios}
    outcomes = []
    for mutant in mutants:
        kills, bounded, errors, repairs = [], [], [], []
        for sc in scenarios:
            try:
                result = run(mutant, sc)
            except Exception as exc:  # a broken mutant must not hide the others' outcomes
                errors.append((sc.name, f"{type(exc).__name__}: {exc}"))
                continue
            kills += _kills(sc.name, result, baseline[sc.name])
            repairs += [(sc.name, prop) for prop in _repairs(result, baseline[sc.name])]
            if any(r.verdict == BOUNDED for r in result.results.values()):
                bounded.append(sc.name)
        outcomes.append(MutantOutcome(mutant, tuple(kills), tuple(bounded), tuple(errors), tuple(repairs)))
    return MutationRun(scenarios, name, baseline, tuple(outcomes))


def as_mutant(protocol_class) -> type[Mutant]:
    """A user's protocol variant, run like a mutant: which property in which scenario catches it."""
    if issubclass(protocol_class, Mutant):
        return protocol_class
    doc = (protocol_class.__doc__ or "").strip().splitlines()
    return type(protocol_class.__name__, (protocol_class,), {
        "name": protocol_label(protocol_class), "description": doc[0] if doc else "a protocol variant",
        "upstream": "", "touches": (), "expected": "", "equivalent": None, "variant": True,
    })


def _named(predicate) -> tuple[str, object]:
    """A predicate given as a name, a function, or a (name, function) pair from a loader."""
    if isinstance(predicate, tuple):
        return predicate
    if isinstance(predicate, str):
        return predicate, predicate
    return getattr(predicate, "__name__", "predicate"), predicate


def _check(model_class, sc: NamedConfig, pred_name: str, predicate, reductions: bool, on_progress) -> CheckResult:
    """The API's search, with rank symmetry only (see the module docstring)."""
    return check(sc.config, (pred_name, predicate) if not isinstance(predicate, str) else predicate, sc.limits,
                 on_progress, "symmetry" if reductions else False, protocol=model_class)


def _repairs(result: CheckResult, baseline: CheckResult) -> list[str]:
    """The properties the unmutated protocol violates and this one verifies (a fix's repairs)."""
    return [prop for prop, r in result.results.items()
            if r.verdict == VERIFIED and baseline.results[prop].verdict == VIOLATED]


def _kills(scenario: str, result: CheckResult, baseline: CheckResult) -> list[Kill]:
    out = []
    for prop in result.results:
        r = result.results.get(prop)
        if r is None or r.verdict != VIOLATED:
            continue
        if baseline.results[prop].verdict == VIOLATED:
            continue
        out.append(Kill(scenario, prop, r.reason, r.trace))
    return out


BUILTIN_CONFIGS = catalogue()[1]  # the predicate-poll protocol's, as before a second protocol came
