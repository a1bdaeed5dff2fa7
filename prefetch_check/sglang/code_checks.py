"""The verdicts of a tree's own code, beside the model's: the executor run on each SGLang tree.

Why: the model answers only for trees whose prefetch path is a followed release's (the
honest floor, followed.py), so an edited tree used to get no verdict at all. The executor
(prefetch_check.model.code, docs/executor.md) runs the tree's own prefetch functions under
every schedule of a few small deployments, with stand-ins for the world, in a sandboxed
child process; what it finds is about the code as written, edited or not. It runs each
protocol's world (the ack-drain UnifiedRadixCache of 0.5.19 on, the predicate-poll HiRadixCache
of 0.5.1-0.5.18), chosen by the classes and threads the tree has (code_world.py); other trees
say why they get no code verdicts.

Each case is one executor configuration (its protocol's mapping lists them: mappings/): ranks x requests, what storage holds and
fails, prefetching again, aborts. Per property the report shows the worst verdict over the cases
and, for a violation, the shortest counterexample: its case, its length in steps, the file:line
where it is decided, and its consequence. Results are cached like the model's, keyed by the
executor's own code, the bytes of every file the child loads from the tree, the case and the
limits; a search the clock cut is never stored (any other bound is deterministic).
"""

from __future__ import annotations

import hashlib
import json
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import Callable, Optional

import prefetch_check.model.code as executor_package
from prefetch_check.explorer.result import BOUNDED, NOT_JUDGED, VERIFIED, VIOLATED
from prefetch_check.model.code import CodeConfig, CodeLimits, ExecutorError, check_tree
from prefetch_check.model.code.config import Bound
from prefetch_check.model.code.pack import pack
from prefetch_check.model.code.rt.loader import module_name
from prefetch_check.sglang import verdict_cache
from prefetch_check.sglang.code_world import own_class, world_of
from prefetch_check.sglang.mappings import mapping

FOLDER = "code-verdicts"
LIMITS = CodeLimits(max_seconds=120)


def needs(file: str, marker: str, why: str) -> Callable[[Path], str]:
    """A Case.skip: the tree gets the case only where its `file` (below sglang/srt) holds `marker`,
    the shape the case's world models; else `why` (or that the file is missing)."""
    def skip(srt: Path) -> str:
        path = Path(srt) / file
        if not path.is_file():
            return f"the tree has no {file}"
        return "" if marker in path.read_text(encoding="utf-8", errors="replace") else why
    return skip


@dataclass(frozen=True)
class Case:
    """One executor configuration every run of `prefetch-check sglang` executes; `judges` names
    the properties it is run for (empty: all), with `limits` cut to them."""

    name: str
    config: CodeConfig
    judges: tuple[str, ...] = ()
    limits: CodeLimits = LIMITS
    skip: Optional[Callable[[Path], str]] = None  # (srt) -> why this tree does not get the case, "" when it does


WORST = {VIOLATED: 0, BOUNDED: 1, VERIFIED: 2, NOT_JUDGED: 3}


@dataclass
class CodeRun:
    """One case of the executor on one tree."""

    key: str
    case: str
    config: CodeConfig
    limits: CodeLimits = LIMITS
    judges: tuple[str, ...] = ()  # the properties this case is run for (empty: all)
    result: Optional[dict] = None  # CodeResult.to_json()
    cached: bool = False
    error: str = ""  # the executor could not run the tree at all
    count: dict = field(default_factory=dict)  # coverage: file -> spans whose runs the child counts (changed.py)

    def verdict_of(self, prop: str) -> str:
        if self.judges and prop not in self.judges:
            return NOT_JUDGED
        return (self.result or {}).get("verdicts", {}).get(prop, NOT_JUDGED)


@dataclass(frozen=True)
class CodeVerdict:
    """A property over the cases: the worst verdict, and for a violation the shortest counterexample."""

    verdict: str
    case: str = ""
    steps: Optional[int] = None
    site: str = ""
    reason: str = ""
    consequence: str = ""
    schedule: tuple[str, ...] = ()


@dataclass
class CodeCheck:
    """The executor's part of a tree's row: its runs, or why it has none."""

    runs: list[CodeRun] = field(default_factory=list)
    note: str = ""  # why the executor did not run (another protocol, a class it does not run)
    withheld: str = ""  # coverage: why its verdicts are not given (a changed statement no case ran)

    @property
    def ran(self) -> bool:
        return bool(self.runs)

    def not_modelled(self) -> list[str]:
        """What the code called that is neither prefetch-path code nor a stand-in, once each."""
        seen = []
        for run in self.runs:
            for text in (run.result or {}).get("not_modelled", []) + ([run.error] if run.error else []):
                if text not in seen:
                    seen.append(text)
        return seen

    def verdicts(self) -> dict[str, CodeVerdict]:
        """Per property, the worst verdict over the cases (a case that could not run: BOUNDED)."""
        if self.withheld:  # coverage: code it did not run gets no verdict (coverage_report.py)
            return {}
        names: list[str] = []
        for run in self.runs:
            for name in (run.result or {}).get("verdicts", {}):
                if name not in names:
                    names.append(name)
        out = {}
        for name in names:
            found = []
            for order, run in enumerate(self.runs):
                if run.judges and name not in run.judges:
                    continue
                if run.result is None:
                    found.append((WORST[BOUNDED], 0, order, CodeVerdict(BOUNDED, run.case, reason=run.error)))
                    continue
                verdict = run.verdict_of(name)
                violation = run.result["violations"].get(name)
                if verdict == VIOLATED and violation:
                    found.append((WORST[VIOLATED], len(violation["schedule"]), order, CodeVerdict(
                        VIOLATED, run.case, len(violation["schedule"]), violation["site"], violation["message"],
                        violation["consequence"], tuple(violation["schedule"]))))
                elif verdict == BOUNDED:
                    found.append((WORST[BOUNDED], 0, order, CodeVerdict(BOUNDED, run.case, reason=run.result["bound"])))
                else:
                    found.append((WORST.get(verdict, WORST[NOT_JUDGED]), 0, order, CodeVerdict(verdict)))
            out[name] = min(found, key=lambda t: t[:3])[3] if found else CodeVerdict(NOT_JUDGED)
        return out


def judged_of(srt: Path, shape) -> Optional[str]:
    """The class the tree's row judges: the detector's, else one a mapping names the file of."""
    judged = shape.judged_class.value if shape is not None else None
    return judged or own_class(srt)


def world_for(srt: Path, shape) -> tuple[Optional[str], str]:
    """The protocol whose executor world runs this tree's judged class (code_world.py), or why
    there is none. A tree the detector finds no class in may hold a class a mapping names the
    file of (`own_class`)."""
    judged = judged_of(srt, shape)
    if judged is None:
        return None, "the executor needs the cache class to run (none found)"
    world, why = world_of(srt, judged)
    if world is not None:
        found = pack(world)
        why = missing_module(srt, tuple(rel for rel in found.files if rel not in found.optional))
    return (world if not why else None), why


def missing_module(srt: Path, files: tuple[str, ...]) -> str:
    """Why not, when a file the executor runs as written (`files`, its world's) is missing although
    the tree imports it (a stub would stand in for code that exists upstream: a partial copy, not
    a release)."""
    present = {rel: (srt / rel).read_text(encoding="utf-8", errors="replace") for rel in files if (srt / rel).is_file()}
    for rel in files:
        if rel in present:
            continue
        importers = [other for other, text in present.items() if module_name(rel) in text]
        if importers:
            return f"the tree has no {rel}, which {importers[0]} imports: its code cannot run as written"
    return ""


@lru_cache(maxsize=None)
def executor_fingerprint(world: str = "") -> str:
    """A digest of the executor's own sources, and of `world`'s pack folder when it lives outside
    them (a protocol registered from elsewhere): an edited executor or world never reads stale results."""
    digest = hashlib.sha256()
    root = Path(executor_package.__file__).parent
    folders = [root]
    if world:
        own = Path(sys.modules[pack(world).load.__module__].__file__).resolve().parent
        folders += [] if own.is_relative_to(root.resolve()) else [own]
    for folder in folders:
        for path in sorted(folder.rglob("*.py")):
            digest.update(path.relative_to(folder).as_posix().encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def tree_digest(srt: Path, files: tuple[str, ...]) -> str:
    """A digest of every file the child may load from the tree (absent ones count as absent)."""
    digest = hashlib.sha256()
    for rel in files:
        path = srt / rel
        digest.update(rel.encode() + b"\0")
        digest.update(path.read_bytes() if path.is_file() else b"-")
    return digest.hexdigest()


def plan_code(srt: Path, shape, count: Optional[dict] = None) -> CodeCheck:
    """The executor's runs for one tree (not run yet), or why there are none. `count`: the spans
    of lines whose runs the child counts (coverage: the statements an edit changed, changed.py)."""
    world, why = world_for(srt, shape)
    if why:
        return CodeCheck(note=why)
    tree = tree_digest(srt, pack(world).files + pack(world).read)
    runs = []
    found, judged = mapping(world), judged_of(srt, shape)
    for case in found.cases:
        if case.skip is not None and case.skip(srt):
            continue
        config = case.config if judged == found.judged_class else _for_class(case.config, judged)
        if config is None:  # a case of a world the other class has no place in (buffer_only, retries)
            continue
        parts = [executor_fingerprint(world), tree, config.to_json(), case.limits.to_json()] + ([count] if count else [])
        text = json.dumps(parts, sort_keys=True)
        runs.append(CodeRun(hashlib.sha256(text.encode()).hexdigest(), case.name, config, case.limits,
                            case.judges, count=dict(count or {})))
    return CodeCheck(runs)


def _for_class(config: CodeConfig, cls: str) -> Optional[CodeConfig]:
    """A case's configuration run on another class of its world (Mapping.other_classes), or None
    where that class has no place for it (CodeConfig says why)."""
    try:
        return replace(config, cache_class=cls)
    except ValueError:
        return None


def run_code(checks: list[tuple[Path, CodeCheck]], cache: Path, jobs: int, progress=None) -> tuple[int, int]:
    """Answer every executor run: from the cache, else in a child process (`jobs` at a time; each
    child is its own process, so threads suffice here). Returns (from the cache, executed)."""
    pending: dict[str, list[tuple[Path, CodeRun]]] = {}
    from_cache = 0
    for srt, check in checks:
        for run in check.runs:
            stored = verdict_cache.read(cache, run.key, FOLDER)
            if stored is not None:
                run.result, run.cached = stored, True
                from_cache += 1
            else:
                pending.setdefault(run.key, []).append((srt, run))

    failed: dict[Path, str] = {}  # a tree its child could not load: the rest of its cases are not tried

    def execute(entries):
        srt, first = entries[0]
        if srt in failed:
            result, error = None, failed[srt]
        else:
            try:
                # coverage: every check traces the lines it runs (coverage_tracer.py)
                result, error = check_tree(srt, first.config, first.limits, {"count": first.count}).to_json(), ""
            except ExecutorError as exc:
                result, error = None, f"the executor could not run it: {str(exc).splitlines()[0]}"
                failed[srt] = error
        for _, run in entries:
            run.result, run.error = result, error
        if result is not None and (result["exhaustive"] or _deterministic_bound(first, result)):
            verdict_cache.store(cache, first.key, result, FOLDER)
        if progress is not None:
            progress()

    by_tree: dict[Path, list] = {}
    for entries in pending.values():
        by_tree.setdefault(entries[0][0], []).append(entries)

    # each tree's first case alone (a tree that does not load fails it, and its other cases are not
    # tried), then every other case `jobs` at a time: one tree's cases used to run one after another,
    # so a user's one tree had one core whatever -j said
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        list(pool.map(execute, [groups[0] for groups in by_tree.values()]))
        list(pool.map(execute, [entries for groups in by_tree.values() for entries in groups[1:]]))
    return from_cache, len(pending)


def _deterministic_bound(run: CodeRun, result: dict) -> bool:
    """A search cut by something other than the clock may be stored: the search is deterministic,
    so the same key gives the same result. At the violation it was run for, at its number of
    runs, at a path not modelled (the search goes on past it, without VERIFIED), at its depth."""
    cut = Bound(**result["limit"]) if result.get("limit") else None
    if cut is not None and cut.kind in ("runs", "not_modelled", "depth"):
        return True
    return bool(run.limits.stop_on) and all(result["verdicts"].get(p) == VIOLATED for p in run.limits.stop_on)
