"""A world pack: everything the executor needs of one protocol's world, registered once on the
protocol's descriptor (`Descriptor.world`, a "module:attribute" string naming a `WorldPack`).

The engine (rt/), the strategies and the conformance loop never name a protocol: they ask the
pack of `CodeConfig.world` (the protocol's name in the registry) for what to import from the
tree, which harness to build a run with, what the world cannot judge and how its conformance
check is run. A new world is its folder (harness, probes, its own stand-ins, its conformance
run) plus a `pack.py` there and the one `world=` line on its descriptor (docs/executor.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Optional

from prefetch_check.model.code.rt import verdicts


PREFETCH_THREADS = {"S": "S", "P": "P", "I": "IO", "Y": "Y"}  # the prefetch path's model threads -> the code's


class Unsupported(ValueError):
    """A model configuration the executor's world cannot build."""


@dataclass(frozen=True)
class ConformanceKit:
    """What the one replay loop (conformance/check.py) needs of a protocol: its refinement
    mapping (model_view, model_rank_view, code_view), how a conformance run of a model protocol
    is built on the executor, the fields one model step may change and change back, its model
    configurations as JSON and what the world cannot build of them, the model's class (a mutant
    by name), and the budget `prefetch-check sglang` replays (with how a budget takes a
    release's options)."""

    refinement: object  # module with model_view, model_rank_view, code_view
    make_run: Callable  # (executor, protocol) -> a run with a baton
    in_transit: Callable  # (action, field) -> bool
    config_to_json: Callable
    config_from_json: Callable
    unsupported: Callable  # (model config) -> "" or what the world lacks
    protocol_class: Callable  # (mutant name or "") -> the model's class
    budgets: tuple = ()  # Budget per configuration (the world's conformance_configs.BUDGETS)
    budget_config: Optional[Callable] = None  # (budget, release options) -> model config
    release_batch_size: int = 0  # the releases' STORAGE_BATCH_SIZE: a configuration with another replaces the tree's (0: none)
    code_threads: dict = field(default_factory=lambda: dict(PREFETCH_THREADS))  # model thread letter -> code thread


@dataclass(frozen=True)
class WorldPack:
    """One protocol's world. `load(srt, torch, holder, roots) -> {rel: module}` imports the tree's
    `files` (below sglang/srt) under the stubs and installs the world's probes once per child;
    `run(modules, config, holder, roots)` builds one run (a fresh world, ranks and threads: the
    harness, with `baton`, `key()`, `ample()`, optionally `closes_cycle(key)`); `not_judged(config)`
    says which properties this world cannot judge in that configuration, beyond what no world
    judges there (rt/verdicts.not_judged); `bench` the configurations of the executor's bench."""

    protocol: str  # the protocol's name in the registry (model/protocols/registry.py)
    files: tuple[str, ...]  # the tree's files it runs as written, below sglang/srt
    load: Callable
    run: type
    not_judged: Callable = lambda config: {}
    conformance: Optional[ConformanceKit] = None
    bench: tuple = ()  # (name, CodeConfig) pairs: python -m prefetch_check.model.code.bench --world NAME
    properties: tuple[str, ...] = verdicts.PROPERTIES  # what a run is judged for, in report order
    judge: Callable = verdicts.judge  # (run, terminal) -> [Finding]
    read: tuple[str, ...] = ()  # files the world reads from the tree without importing them (the retry world's scheduler methods): in the cache keys
    imports: Optional[Callable] = None  # (srt, torch, roots) -> {rel: module}: `files` imported, nothing hooked (unit-level scripts)
    optional: tuple[str, ...] = ()  # of `files`, those only some configurations run: a tree without them is no partial copy


def pack(protocol: str) -> WorldPack:
    """The world pack of a registered protocol, or ValueError saying which protocols have one."""
    from prefetch_check.model.protocols.registry import descriptor

    found = descriptor(protocol)
    if found is None or not found.world:
        raise ValueError(f"world {protocol!r}: the executor has {', '.join(worlds())}")
    return found.world_pack()


def worlds() -> tuple[str, ...]:
    """The registered protocols the executor has a world for (nothing of them is imported)."""
    from prefetch_check.model.protocols.registry import descriptors

    return tuple(d.name for d in descriptors() if d.world)
