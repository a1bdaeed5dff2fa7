"""Checking SGLang trees: shape, protocol and options, the release's own predicate, the scenario runs.

One `ReleaseCheck` per tree. `plan` reads the tree's protocol files, detects the shape, maps it
to a protocol and its options (protocols.py), loads the release's own completion predicate
from its own file, and lists the runs: every chosen scenario case of that protocol, with the
release's options applied on top of the case's own parameters, under the release's predicate
and under our transcription of it (the protocol's built-in `fixed`). `run_all` answers the
runs of many trees at once: runs with the same key (same checker, protocol, configuration,
limits and predicate code) are searched once, and answers from the verdict cache are not
searched at all. A scenario's own expectations are not judged here: the verdicts are reported.
"""

from __future__ import annotations

import dataclasses
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from prefetch_check.scenario.overrides import apply_options, as_set_flags
from prefetch_check.explorer.result import BOUNDED, NOT_APPLICABLE, VERIFIED, VIOLATED
from prefetch_check.model.protocols import load_protocol
from prefetch_check.scenario.errors import InputError
from prefetch_check.model.protocols.poll.predicates import PredicateError
from prefetch_check.model.source.predicate import builtin_protocol, load_source_predicate, protocol_mismatch
from prefetch_check.scenario.loader import Case, Scenario
from prefetch_check.scenario.runner import Task, run_tasks
from prefetch_check.sglang import followed, verdict_cache
from prefetch_check.sglang.cache import cache_root
from prefetch_check.sglang.changed import Changes, nearest_changes
from prefetch_check.sglang.consequence import consequence
from prefetch_check.sglang.families import classify
from prefetch_check.sglang.code_checks import CodeCheck, plan_code
from prefetch_check.sglang.code_world import own_files
from prefetch_check.sglang.conformance_checks import ConformanceCheck, plan_conformance
from prefetch_check.sglang.mappings import conformed
from prefetch_check.sglang.followed import Followed
from prefetch_check.sglang.settings import non_default_settings
from prefetch_check.sglang.versions import is_version
from prefetch_check.sglang.locate import read_protocol_files
from prefetch_check.sglang.protocols import release_protocol
from prefetch_check.sglang.release_options import ReleaseOptions
from prefetch_check.sglang.release_record import RECORDED
from prefetch_check.sglang.shape import Shape
from prefetch_check.sglang.storage_prefetch import NONE as NO_STORAGE_PREFETCH, has_storage_prefetch
from prefetch_check.sglang.tree_shape import tree_shape
from prefetch_check.sglang.trees import Tree

TRANSCRIPTION = "fixed"  # our transcription of the releases' predicate, in each protocol
CHECKED, NO_SCENARIOS, NOT_READ, NOT_MODELLED = "checked", "no scenarios", "not read", "not modelled"
NOT_CHECKED = "not checked"  # coverage: a changed statement no case of the code engine ran (coverage_report.py)
NOT_ASKED = "model not asked"
MODEL, CODE = "model", "code"  # the engines: our protocol model, the tree's own code executed
ENGINES = (MODEL, CODE)


@dataclass
class Run:
    """One scenario case under one predicate, with the release's options applied."""

    key: str
    scenario: Scenario
    case: Case  # its configuration has the options applied
    case_number: Optional[int]  # 1-based, when the scenario has several cases
    predicate: str  # the spec given to the checker
    options: dict
    limits: object
    summary: Optional[dict] = None
    cached: bool = False
    replaced: tuple = ()  # (option, the scenario's value, the release's) where the release's shape differs
    settings: tuple[str, ...] = ()  # the server settings it runs with that are not the release's defaults

    def replaced_text(self) -> str:
        """What a reader of this case's name must know: the options of its own that this release's
        shape replaced (`ack-exceptions-caught` run with a release that ends the IO thread)."""
        if not self.replaced:
            return ""
        return "with this release's " + ", ".join(f"{name}={new} for its {old}" for name, old, new in self.replaced)

    def command(self, prop: str) -> str:
        """The `prefetch-check trace` command line that shows this run's counterexample of `prop`."""
        # the scenario's absolute path: the command works from any folder
        parts = ["prefetch-check", "trace", shlex.quote(str(Path(self.scenario.path).resolve()))]
        if self.case_number is not None:
            parts += ["--case", str(self.case_number)]
        parts += ["--predicate", shlex.quote(self.predicate)]
        sets = as_set_flags(self.options)
        return " ".join(parts + ([sets] if sets else []) + ["--property", prop])


@dataclass(frozen=True)
class Finding:
    """One case whose run violates a property: its counterexample's length, the command that shows
    it, and the upstream assumption its scenario gives up ("" where it keeps them all)."""

    case: str
    steps: int
    command: str
    reason: str
    replaced: str = ""  # the case's own options this release's shape replaced (Run.replaced_text)
    drops_assumption: str = ""
    consequence: str = ""  # what it costs a serving system (consequence.py)
    settings: tuple[str, ...] = ()  # the server settings its case runs with that the release does not default to (settings.py)
    reproduction: str = ""  # a unit-level script that shows it without this tool (known_findings.py)

    def label(self) -> str:
        return f"{self.case} ({self.replaced})" if self.replaced else self.case


@dataclass(frozen=True)
class PropertyVerdict:
    """A property over the runs of one predicate: the worst verdict, and for a violation the
    shortest counterexample (its length in steps, its case, the command that shows it) and every
    case that violates it (`cases`, shortest first)."""

    verdict: str
    steps: Optional[int] = None
    case: str = ""
    command: str = ""
    reason: str = ""
    replaced: str = ""  # the case's own options this release's shape replaced (Run.replaced_text)
    cases: tuple = ()  # Finding per violating case


# the runs a verdict is taken over: all, those under upstream's stated assumptions, those of the
# scenarios that give one up (Scenario.drops_assumption)
ALL, UPSTREAM, DROPPED = "all", "upstream", "dropped"


@dataclass
class Vouch:
    """The model's verdicts a tree the floor refuses may earn by conforming (vouch.py): the model
    configured as `label` (the followed release nearest its path, or its own options), run beside
    its code; shown only where the conformance check vouches for every changed statement and every
    step kind the searches took. `withheld`: why not, once known ("" until then, or shown)."""

    release: ReleaseOptions
    label: str
    withheld: str = ""
    rests_on: Optional[dict] = None  # once shown: what the verdicts rest on (vouch.py)
    borrowed: dict = field(default_factory=dict)  # option -> value known only for `label` (followed.json), not read off the tree


@dataclass
class ReleaseCheck:
    label: str
    family: str = ""
    shape: Optional[Shape] = None
    release: Optional[ReleaseOptions] = None
    predicate: str = "?"  # file:Class.method below sglang/srt
    predicate_spec: str = ""  # PATH.py:Class.method as loaded
    status: str = NOT_READ  # CHECKED, NO_SCENARIOS, NOT_READ, NOT_MODELLED, "not modelled yet"
    note: str = ""
    path: dict = field(default_factory=dict)  # ident -> PathFunction: the tree's prefetch path, fingerprinted
    path_differs: list = field(default_factory=list)  # the pieces of it no followed release has
    own: list[Run] = field(default_factory=list)  # under the release's predicate
    ours: list[Run] = field(default_factory=list)  # under our transcription
    code: CodeCheck = field(default_factory=CodeCheck)  # the tree's own code, executed (code_checks.py)
    conformance: ConformanceCheck = field(default_factory=ConformanceCheck)  # conformance_checks.py
    srt: Optional[Path] = None  # the tree's sglang/srt folder
    changed: Optional[Changes] = None  # coverage: its statements that differ from the nearest followed release
    coverage: Optional[object] = None  # coverage: what its code checks ran (coverage_report.TreeCoverage)
    vouch: Optional[Vouch] = None  # an edited tree's model verdicts, if its conforming code earns them (vouch.py)

    @property
    def protocol(self) -> Optional[str]:
        return self.release.protocol if self.release else None

    def properties(self) -> tuple[str, ...]:
        """The model's properties, none where its verdicts are withheld (the code diverges)."""
        return load_protocol(self.protocol).property_names if self.status == CHECKED and not self.withheld else ()

    def sizes(self) -> str:
        """What the model's verdicts rest on: its scenario cases and their sizes."""
        ranks = sorted({run.case.config.ranks for run in self.own})
        if not ranks:
            return ""
        span = f"TP={ranks[0]}" if len(ranks) == 1 else f"TP={ranks[0]}..{ranks[-1]}"
        text = f"{len(self.own)} scenario case(s), {span}, every schedule"
        if self.vouch is not None and self.vouch.rests_on is not None:
            text = f"as {self.vouch.label}, its code conforming: " + text
        return text

    @property
    def withheld(self) -> bool:
        """The tree's code diverges from the model: the model's verdicts are not shown."""
        return self.conformance.conforms is False

    def verdicts(self, which: str, part: str = ALL) -> dict[str, PropertyVerdict]:
        """Per property, the verdict of the release's own predicate ("own") or ours ("ours") over
        the runs of `part`: ALL, UPSTREAM (under upstream's assumptions) or DROPPED (giving one up)."""
        runs = self.own if which == "own" else self.ours
        if part != ALL:
            runs = [run for run in runs if bool(run.scenario.drops_assumption) == (part == DROPPED)]
        return {p: aggregate(runs, p) for p in self.properties()}

    @property
    def runs(self) -> list[Run]:
        return self.own + self.ours


def plan(tree: Tree, scenarios: dict[str, list[tuple[Scenario, int, Case]]], cache_class: Optional[str],
         limit_defaults: dict, follows: Optional[Followed] = None, engines: tuple[str, ...] = ENGINES,
         releases: Optional[Path] = None) -> ReleaseCheck:
    """Everything about one tree short of running the searches. `scenarios` maps a protocol name
    to its chosen (scenario, case index, case) triples; `follows` the releases the model follows
    (default: the fingerprints shipped with prefetch-check); `engines` which engines answer
    (MODEL: the scenarios on the model, for trees it follows; CODE: the executor on the tree);
    `releases` where a followed release an edited tree is compared with is fetched (changed.py)."""
    row = ReleaseCheck(tree.label, srt=tree.srt)
    if tree.srt is None:
        row.note = tree.error
        return row
    files = read_protocol_files(tree.srt, own_files())
    if not has_storage_prefetch(files):
        row.status, row.note = NOT_MODELLED, NO_STORAGE_PREFETCH
        return row
    follows = follows if follows is not None else followed.shipped()
    taken = tree_shape(files, cache_class, follows)
    shape, row.path, row.path_differs = taken.shape, taken.path, taken.differing
    row.shape, row.family = shape, classify(shape)
    if CODE in engines:  # coverage: the statements an edit changed, whose runs the child counts
        row.changed = nearest_changes(files, row.path, follows, [r for r in (releases, cache_root()) if r])
        row.code = plan_code(tree.srt, shape, row.changed.spans() if row.changed else None)
    if MODEL not in engines:
        row.status, row.note = NOT_ASKED, "the model was not asked (--engine code)"
        return row
    row.release = release = release_protocol(shape, row.family)
    # the model the tree's code is compared with: its own configuration, or for a tree the floor
    # refuses, that of the followed release nearest its path (said in the row's note)
    compared, nearest, borrowed = release, "", ()
    if not release.modelled and taken.nearest is not None:
        nearest, near_shape = taken.nearest
        compared = release_protocol(near_shape, classify(near_shape))
        borrowed = tuple(n for n in RECORDED if not getattr(shape, n).recognised and getattr(near_shape, n).recognised)
    if CODE in engines and row.code.ran and compared.modelled and conformed(compared.protocol):
        cases = [(case.name, config) for case, config in _applied(scenarios.get(compared.protocol, []), compared)]
        row.conformance = plan_conformance(tree.srt, compared.options, cases, compared.protocol,
                                           shape.predicate.value or "", row.changed.spans() if row.changed else None)
    elif release.protocol and conformed(release.protocol):
        row.conformance.note = ("no conformance check: " + (row.code.note or "the code engine was not asked")
                                if not row.code.ran else "no conformance check: the release's options are not modelled")
    if shape.predicate.value:
        row.predicate = shape.predicate.value
        rel, _, qualname = shape.predicate.value.partition(":")
        row.predicate_spec = f"{tree.srt / rel}:{qualname}"
    if row.path_differs:  # the honest floor: never a verdict about code the model has not read
        row.status, row.note = NOT_MODELLED, followed.refusal(row.path_differs, follows)
        if row.conformance.planned and compared is not release:
            row.note += f"; its code is compared with the model configured as {nearest}, the followed release nearest its path"
        if row.conformance.planned:  # its code may yet earn the model's verdicts by conforming (vouch.py)
            refused = _model_runs(row, tree, compared, scenarios, limit_defaults)
            row.vouch = Vouch(compared, nearest or "its own options", refused[1] if refused else "",
                              borrowed={n: getattr(near_shape, n).value for n in borrowed})
            if refused:
                row.own, row.ours = [], []
        return row
    if taken.unmatched:  # nor one about a mix of releases, whose configuration no release has
        row.status, row.note = NOT_MODELLED, taken.unmatched
        return row
    if not release.modelled:
        row.status, row.note = release.status, "; ".join(release.not_modelled)
        return row
    refused = _model_runs(row, tree, release, scenarios, limit_defaults)
    if refused:
        row.status, row.note = refused
        return row
    row.status = CHECKED
    return row


def _model_runs(row: ReleaseCheck, tree: Tree, release: ReleaseOptions, scenarios, limit_defaults) -> Optional[tuple]:
    """The model's runs of a tree configured as `release`, under its own predicate and our
    transcription, into row.own and row.ours; or (status, why) where the model cannot answer."""
    try:
        name, predicate = load_source_predicate(row.predicate_spec)
    except PredicateError as exc:
        return NOT_MODELLED, f"the release's predicate cannot be read: {exc}"
    why = protocol_mismatch(name, predicate, release.protocol)
    if why:
        return NOT_MODELLED, why
    chosen = scenarios.get(release.protocol, [])
    if not chosen:
        return NO_SCENARIOS, (f"no {release.protocol} scenario to run (scenarios with protocol = "
                              f"\"{release.protocol}\"); give them with --scenarios")
    own_id = verdict_cache.predicate_identity(row.predicate_spec, predicate)
    version = tree.label if is_version(tree.label) else None  # a release's defaults are known by its version
    kept = _applied_cases(chosen, release)
    ran = {id(case) for (_, _, case), _ in kept}
    skipped = [case.name for _, _, case in chosen if id(case) not in ran]
    for (scenario, index, case), (applied, config) in kept:
        shape = _whole_shape(case, release.options)
        number = index + 1 if len(scenario.cases) > 1 else None
        replaced = _replaced(case, config, shape)
        for spec, ident, runs in ((row.predicate_spec, own_id, row.own), (TRANSCRIPTION, TRANSCRIPTION, row.ours)):
            limits = scenario.limits_for(spec, {}, limit_defaults)
            key = verdict_cache.task_key(release.protocol, ident, config, limits)
            runs.append(Run(key, scenario, applied, number, spec, release.options, limits, replaced=replaced,
                            settings=non_default_settings(config, version)))
    if skipped:
        row.note = "; ".join(filter(None, [row.note, f"not for this shape (skipped): {', '.join(skipped)}"]))
    return None


def _applied_cases(chosen, release) -> list:
    """((scenario, index, case), (the case with the release's whole shape applied, its
    configuration)) for each chosen case this shape can run (a scenario may set what this shape
    does not have, e.g. hit-time allocation: skipped)."""
    out = []
    for scenario, index, case in chosen:
        try:
            config = apply_options(case.config, _whole_shape(case, release.options), flag="release option")
        except InputError:
            continue
        out.append(((scenario, index, case), (dataclasses.replace(case, config=config), config)))
    return out


def _applied(chosen, release) -> list:
    """The chosen cases with the release's whole shape applied: (case, configuration)."""
    return [pair for _, pair in _applied_cases(chosen, release)]


def _defaults(config) -> dict:
    """The protocol's default of every option of a configuration."""
    return {f.name: f.default for f in dataclasses.fields(config) if f.default is not dataclasses.MISSING}


def _whole_shape(case, options: dict) -> dict:
    """The release's options, with every other option of its shape at the protocol's default: a
    scenario written for one release shape is checked with this release's whole shape."""
    defaults = _defaults(case.config)
    shape = load_protocol(case.protocol).shape_options
    return {**{name: defaults[name] for name in shape if name in defaults}, **options}


def _replaced(case, config, shape: dict) -> tuple:
    """(option, the scenario's value, the release's) for each option of the release's whole shape
    that the scenario sets to something other than the protocol's default and the shape replaces."""
    defaults = _defaults(case.config)
    return tuple((name, getattr(case.config, name), getattr(config, name)) for name in shape
                 if getattr(case.config, name) not in (defaults.get(name), getattr(config, name)))


def run_all(rows: list[ReleaseCheck], cache: Path, jobs: int, progress_factory) -> tuple[int, int]:
    """Answer every run of every row: from the verdict cache, else searched (each key once).
    Returns (runs answered from the cache, searches made)."""
    pending: dict[str, list[Run]] = {}
    from_cache = 0
    for row in rows:
        for run in row.runs:
            stored = verdict_cache.read(cache, run.key)
            if stored is not None:
                run.summary, run.cached = stored, True
                from_cache += 1
            else:
                pending.setdefault(run.key, []).append(run)
    tasks = []
    for key, runs in pending.items():
        first = runs[0]
        tasks.append(Task(len(tasks), first.scenario, first.case, first.predicate, first.limits, True))
    if tasks:
        with progress_factory(len(tasks)) as progress:
            results = run_tasks(tasks, jobs, progress)
        for (key, runs), result in zip(pending.items(), results):
            summary = summarize(result)
            verdict_cache.write(cache, key, summary)
            for run in runs:
                run.summary = summary
    return from_cache, len(tasks)


def summarize(result) -> dict:
    """What a row needs of a check: per property the verdict, the trace's length, the reason."""
    return {
        "properties": {
            name: {"verdict": pr.verdict, "steps": len(pr.trace) if pr.trace is not None else None, "reason": pr.reason}
            for name, pr in result.results.items()
        },
        "states": result.stats.states,
        "seconds": round(result.stats.total_seconds, 3),
        "fired": sorted(result.stats.action_counts),  # the step kinds the search took (a conformance check must have replayed each)
    }


def aggregate(runs: list[Run], prop: str) -> PropertyVerdict:
    """The worst verdict of `prop` over the runs; for a violation, the shortest counterexample of a
    case run with the release's default settings (else the shortest of all) and every violating
    case, in that order. No run at all (e.g. no scenario drops an assumption) is NOT APPLICABLE."""
    found = [(run, run.summary["properties"].get(prop)) for run in runs if run.summary]
    found = [(run, v) for run, v in found if v is not None]
    violated = sorted(((v["steps"] or 0, i, run, v) for i, (run, v) in enumerate(found) if v["verdict"] == VIOLATED),
                      key=lambda t: (bool(t[2].settings), t[0], t[1]))
    if violated:
        cases = tuple(Finding(run.case.name, steps, run.command(prop), v["reason"], run.replaced_text(),
                              run.scenario.drops_assumption, consequence(prop, v["reason"]), run.settings)
                      for steps, _, run, v in violated)
        first = cases[0]
        return PropertyVerdict(VIOLATED, first.steps, first.case, first.command, first.reason, first.replaced, cases)
    bounded = [(run, v) for run, v in found if v["verdict"] == BOUNDED]
    if bounded:
        run, v = bounded[0]
        return PropertyVerdict(BOUNDED, case=run.case.name, reason=v["reason"])
    if any(v["verdict"] == VERIFIED for _, v in found):
        return PropertyVerdict(VERIFIED)
    return PropertyVerdict(NOT_APPLICABLE)


def choose_cases(scenarios: list[Scenario], max_ranks: int) -> dict[str, list[tuple[Scenario, int, Case]]]:
    """The cases to run per protocol name: every case with at most `max_ranks` ranks (0: all)."""
    out: dict[str, list] = {}
    for scenario in scenarios:
        protocol = builtin_protocol(scenario.protocol)
        for index, case in enumerate(scenario.cases):
            if max_ranks and case.config.ranks > max_ranks:
                continue
            out.setdefault(protocol, []).append((scenario, index, case))
    return out


from prefetch_check.explorer.report.records import UNJUDGED  # noqa: E402 (the exit status of a tree or property not judged)


def exit_status(rows: list[ReleaseCheck], baseline=None) -> int:
    """1: a verdict of some tree is VIOLATED: of its own predicate on the model, or of its code
    executed (with a `baseline`, baseline.py: only one the baseline does not have); else 3 when
    some tree or property could not be judged (not modelled, not read, no scenarios, a search a
    limit cut: a CI gate must not pass on code nobody checked); else 0 (every verdict VERIFIED or
    not applicable, or failing as in the baseline)."""
    unjudged = False
    for row in rows:
        # a tree whose code diverges from the model: the model's verdicts are withheld (not judged)
        verdicts = [] if row.withheld else [(prop, v.verdict) for prop, v in row.verdicts("own").items()]
        verdicts += [(CODE_PREFIX + prop, v.verdict) for prop, v in row.code.verdicts().items()]
        if row.status == NOT_CHECKED:  # coverage: no verdict of either engine, never the release's
            unjudged = True
            continue
        for prop, verdict in verdicts:
            if verdict not in (VIOLATED, BOUNDED):
                continue
            if baseline is not None and not baseline.is_new(prop, verdict):
                continue
            if verdict == VIOLATED:
                return 1
            unjudged = True
        unjudged = unjudged or row.status not in (CHECKED, NOT_ASKED) or bool(row.code.not_modelled()) or (
            row.status == NOT_ASKED and not row.code.ran) or row.withheld
    return UNJUDGED if unjudged else 0


CODE_PREFIX = "code "  # how a code verdict is named beside the model's (baseline, --commits)
