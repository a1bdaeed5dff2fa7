"""Read scenario files and check ALL of them before anything runs.

A scenario becomes one or more `Case`s (one per matrix combination), each a ready
configuration of its protocol, plus its expectations and limits. Any problem in any file is reported
(file, line, key) before a single state is explored: nothing half-run is reported.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

from prefetch_check.explorer.limits import Limits
from prefetch_check.model.protocols import ProtocolError, load_protocol
from prefetch_check.scenario.errors import InputError, did_you_mean
from prefetch_check.scenario.expectations import Expect, parse_expect
from prefetch_check.scenario.limits import parse_limits, resolve
from prefetch_check.scenario.matrix import case_label, check_matrix, expand
from prefetch_check.scenario.parameters import ValueProblem
from prefetch_check.scenario.protocol_schema import every_parameter, schema_for
from prefetch_check.scenario.schema import META, REQUESTS
from prefetch_check.scenario.source import Source, read_source
from prefetch_check.scenario.unreached import KEY as UNREACHED, parse_unreached


@dataclass(frozen=True)
class Case:
    """One run of a scenario: a matrix combination (or the scenario itself) as a configuration
    together with the protocol it is a configuration of. A command gets its protocol instance and
    models from the case (`build`, `model`, `search_model`), never a protocol passed beside the
    configuration: the two cannot be mismatched (an ack-drain configuration under predicate-poll)."""

    scenario: str
    label: str  # "ranks=2, policy=timeout", or "" without a matrix
    config: object  # the configuration of the case's protocol
    protocol: str | type | None = None  # the scenario's protocol key, or --protocol's (None: the default protocol)
    note: str = ""  # how the case was changed after loading, e.g. "at ranks=32" (part of its name)
    unreached: tuple[str, ...] = ()  # actions the scenario declares this case is not meant to reach (unreached.py)

    @property
    def name(self) -> str:
        name = f"{self.scenario}[{self.label}]" if self.label else self.scenario
        return f"{name} {self.note}" if self.note else name

    @property
    def protocol_class(self) -> type:
        return load_protocol(self.protocol)

    def build(self, predicate="fixed"):
        """The protocol instance of this case under `predicate`."""
        return self.protocol_class(self.config, predicate)

    def model(self, predicate="fixed"):
        """The readable model (what traces hold and replays run)."""
        from prefetch_check.model.engine.readable import ReadableModel

        return ReadableModel(self.build(predicate))

    def search_model(self, predicate="fixed"):
        """The compiled model the searches, simulation and the census run on."""
        from prefetch_check.checker import Checker

        return Checker.of_case(self, predicate).search_model()

    def with_protocol(self, protocol) -> "Case":
        """The case under another protocol of the same family (`--protocol`; None keeps its own)."""
        return self if protocol is None else replace(self, protocol=protocol)

    def with_config(self, config, note: str = "") -> "Case":
        """The case with a changed configuration of its protocol (`--set`, `--ranks`)."""
        return replace(self, config=config, note=" ".join(filter(None, (self.note, note))))


@dataclass(frozen=True)
class Scenario:
    name: str
    path: str
    description: str
    cases: tuple[Case, ...]
    expect: dict = field(default_factory=dict)  # predicate -> Expect
    protocol: str | None = None  # a built-in protocol's name or package.module:ClassName; None: the default
    limits: dict = field(default_factory=dict)  # None / predicate -> {limit: value}
    drops_assumption: str = ""  # the upstream assumption the scenario gives up ("": it keeps them all)

    def limits_for(self, predicate: str, overrides: dict | None = None, defaults: dict | None = None) -> Limits:
        return resolve(self.limits, predicate, overrides or {}, defaults)

    def expectation(self, predicate: str) -> Expect | None:
        return self.expect.get(predicate)

    def case_number(self, case: Case) -> int | None:
        """The 1-based `--case` of one of this scenario's cases (also after `with_protocol` or
        `with_config`), None when the scenario has a single case."""
        if len(self.cases) == 1:
            return None
        return [c.label for c in self.cases].index(case.label) + 1


def load_scenario(path: str | Path) -> Scenario:
    """Parse and validate one scenario file; raises ScenarioError with file and line."""
    source = read_source(Path(path))
    doc = source.parse()
    try:
        return _build(source, doc, Path(path).stem)
    except ValueProblem as problem:
        raise source.error(problem.keypath, problem.message) from None


def _build(source: Source, doc: dict, stem: str) -> Scenario:
    for key in META:
        if key in doc and not isinstance(doc[key], str):
            raise ValueProblem((key,), f"{key} must be a string")
    protocol = doc.get("protocol")
    try:
        schema = schema_for(load_protocol(protocol))
    except ProtocolError as exc:
        raise ValueProblem(("protocol",), str(exc)) from None
    for key in doc:
        if key not in schema.top_level:
            others = "" if key not in every_parameter() else f" (it is a parameter of another protocol; this scenario's is {schema.protocol})"
            raise ValueProblem((key,), f"unknown key {key!r}{others}" + did_you_mean(key, schema.top_level))
    requests = doc.get("request", [])
    if not isinstance(requests, list):
        raise ValueProblem(("request",), "requests with different contents are written as [[request]] tables")
    if len(requests) > REQUESTS.high:
        raise ValueProblem(
            ("request", REQUESTS.high),
            f"{len(requests)} [[request]] tables; at most {REQUESTS.high} are allowed (as for `requests`)",
        )
    if requests:
        both = [k for k in schema.shorthand if k in doc]
        if both:
            raise ValueProblem(
                (both[0],),
                f"{both[0]!r} is set at the top level and [[request]] tables describe the requests; "
                "with [[request]] tables, put pages, hits and failing inside each table (their number is the request count)",
            )
    top = {k: v for k, v in doc.items() if k in schema.parameters}
    matrix = check_matrix(doc.get("matrix", {}), top, bool(requests), schema)
    name = doc.get("name", stem)
    choices = expand(matrix)
    unreached = parse_unreached(doc.get(UNREACHED), matrix, choices, load_protocol(protocol).action_kinds())
    cases = []
    for choice, not_reached in zip(choices, unreached):
        values = {**top, **choice}
        where = lambda key, choice=choice: ("matrix", key) if key in choice else (key,)  # noqa: E731
        try:
            config = schema.build(values, requests, where)
        except ValueProblem as problem:
            if choice and problem.keypath[:1] == ("matrix",):
                label = case_label(choice)
                label = label if len(label) <= 80 else label[:77] + "..."
                problem.message += f" (in the matrix case {label})"
            raise
        cases.append(Case(name, case_label(choice), config, protocol, unreached=not_reached))
    return Scenario(
        name=name,
        path=source.path,
        description=doc.get("description", ""),
        cases=tuple(cases),
        expect=parse_expect(doc.get("expect", {}), schema.properties),
        limits=parse_limits(doc.get("limits", {})),
        protocol=protocol,
        drops_assumption=doc.get("drops_assumption", ""),
    )


def scenario_files(paths) -> list[Path]:
    """Files as given; folders searched for *.toml (sorted, so runs are in a fixed order)."""
    out = []
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            found = sorted(p.rglob("*.toml"))
            if not found:
                raise InputError(f"{p}: no scenario files (*.toml) in this folder")
            out += found
        elif p.exists():
            out.append(p)  # a FIFO or device is refused, with what it is, when read
        else:
            raise InputError(f"{p}: no such scenario file or folder")
    return list(dict.fromkeys(out))


def one_case(path: str, k) -> tuple[Scenario, Case]:
    """The single case a trace, a replay or `testing.check_scenario` is about (`k`: 1-based, None for a scenario without a [matrix])."""
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


class ScenarioErrors(InputError):
    """Several files with problems: one paragraph each."""


def load_scenarios(paths) -> list[Scenario]:
    """Every scenario under `paths`, all validated; every problem found is reported at once."""
    scenarios, problems = [], []
    for path in scenario_files(paths):
        try:
            scenarios.append(load_scenario(path))
        except InputError as exc:
            problems.append(str(exc))
    seen: dict[str, str] = {}
    for s in scenarios:
        if s.name in seen:
            problems.append(f"{s.path}: the scenario name {s.name!r} is already used by {seen[s.name]}; names must be unique")
        seen.setdefault(s.name, s.path)
    if problems:
        raise ScenarioErrors("\n\n".join(problems))
    return scenarios
