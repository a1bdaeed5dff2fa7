"""Stateless model checking over schedules: depth-first over choice prefixes, each run replayed
from scratch in fresh objects; a state (key) already expanded is not expanded again, which is
sound because the key (what every thread observed, plus the stand-ins' contents) determines the
future. VERIFIED needs every prefix explored; a limit makes the verdicts BOUNDED."""

from __future__ import annotations

import resource
import time

from prefetch_check.model.code.config import CodeLimits, CodeResult, Step, Violation
from prefetch_check.model.code.rt.verdicts import not_judged


def explore(executor, limits: CodeLimits) -> CodeResult:
    start = time.monotonic()
    seen: set = set()
    stack: list[list[str]] = [[]]
    runs = 0
    bound = ""
    violations: dict[str, Violation] = {}
    not_modelled: set[str] = set()
    while stack:
        if runs >= limits.max_runs:
            bound = f"{limits.max_runs} runs"
            break
        if time.monotonic() - start > limits.max_seconds:
            bound = f"{limits.max_seconds:g} s"
            break
        prefix = stack.pop()
        out = executor.run(prefix, seen, limits.max_depth, limits.reduce)
        runs += 1
        if out.end == "depth":
            bound = bound or f"runs longer than {limits.max_depth} steps"
        schedule = [n.chosen for n in out.nodes if n.chosen is not None]
        for f in out.faults:
            if f.prop == "not_modelled":
                not_modelled.add(f.message)
                continue
            if f.prop not in violations or len(schedule[: f.step]) < len(violations[f.prop].schedule):
                cut = f.step
                violations[f.prop] = Violation(
                    f.prop, f.message, f.consequence, f.site, schedule[:cut],
                    [Step(s.choice, s.rank, s.site, s.label, s.observed) for s in out.steps[:cut]])
        if limits.stop_on_first and violations:
            bound = "stopped at the first violation"
            break
        if limits.stop_on and all(p in violations for p in limits.stop_on):
            bound = f"stopped once {', '.join(limits.stop_on)} were violated"
            break
        # alternatives at every node this run expanded (those past the replayed prefix), the
        # deepest on top: depth-first
        for depth in range(len(prefix), len(out.nodes)):
            node = out.nodes[depth]
            if node.chosen is None:
                continue
            for alt in reversed(node.enabled):
                if alt != node.chosen:
                    stack.append(schedule[:depth] + [alt])
    exhaustive = not stack and not bound and not not_modelled
    if not_modelled and not bound:
        bound = "a path not modelled"
    verdicts = {}
    world, config = executor.pack, executor.config
    skipped = not_judged(config, world.not_judged(config))
    for p in world.properties:
        if p in violations:
            verdicts[p] = "VIOLATED"
        elif p in skipped:
            verdicts[p] = "NOT JUDGED"
        else:
            verdicts[p] = "VERIFIED" if exhaustive else "BOUNDED"
    return CodeResult(verdicts, violations, runs, len(seen), round(time.monotonic() - start, 3), exhaustive,
                      bound, sorted(not_modelled), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
                      {p: skipped[p] for p in world.properties if p in skipped and p not in violations})
