"""The whole contract between a model and the explorer.

The explorer never imports a protocol: it sees states and actions as opaque hashable
values and learns everything else through `Model`. Properties are plain values built
by the constructors below; adding one never touches a search strategy.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Hashable, Optional, Protocol, Sequence

ALWAYS = "always"  # state invariant: check(state) -> None or a reason
ALWAYS_STEP = "always_step"  # transition invariant: check(state, action, next) -> None or a reason
EVENTUALLY = "eventually"  # progress: pending(state) -> None or what is still unresolved
DEADLOCK_FREE = "deadlock_free"  # no reachable state without a successor


@dataclass(frozen=True)
class Property:
    name: str
    kind: str
    check: Optional[Callable] = None
    description: str = ""
    not_applicable: Optional[str] = None  # reason why the property says nothing here
    concerns: Optional[Callable] = None  # step invariants: action -> whether it is judged (None: all)

    @property
    def is_safety(self) -> bool:
        return self.kind in (ALWAYS, ALWAYS_STEP, DEADLOCK_FREE)


def always(name: str, check: Callable, description: str = "", not_applicable: str | None = None) -> Property:
    return Property(name, ALWAYS, check, description, not_applicable)


def always_step(
    name: str, check: Callable, description: str = "", not_applicable: str | None = None, concerns: Callable | None = None
) -> Property:
    """An invariant of steps; `concerns(action)` lets the search skip steps it never judges."""
    return Property(name, ALWAYS_STEP, check, description, not_applicable, concerns)


def eventually(name: str, pending: Callable, description: str = "", not_applicable: str | None = None) -> Property:
    """Every behaviour that is weakly fair to every actor leaves the pending states for good."""
    return Property(name, EVENTUALLY, pending, description, not_applicable)


def deadlock_free(name: str, description: str = "") -> Property:
    return Property(name, DEADLOCK_FREE, None, description)


class Model(Protocol):
    """What the explorer needs from a model. States and actions are hashable values."""

    def initial_states(self) -> Sequence[Hashable]:
        """The states a behaviour may start in."""

    def successors(self, state) -> list[tuple[Hashable, Hashable]]:
        """Every enabled (action, next state), in a fixed order (determinism)."""

    def properties(self) -> Sequence[Property]:
        """The properties to judge; each gets its own verdict."""

    def actor(self, action) -> Hashable:
        """Who takes the action: weak fairness is per actor."""

    def action_id(self, action) -> str:
        """Stable text naming the action in a schedule string."""

    def action_kind(self, action) -> str:
        """The class of the action, for statistics (e.g. `S.check`)."""

    def action_kinds(self) -> Sequence[str]:
        """Every class the model can take (those that never fire are reported)."""

    def describe(self, state, action, next_state) -> str:
        """The step in the domain's words, for traces."""



# ---- optional members ----------------------------------------------------------------------


@dataclass(frozen=True)
class Hooks:
    """The optional members a model may define, resolved in this one place (None: not defined).

    actors() -> Sequence[Hashable]
        every actor, in a fixed order; an `expand` function may then report the enabled actors
        of a state as an int bitmask (bit i: actors()[i]) instead of a list of actions.
    property_key(state) -> Hashable
        a value that determines the answer of every ALWAYS and EVENTUALLY property: the search
        then judges each distinct key once (many states share their properties' inputs).
    settled(state) -> bool
        True when no step from here on can change the answer of any safety property (e.g. every
        thread idle and only an event loop going round): a sampled run (`walk.py`) stops there and
        the census (`census.py`) treats the state as absorbing. Leaving it out is always sound.
    fields(state) -> dict
        a flat readable view of a state (name -> value), for viewers and diffs.
    thread_names: dict
        for actors that are (group, name) pairs: name -> a readable name (e.g. "W" -> "writer"), for viewers.
    group_name: str
        for actors that are (group, name) pairs: what a group is called (e.g. "node"), for viewers.
    state_codec() -> codec
        how states cross between the processes of one search (`parallel.py`): states are tuples of
        `codec.width` ints naming values each process numbers for itself; `codec.news()` the values
        new since the last call, `codec.learn(sender, news)` -> table sender int -> own int,
        `codec.group_key(state)` a 64-bit hash equal in every process and run, and equal for
        states with equal `property_key` (one process owns them all, so each key is judged
        once). Without it a search runs in one process.
    """

    actors: Optional[Callable] = None
    property_key: Optional[Callable] = None
    settled: Optional[Callable] = None
    fields: Optional[Callable] = None
    thread_names: Optional[dict] = None
    group_name: Optional[str] = None
    state_codec: Optional[Callable] = None


def hooks(model) -> Hooks:
    """The optional members `model` defines."""
    return Hooks(*(getattr(model, name, None) for name in Hooks.__dataclass_fields__))
