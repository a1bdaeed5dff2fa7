"""One descriptor per protocol, registered once: what every command needs to know of a protocol.

The shape is stateright's `Model` trait plus its `Checker` builders: the protocol class is the
model (model/interface.py), and a `Descriptor` says, once and beside the protocol's folder,
everything the commands built around the model need: its name in scenario files, the
releases it covers, its scenario parameters and how they become a configuration, its
built-in predicates, its mutant catalogue, which source predicates belong to it, and how a
benchmark row builds its configuration. (How an SGLang tree's shape maps to a protocol's
options is the SGLang face's: prefetch_check/sglang/protocols.py; the model reads no tree.) Scenario
parsing, `prefetch-check sglang`, the mutation run, simulate, census and the testing helpers
loop over `descriptors()` and never name a protocol.

Every field that names code is a "module" or "module:attribute" string, imported on first use:
listing the protocols imports nothing of them (start-up, issue 23).

A new protocol is its folder (protocol class, configuration, scenario parameters, ...) plus a
`descriptor.py` there and one line in `BUILTIN` below; a test registers a protocol of its own
with `register(descriptor)` (and removes it with `unregister(name)`).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Callable, Optional

# the built-in protocols' descriptor modules, the default first (one registration line each)
BUILTIN = (
    "prefetch_check.model.protocols.poll.descriptor",
    "prefetch_check.model.protocols.ack_drain.descriptor",
)


def _attribute(ref: str):
    """The object a "module:attribute" string names (the module itself without ':')."""
    module, _, attr = ref.partition(":")
    loaded = importlib.import_module(module)
    return getattr(loaded, attr) if attr else loaded


@dataclass(frozen=True)
class Descriptor:
    """A protocol, as every command sees it. Fields naming code are imported on first use."""

    name: str  # in scenario files (`protocol = "..."`), on the command line, in reports
    protocol: str  # "module:Class", the `RankProtocol` subclass
    covers: str  # the releases it models, in words ("SGLang 0.5.19 and later")
    scenario: str  # module with GLOBAL, REQUEST, REQUESTS (scenario.schema.Param) and build_config(values, tables, where)
    predicates: str  # module with BUILTIN: predicate name -> function (`buggy`, `fixed`, ...)
    mutants: str = ""  # module with CATALOGUE (mutant classes) and CONFIGS ((name, config) pairs); "": none
    source_rules: str = ""  # "module:function": (collectives, max_reading, wait_accepts) -> (shape, why) or None
    source_shape_option: str = ""  # the config field a source predicate's shape must match ("": any fits)
    uniform: str = ""  # "module:function": (ranks=, requests=, pages=, policy=, **options) -> configuration
    short: str = ""  # how a benchmark row's configuration names it ("ack"); "" for the default
    world: str = ""  # "module:attribute", the executor's WorldPack (model/code/pack.py); "": no world runs its trees

    def protocol_class(self) -> type:
        return _attribute(self.protocol)

    def is_class(self, cls) -> bool:
        """Whether `cls` is this protocol's class itself (read off names: nothing is imported)."""
        module, _, attr = self.protocol.partition(":")
        return cls.__module__ == module and cls.__name__ == attr

    def scenario_params(self):
        return _attribute(self.scenario)

    def builtin_predicates(self) -> dict:
        return _attribute(self.predicates).BUILTIN

    def catalogue(self):
        """(mutant classes, (name, config) pairs): the mutant catalogue and where it runs."""
        if not self.mutants:
            return (), ()
        module = _attribute(self.mutants)
        return module.CATALOGUE, module.CONFIGS

    def assumption_configs(self) -> tuple:
        """(name, config) pairs that drop an upstream assumption (the protocol itself violates a
        property there): where a variant that fixes such a bug shows its repair. Its mutants
        module's ASSUMPTION_CONFIGS, if any."""
        return getattr(_attribute(self.mutants), "ASSUMPTION_CONFIGS", ()) if self.mutants else ()

    def source_membership(self, kinds: set, max_reading: Optional[str], wait_accepts: bool):
        """(shape, why) when a source predicate reaching these collectives belongs here, else None."""
        return _attribute(self.source_rules)(kinds, max_reading, wait_accepts) if self.source_rules else None

    def uniform_config(self) -> Callable:
        return _attribute(self.uniform)

    def world_pack(self):
        """The executor's world of this protocol (model/code/pack.py's WorldPack)."""
        if not self.world:
            raise ValueError(f"the executor has no world for protocol {self.name!r}")
        return _attribute(self.world)

    @property
    def scenario_key(self) -> str:
        """What a scenario file writes to be of this protocol."""
        return f"no protocol key ({self.name})" if self.name == DEFAULT else f'protocol = "{self.name}"'


DEFAULT = "predicate-poll"


class _Registry:
    """The registered descriptors, by name, the built-in ones loaded on first use. The one
    process-wide table of the checker: registering is how a protocol becomes known to every
    command (as Python's codec registry), and a test undoes its own registration."""

    def __init__(self) -> None:
        self._table: Optional[dict] = None
        self.builtin: frozenset = frozenset()

    def table(self) -> dict:
        if self._table is None:
            self._table = {}
            for ref in BUILTIN:
                d = _attribute(ref + ":DESCRIPTOR")
                self._table[d.name] = d
            self.builtin = frozenset(self._table)
        return self._table


_REGISTRY = _Registry()


def register(descriptor: Descriptor) -> Descriptor:
    """Make a protocol known to every command (a name already taken is refused)."""
    table = _REGISTRY.table()
    if descriptor.name in table and table[descriptor.name] != descriptor:
        raise ValueError(f"a protocol named {descriptor.name!r} is already registered")
    table[descriptor.name] = descriptor
    return descriptor


def unregister(name: str) -> None:
    """Forget a protocol registered with `register` (a test's own); the built-in ones stay."""
    table = _REGISTRY.table()
    if name in _REGISTRY.builtin:
        raise ValueError(f"{name!r} is built in")
    table.pop(name, None)


def is_builtin(name: str) -> bool:
    """Whether a protocol is one of BUILTIN's (known to every fresh process without registering)."""
    _REGISTRY.table()
    return name in _REGISTRY.builtin


def descriptors() -> tuple[Descriptor, ...]:
    """Every registered protocol, the default first, then in registration order."""
    return tuple(_REGISTRY.table().values())


def names() -> tuple[str, ...]:
    return tuple(_REGISTRY.table())


def descriptor(name: str) -> Optional[Descriptor]:
    """The descriptor of a registered protocol by name, or None."""
    return _REGISTRY.table().get(name)


def descriptor_of(cls) -> Optional[Descriptor]:
    """The descriptor of the registered protocol `cls` is, or is a variant of (None: neither)."""
    table = descriptors()
    for klass in cls.__mro__:
        for d in table:
            if d.is_class(klass):
                return d
    return None
