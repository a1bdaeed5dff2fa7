"""The SGLang side of each protocol, registered once beside the model's descriptor and found by
the protocol's name: which release shapes are its (the `acks` feature), how a shape becomes the
protocol's options, which cache class its executor world runs and what that world needs of a
tree's classes, the cases `prefetch-check sglang --engine code` runs, and whether its model is
compared under the tree's own predicate. Nothing else in prefetch_check/sglang/ names a protocol:
the commands loop over `mappings()` or ask `mapping(name)`.

A new protocol's SGLang side is its folder here (options.py, mapping.py with MAPPING) plus one
line in BUILTIN; a test registers one of its own with `register(mapping)` and removes it with
`unregister(name)`. As the model's registry, the built-in ones are imported on first use.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Callable, Optional

# the built-in protocols' SGLang mappings, in the model registry's order (one registration line each)
BUILTIN = (
    "prefetch_check.sglang.mappings.predicate_poll.mapping",
    "prefetch_check.sglang.mappings.ack_drain.mapping",
)


@dataclass(frozen=True)
class Mapping:
    """One protocol's SGLang side. `release_options(shape) -> ReleaseOptions` settles its options
    from a release's source; `runs(cache, controllers) -> why not` says whether its executor world
    runs a tree whose `judged_class` is `cache` (the classes parsed with ast: code_world.py)."""

    protocol: str  # the registered protocol's name (model/protocols/registry.py)
    acks: str  # the value of the `acks` feature (shape.py) its releases have
    release_options: Callable
    judged_class: str = ""  # the cache class its executor world runs ("": none)
    judged_file: str = ""  # where that class lives, below sglang/srt ("": the HiCache file of its name, locate.CACHE_FILES)
    # other HiCache classes its world runs too (CodeConfig.cache_class; each in the file of its name)
    other_classes: tuple[str, ...] = ()
    runs: Optional[Callable] = None  # (cache ClassDef, {name: controller ClassDef}) -> "" or why not
    cases: tuple = ()  # code_checks.Case: what `prefetch-check sglang` executes on its trees
    own_predicate: bool = False  # its model is compared under the tree's own predicate (else the fixed one)


class _Registry:
    """The registered mappings by protocol name, the built-in ones loaded on first use."""

    def __init__(self) -> None:
        self._table: Optional[dict] = None
        self.builtin: frozenset = frozenset()

    def table(self) -> dict:
        if self._table is None:
            self._table = {}
            for ref in BUILTIN:
                m = getattr(importlib.import_module(ref), "MAPPING")
                self._table[m.protocol] = m
            self.builtin = frozenset(self._table)
        return self._table


_REGISTRY = _Registry()


def register(found: Mapping) -> Mapping:
    """Make a protocol's SGLang side known (a name already taken is refused)."""
    table = _REGISTRY.table()
    if found.protocol in table and table[found.protocol] != found:
        raise ValueError(f"an SGLang mapping for {found.protocol!r} is already registered")
    table[found.protocol] = found
    return found


def unregister(protocol: str) -> None:
    """Forget a mapping registered with `register` (a test's own); the built-in ones stay."""
    table = _REGISTRY.table()
    if protocol in _REGISTRY.builtin:
        raise ValueError(f"{protocol!r} is built in")
    table.pop(protocol, None)


def mappings() -> tuple[Mapping, ...]:
    return tuple(_REGISTRY.table().values())


def mapping(protocol: str) -> Optional[Mapping]:
    """The SGLang side of a registered protocol, or None."""
    return _REGISTRY.table().get(protocol)


def judged_file(found: Mapping, cls: str = "") -> str:
    """The file below sglang/srt holding a mapping's judged class, or `cls` among its other
    classes ("" for none known)."""
    from prefetch_check.sglang.locate import CACHE_FILES

    if cls and cls != found.judged_class:
        return CACHE_FILES.get(cls, "") if cls in found.other_classes else ""
    return found.judged_file or CACHE_FILES.get(found.judged_class, "")


def by_acks(acks: str) -> Optional[Mapping]:
    """The mapping whose releases have this `acks` feature value, or None."""
    return next((m for m in mappings() if m.acks == acks), None)


def conformed(protocol: str) -> bool:
    """Whether a tree of this protocol gets the conformance check: its executor world has a
    conformance side (a refinement mapping)."""
    from prefetch_check.model.protocols.registry import descriptor

    found, d = mapping(protocol), descriptor(protocol)
    return found is not None and d is not None and bool(d.world) and d.world_pack().conformance is not None
