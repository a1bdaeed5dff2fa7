"""Whether a tree's code conforms to the model, for `prefetch-check sglang`.

Why: the model may answer for a tree only where its code has been shown to do what the model
does (issue 22). For each tree the executor runs (the ack-drain UnifiedRadixCache of 0.5.19 on,
the predicate-poll HiRadixCache of 0.5.1-0.5.18, each with its protocol's budget), the conformance
check (prefetch_check.model.code.conformance.check, in the executor's sandboxed child) replays model
schedules on the tree's own code: the counterexamples of the chosen scenario cases the
executor's world can build, and every step between the reachable states of a few small
configurations up to a budget. A tree that diverges gets the divergence and its code's verdicts
only: its model verdicts are withheld. Results are cached like the code's, keyed by the
executor's sources, the tree's files and the configurations.
"""

from __future__ import annotations

import hashlib
import json
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Optional

from prefetch_check.model.code import CodeLimits, ExecutorError
from prefetch_check.model.code.pack import pack
from prefetch_check.model.code.runner import conform_traced
from prefetch_check.model.code.rt.tracer import merged
from prefetch_check.sglang import verdict_cache
from prefetch_check.sglang.code_checks import executor_fingerprint, tree_digest
from prefetch_check.sglang.mappings import mapping

FOLDER = "conformance"
LIMITS = CodeLimits(max_seconds=300)
__all__ = ["ConformanceCheck", "plan_conformance", "run_conformance"]


@dataclass
class ConformanceCheck:
    """The conformance check of one tree: what it replays, and its answer."""

    key: str = ""
    items: list = field(default_factory=list)  # the child's configurations
    skipped: list = field(default_factory=list)  # (case, why the executor cannot build it)
    answers: Optional[list] = None
    protocol: str = ""  # the protocol whose world the tree's code runs in, and whose model it is compared with
    cached: bool = False
    error: str = ""
    note: str = ""  # why there is no check
    count: dict = field(default_factory=dict)  # coverage: file -> spans whose runs the child counts (changed.py)
    coverage: Optional[dict] = None  # coverage: the lines of the tree its replays ran (coverage_tracer.py)

    @property
    def planned(self) -> bool:
        return bool(self.items)

    @property
    def divergence(self) -> Optional[dict]:
        for a in self.answers or []:
            if a.get("divergence"):
                return {"case": a["name"], **a["divergence"]}
        return None

    @property
    def conforms(self) -> Optional[bool]:
        """True: every replay matched; False: a divergence; None: not run, not modelled or failed."""
        if self.answers is None or self.error:
            return None
        if self.divergence is not None:
            return False
        if any(a.get("not_modelled") for a in self.answers):
            return None
        return True

    def figures(self) -> dict:
        answers = self.answers or []
        return {"schedules": sum(a["schedules"] for a in answers), "states": sum(a["states"] for a in answers),
                "seconds": round(sum(a["seconds"] for a in answers), 3),
                "counterexamples": sum(a["counterexamples"] for a in answers)}

    def not_modelled(self) -> list[str]:
        return sorted({a["not_modelled"] for a in self.answers or [] if a.get("not_modelled")})

    def budget_summary(self) -> str:
        """The budget in a few words: the configurations searched and the cases replayed."""
        searched = [i for i in self.items if i["budget"] and i.get("cover") != "runs"]
        runs = [i for i in self.items if i["budget"] and i.get("cover") == "runs"]
        cases = len(self.items) - len(searched) - len(runs)
        near = sorted({i["near"] for i in searched})
        span = f"{near[0]:,}" if len(near) == 1 else f"{near[0]:,}-{near[-1]:,}"
        whole = f", {len(runs)} configuration(s) of a few whole runs" if runs else ""
        return (f"{len(searched)} configurations, each rank-local state of up to {max(i['budget'] for i in searched):,} "
                f"and every step out of the first {span}{whole}, and the counterexamples of {cases} scenario case(s)"
                if searched else f"the counterexamples of {cases} scenario case(s)")

    def budget_text(self) -> str:
        """What the check rests on: per configuration, its budget."""
        def one(i) -> str:
            if not i["budget"]:
                return "its counterexamples"
            if i.get("cover") == "runs":
                return f"up to {i['budget']:,} whole runs, each thread preferred in turn"
            return (f"every rank-local view up to {i['budget']:,} states, every step out of the first {i['near']:,}"
                    + (" and out of every new view of all ranks" if i.get("cover") == "steps" else ""))
        return "; ".join(f"{i['name']}: {one(i)}" for i in self.items)


def plan_conformance(srt, options: dict, cases: list[tuple[str, object]], protocol: str,
                     predicate: str = "", count: Optional[dict] = None) -> ConformanceCheck:
    """The conformance check of a tree under the release's `options`: the budget configurations
    of its protocol (its world pack's conformance kit) and the counterexamples of `cases` (name,
    model configuration with the options applied) the executor's world can build. The model runs
    under the tree's own predicate where the protocol's mapping says so (`predicate`:
    "FILE.py:Class.method" below srt; 0.5.1-0.5.1.post2's is not the fixed one), else under the
    fixed one."""
    kit = pack(protocol).conformance
    tag = {"protocol": protocol, **({"predicate": predicate} if mapping(protocol).own_predicate else {})}
    items, skipped = [], []
    for b in kit.budgets:
        cfg = kit.budget_config(b, options)
        why = kit.unsupported(cfg)
        if why:
            skipped.append((b.name, why))
            continue
        items.append({"name": b.name, "config": kit.config_to_json(cfg), "budget": b.states, "near": b.near,
                      "cover": b.cover, "counterexamples": getattr(b, "counterexamples", True), **tag})
    for name, cfg in cases:
        why = kit.unsupported(cfg) or ("more than 2 ranks" if cfg.ranks > 2 else "")
        if why:
            skipped.append((name, why))
            continue
        items.append({"name": name, "config": kit.config_to_json(cfg), "budget": 0, "counterexamples": True, **tag})
    if not items:  # nothing the executor's world can replay: say why, once per reason
        why = "; ".join(dict.fromkeys(w for _, w in skipped)) or "no configuration to replay"
        return ConformanceCheck(skipped=skipped, protocol=protocol, note=f"no conformance check: {why}")
    parts = [executor_fingerprint(), tree_digest(srt, pack(protocol).files + pack(protocol).read), items, LIMITS.to_json(), protocol]
    text = json.dumps(parts + ([count] if count else []), sort_keys=True)  # coverage: the spans counted
    return ConformanceCheck(hashlib.sha256(text.encode()).hexdigest(), items, skipped, protocol=protocol,
                            count=dict(count or {}))


CHUNK = 4  # configurations per child, at most


def _chunks(items: list) -> list[list]:
    """The configurations dealt round-robin over ceil(n / CHUNK) children: the costly ones (the
    two-rank and timeout budgets, listed last) land in different children."""
    n = max(1, -(-len(items) // CHUNK))
    return [items[j::n] for j in range(n)]


def _in_order(parts: list[list]) -> list:
    """The children's answers back in the planned order (undoes `_chunks`)."""
    n, out = len(parts), [None] * sum(len(p) for p in parts)
    for j, part in enumerate(parts):
        out[j::n] = part
    return out


def run_conformance(checks: list[tuple[object, ConformanceCheck]], cache, jobs: int) -> tuple[int, int]:
    """Answer every planned check: from the cache, else in the executor's children, at most
    `CHUNK` configurations a child, dealt round-robin, `jobs` children at a time. Each child has
    the executor's wall limit: one child for them all ran past it under the coverage tracer
    (0.5.23's 13 budgets alone take 225 s traced on an idle core, and the command adds the
    scenarios' counterexamples); a child per configuration pays the tree's load that many times.
    Returns (from the cache, executed)."""
    todo = []
    cached = 0
    for srt, check in checks:
        stored = verdict_cache.read(cache, check.key, FOLDER)
        if stored is not None:
            check.answers, check.cached, check.coverage = stored["answers"], True, stored.get("coverage")
            cached += 1
        else:
            todo.append((srt, check))

    def execute(task):
        srt, check, items = task
        try:
            return conform_traced(srt, items, LIMITS, {"count": check.count})
        except ExecutorError as exc:
            return exc

    chunks = {id(check): _chunks(check.items) for _, check in todo}
    tasks = [(srt, check, items) for srt, check in todo for items in chunks[id(check)]]
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        results = iter(list(pool.map(execute, tasks)))
    for srt, check in todo:
        mine = [next(results) for _ in chunks[id(check)]]
        failed = next((r for r in mine if isinstance(r, ExecutorError)), None)
        if failed is not None:
            check.error = f"the conformance check could not run: {str(failed).splitlines()[0]}"
            continue
        check.answers = _in_order([answers for answers, _ in mine])
        check.coverage = merged([cov for _, cov in mine])
        verdict_cache.store(cache, check.key, {"answers": check.answers, "coverage": check.coverage}, FOLDER)
    return cached, len(todo)
