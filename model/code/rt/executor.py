"""The child-side engine: load the tree once, then run schedules, each in fresh objects.

`run(prefix, seen)` replays `prefix` (a list of thread names), then keeps choosing the first
enabled thread until the run ends, hits a state already in `seen`, or exceeds `max_depth`; it
returns every node it passed (state key, enabled choices, the choice taken) and how it ended.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from prefetch_check.model.code.config import CodeConfig
from prefetch_check.model.code.pack import pack
from prefetch_check.model.code.rt import stubs
from prefetch_check.model.code.stand_ins.torch_stub import make_torch


class _Holder:
    """This run's world and collectives: what the once-loaded torch stand-in forwards to."""

    world = None
    collectives = None

    def all_reduce(self, *args, **kwargs):
        return self.collectives.all_reduce(*args, **kwargs)

    def get_world_size(self, group=None):
        return self.collectives.get_world_size(group)

    def get_rank(self, group=None):
        return self.collectives.get_rank(group)

    def barrier(self, group=None, **kwargs):
        return self.collectives.barrier(group, **kwargs)


@dataclass
class Node:
    key: bytes
    enabled: list[str]
    chosen: Optional[str]


@dataclass
class RunOutcome:
    nodes: list[Node]
    end: str  # terminal, seen, depth
    faults: list  # verdicts.Finding
    steps: list  # scheduler.StepRecord
    not_modelled: list[str] = field(default_factory=list)


class Executor:
    def __init__(self, srt: Path, config: CodeConfig):
        self.srt, self.config = Path(srt).resolve(), config
        self.roots = (str(self.srt) + "/",)
        self.holder = _Holder()
        self.pack = pack(config.world)  # the protocol's world: what to import, which harness
        torch = make_torch(self.holder, stubs.not_modelled_factory(self.roots))
        self.modules = self.pack.load(self.srt, torch, self.holder, self.roots)
        self.run_class = self.pack.run

    def run(self, prefix: list[str], seen: Optional[set], max_depth: int, reduce: bool = True) -> RunOutcome:
        run = self.run_class(self.modules, self.config, self.holder, self.roots)
        closes_cycle = getattr(run, "closes_cycle", None)  # the poll world: a scheduler polling forever
        baton = run.baton
        nodes: list[Node] = []
        ending = ["terminal"]

        def decide():
            depth = len(nodes)
            replaying = depth < len(prefix)
            enabled = [m.name for m in baton.enabled()] if replaying or not reduce else run.ample()
            key = b"" if replaying else hashlib.blake2b(repr(run.key()).encode(), digest_size=16).digest()
            if not enabled:
                nodes.append(Node(key, [], None))
                return None
            if not replaying and closes_cycle is not None and closes_cycle(key):
                nodes.append(Node(key, enabled, None))  # only the schedulers move, and nothing changes:
                return None  # the run ends here, judged as a terminal state (a request that waits forever)
            if replaying:
                choice = prefix[depth]
                if choice not in enabled:
                    raise RuntimeError(f"replay diverged at step {depth}: {choice} not among {enabled}")
            else:
                if seen is not None:
                    if key in seen:
                        nodes.append(Node(key, enabled, None))
                        ending[0] = "seen"
                        return None
                    seen.add(key)
                if depth >= max_depth:
                    nodes.append(Node(key, enabled, None))
                    ending[0] = "depth"
                    return None
                choice = enabled[0]
            nodes.append(Node(key, enabled, choice))
            return next(m for m in baton.threads if m.name == choice)

        try:
            baton.run(decide)
            findings = self.pack.judge(run, ending[0] == "terminal")
        finally:
            baton.abandon()
        nm = sorted({f.message for f in findings if f.prop == "not_modelled"})
        return RunOutcome(nodes, ending[0], findings, baton.steps, nm)
