"""The one object the stand-ins of a run share: the baton, the objects whose contents make up
the state key, the labels of the operations, and the faults the stand-ins saw."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Optional


@dataclass
class Fault:
    """A property violation a stand-in saw at the moment it happened."""

    prop: str
    message: str
    consequence: str
    site: str
    step: int


class Strict:
    """A stand-in whose missing attributes are not modelled (never an AttributeError the code
    under test could take for its own bug, or catch)."""

    _pc_what = "stand-in"

    def __getattr__(self, name: str):
        if name.startswith("__") or name.startswith("_pc"):
            raise AttributeError(name)
        from prefetch_check.model.code.stand_ins.errors import NotModelled, caller_site

        raise NotModelled(f"{self._pc_what}.{name}", caller_site(self.__dict__["world"].baton.roots))


@dataclass
class World:
    baton: Any  # rt.baton.Baton
    parts: list = field(default_factory=list)  # objects with .snapshot() -> hashable
    faults: list[Fault] = field(default_factory=list)
    labels: dict[int, str] = field(default_factory=dict)  # id(object) -> stable label
    counters: dict[str, int] = field(default_factory=dict)
    draining: dict = field(default_factory=dict)  # rank -> the operation its drain last took (identity.py)
    # rank -> whether its scheduler's drain may wait in a blocking get by design (the ack-drain world
    # sets it: PP stages after the first take the first stage's counts); None: not judged
    drain_may_block: Optional[Callable[[int], bool]] = None
    starts_threads: bool = False  # the code under test may start threads (stand_ins/threads.py; the cache's reset)
    stop_events: dict = field(default_factory=dict)  # rank -> the Event that ends its threads' timed gets (the reset)

    def register(self, part) -> None:
        self.baton.touch("world.parts")  # the order of the parts is the order of the state key's
        self.parts.append(part)

    def label(self, obj: Any) -> str:
        """A stable description of a value a thread observes or a queue holds."""
        if obj is None or isinstance(obj, (int, str, bool, float)):
            return repr(obj)
        known = self.labels.get(id(obj))
        if known is not None:
            return known
        describe: Optional[Callable] = getattr(type(obj), "_pc_describe", None)
        if describe is not None:
            return describe(obj, self)
        if isinstance(obj, (list, tuple)):
            return "[" + ",".join(self.label(x) for x in obj) + "]"
        data = getattr(obj, "data", None)
        if isinstance(data, list):
            return repr(data)
        return type(obj).__name__

    def name_object(self, obj: Any, prefix: str) -> str:
        self.baton.touch("names:" + prefix)  # the next name of this prefix depends on who came first
        n = self.counters.get(prefix, 0)
        self.counters[prefix] = n + 1
        name = f"{prefix}{n}"
        self.labels[id(obj)] = name
        return name

    def fault(self, prop: str, message: str, consequence: str, site: str) -> None:
        self.faults.append(Fault(prop, message, consequence, site, len(self.baton.steps)))

    def not_modelled(self, callee: str):
        """The exception for a call the model does not cover, carrying the caller's file:line."""
        from prefetch_check.model.code.stand_ins.errors import NotModelled, caller_site

        return NotModelled(callee, caller_site(self.baton.roots, skip=3))

    def snapshot(self) -> tuple:
        return tuple(p.snapshot() for p in self.parts)
