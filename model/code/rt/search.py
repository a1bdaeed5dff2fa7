"""The search loop: executions of the tree's code, one after another, each chosen by a strategy
(strategies/: by default depth-first over choice prefixes with the state cache, which is
stateless model checking), until the strategy has no more or a limit cuts it; the violations
found, each with its shortest schedule. VERIFIED needs an exhaustive strategy that ran out of
executions; a limit, a path not modelled or a sampling strategy makes the verdicts BOUNDED."""

from __future__ import annotations

import dataclasses
import resource
import time

from prefetch_check.explorer.result import BOUNDED, NOT_JUDGED, VERIFIED, VIOLATED
from prefetch_check.model.code.config import Bound, CodeLimits, CodeResult, Step, Violation
from prefetch_check.model.code.rt import caps
from prefetch_check.model.code.rt.verdicts import not_judged


def explore(executor, limits: CodeLimits, strategy=None) -> CodeResult:
    """Search the executor's tree with `strategy` (default: the one `limits` names)."""
    if strategy is None:
        from prefetch_check.model.code.strategies import make

        strategy = make(limits)
    start = time.monotonic()
    runs = 0
    bound = None  # Bound: what cut the search
    violations: dict[str, Violation] = {}
    not_modelled: set[str] = set()
    reached: set[str] = set()  # the scripted events some run took (CodeConfig.scripted_events)
    caps_set = caps.limits()  # the child's RLIMIT_CPU and RLIMIT_AS (none in-process)
    while strategy.more():
        if runs >= limits.max_runs:
            bound = Bound("runs", limits.max_runs)
            break
        if time.monotonic() - start > limits.max_seconds:
            bound = Bound("seconds", limits.max_seconds)
            break
        cap = caps.reached(*caps_set, caps.cpu_seconds(), caps.address_space())
        if cap is not None:
            bound = Bound(*cap)
            break
        strategy.start()
        out = executor.run(strategy)
        runs += 1
        reached |= out.reached
        if out.end == "depth":
            bound = bound or Bound("depth", limits.max_depth)
        schedule = out.schedule
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
            bound = Bound("first")
            break
        if limits.stop_on and all(p in violations for p in limits.stop_on):
            bound = Bound("stopped", list(limits.stop_on))
            break
        strategy.finish(out)
    exhaustive = strategy.exhaustive and not strategy.more() and not bound and not not_modelled
    if not_modelled and not bound:
        bound = Bound("not_modelled")
    if not strategy.exhaustive:  # a sample says so, whatever else cut it
        bound = Bound("sampled", [strategy.describe(), bound.value if bound else None], bound.kind if bound else "")
    verdicts = {}
    world, config = executor.pack, executor.config
    skipped = not_judged(config, world.not_judged(config))
    for p in world.properties:
        if p in violations:
            verdicts[p] = VIOLATED
        elif p in skipped:
            verdicts[p] = NOT_JUDGED
        else:
            verdicts[p] = VERIFIED if exhaustive else BOUNDED
    return CodeResult(verdicts, violations, runs, strategy.states, round(time.monotonic() - start, 3), exhaustive,
                      bound.text(runs) if bound else "", sorted(not_modelled),
                      resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
                      not_judged={p: skipped[p] for p in world.properties if p in skipped and p not in violations},
                      limit=dataclasses.asdict(bound) if bound else None,
                      unreached=unreached(config, reached, exhaustive, runs))


def unreached(config, reached: set[str], exhaustive: bool, runs: int) -> list[str]:
    """The configuration's scripted events no run took: what its verdicts say nothing of."""
    where = "in no schedule" if exhaustive else f"in none of the {runs} runs made"
    return [f"{what} happens {where}: the verdicts say nothing of it"
            for name, what in config.scripted_events().items() if name not in reached]
