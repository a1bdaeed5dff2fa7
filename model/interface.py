"""What a protocol declares so that the engine can search it: the contract of every protocol version.

In the spirit of stateright's `Model`, but per rank: ranks run the same threads and meet
only in collectives, so the unit a protocol writes is one rank's local step: what one
thread of one rank does, given that rank's state (and the results of the collectives it
takes part in, which the engine has written into the rank's registers). The engine
(`model/engine/`) builds the global model from it: it interleaves the ranks, completes
the collectives (in one place), judges the properties, and reduces the search (rank
symmetry, partial-order reduction) with the facts the protocol declares here.

A protocol is a subclass of `RankProtocol`; a variant (a suspected bug, a change about to
be merged) is a small subclass of a protocol that overrides one step or hook, and may add
properties. Each step kind's description lives beside the step (`@formats`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, ClassVar, Hashable, NamedTuple, Optional

from prefetch_check.explorer.interface import ALWAYS, ALWAYS_STEP, DEADLOCK_FREE, EVENTUALLY

# ---- collectives ------------------------------------------------------------------------
# A rank's register of a collective group is () outside a collective, (tag, WAITING, value)
# after the rank arrived, and (tag, DONE, result) once every rank arrived. A tag is
# (kind, subject): `kind` names a declared `Collective`, `subject` e.g. a request or -1.
WAITING = 0
DONE = 1


@dataclass(frozen=True)
class Collective:
    """One kind of all_reduce: the register field (group) it uses and its element-wise reduction."""

    group: str  # the field of the rank state that holds this group's register
    reduce: Callable  # min or max, applied element-wise to the ranks' value tuples
    name: str  # how traces name it, e.g. "all_reduce(MIN hits)"


class Thread(NamedTuple):
    letter: str  # in action ids: `S0.check.q0`
    name: str  # in viewers: "scheduler"


# ---- steps and actions ------------------------------------------------------------------


class Step(NamedTuple):
    """One enabled step of one thread of a rank, as the protocol computes it."""

    thread: str  # the thread's letter
    name: str  # e.g. "check"
    q: int  # the request (or other subject) it is about, -1 for none
    rank: tuple  # the rank's state after the step
    arrive: Optional[tuple] = None  # (tag, value): the step ends by arriving in this collective


class Action(NamedTuple):
    rank: int
    thread: str
    step: str
    q: int = -1

    @property
    def actor(self) -> tuple[int, str]:
        return (self.rank, self.thread)

    @property
    def id(self) -> str:
        """Stable text used in schedule strings, e.g. `S0.check.q0`."""
        base = f"{self.thread}{self.rank}.{self.step}"
        return base if self.q < 0 else f"{base}.q{self.q}"

    @property
    def kind(self) -> str:
        """The step kind without rank and request, e.g. `S.check` (statistics, descriptions)."""
        return f"{self.thread}.{self.step}"


_ACTION_ID = re.compile(r"^([A-Z])(\d+)\.([a-z_][a-z0-9_]*)(?:\.q(\d+))?$")


def parse_action_id(text: str) -> Action:
    """Inverse of `Action.id`; raises ValueError on text that is not an action id."""
    m = _ACTION_ID.match(text.strip())
    if m is None:
        raise ValueError(f"not an action id: {text!r} (expected e.g. 'S0.check.q0')")
    thread, rank, step, q = m.groups()
    return Action(int(rank), thread, step, -1 if q is None else int(q))


# ---- properties -------------------------------------------------------------------------
# A property says what it reads, so the engine can judge it on cached inputs:
#   invariant / progress   read the ranks' views (`RankProtocol.rank_view`), in rank order;
#   step_invariant         reads the acting rank's state before the step, and the action.
# A check returns None when the property holds, or one sentence saying why not.


@dataclass(frozen=True)
class RankProperty:
    name: str
    kind: str  # the explorer's: always, always_step, eventually, deadlock_free
    check: Optional[Callable] = None
    description: str = ""
    not_applicable: Optional[str] = None  # why the property says nothing in this configuration
    concerns: Optional[Callable] = None  # step invariants: action -> whether it is judged at all


def invariant(name: str, check: Callable, description: str, not_applicable: str | None = None) -> RankProperty:
    """Holds in every reachable state; `check(views)` over the ranks' views."""
    return RankProperty(name, ALWAYS, check, description, not_applicable)


def step_invariant(
    name: str, check: Callable, description: str, not_applicable: str | None = None, concerns: Callable | None = None
) -> RankProperty:
    """Holds for every step; `check(rank_before, action)` reads the acting rank only."""
    return RankProperty(name, ALWAYS_STEP, check, description, not_applicable, concerns)


def progress(name: str, pending: Callable, description: str, not_applicable: str | None = None) -> RankProperty:
    """Every weakly fair behaviour leaves the states where `pending(views)` says what is left."""
    return RankProperty(name, EVENTUALLY, pending, description, not_applicable)


def deadlock_freedom(name: str, description: str) -> RankProperty:
    return RankProperty(name, DEADLOCK_FREE, None, description)


# ---- step descriptions ------------------------------------------------------------------


def formats(*kinds: str):
    """Mark a method `(self, before, after, action) -> str` as the description of step `kind`
    (e.g. "S.issue"), or of each of several kinds that one text describes: `before` and `after`
    are the acting rank's states around the step (after the collective it arrived in completed,
    if it did). Write it beside the step."""

    def mark(fn):
        fn.formats_kinds = kinds
        return fn

    return mark


# ---- the protocol -----------------------------------------------------------------------


class RankProtocol:
    """Base class of every protocol version. A subclass declares the class attributes below
    and implements the methods that raise NotImplementedError."""

    threads: ClassVar[tuple[Thread, ...]] = ()
    collectives: ClassVar[dict] = {}  # collective kind -> Collective
    # Steps that commute with every step of every other thread and change nothing a property
    # reads in a way that matters: each is a persistent set on its own (kind -> priority, lower
    # first). The argument for each belongs in the protocol's docstring.
    solo_steps: ClassVar[dict] = {}
    # Rank symmetry and the partial-order reduction are sound for this very class: set in the
    # class body (never inherited) by a protocol whose soundness harness runs in the tests.
    # A subclass that does not set it is judged by the harness at run time (`engine/vouch.py`).
    reductions_vouched: ClassVar[bool] = False
    # The predicates the protocol ships, by name (the soundness harness runs each).
    builtin_predicates: ClassVar[tuple[str, ...]] = ()
    # The names of the properties `properties()` declares, in order (scenario files name them).
    property_names: ClassVar[tuple[str, ...]] = ()
    # The configuration fields a release's code settles (the shape of the release): checking a
    # release sets every one of them, from the release or to the protocol's default.
    shape_options: ClassVar[tuple[str, ...]] = ()

    config: object
    predicate_name: str = ""

    _formatters: ClassVar[dict] = {}

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        found = {}  # the most derived description of each kind wins
        for klass in cls.__mro__:
            for attr in vars(klass).values():
                for kind in getattr(attr, "formats_kinds", ()):
                    found.setdefault(kind, attr)
        cls._formatters = found

    # ---- what the protocol is ----

    @property
    def ranks(self) -> int:
        return self.config.ranks

    @property
    def num_requests(self) -> int:
        """How many subjects a step's `q` may name (0..n-1): the configuration's requests."""
        return self.config.num_requests

    def initial_rank(self, r: int) -> tuple:
        """Rank r's state before any thread has stepped."""
        raise NotImplementedError

    def rank_steps(self, r: int, rank: tuple) -> list[Step]:
        """Every step rank r's threads can take from `rank`, in a fixed order (thread, then step).
        It must read nothing but `rank`, the configuration and the predicate."""
        raise NotImplementedError

    def rank_view(self, rank: tuple) -> Hashable:
        """What the properties read of one rank (computed once per distinct rank state)."""
        raise NotImplementedError

    def properties(self) -> list[RankProperty]:
        raise NotImplementedError

    def fields(self, state: tuple) -> dict:
        """A flat readable view of a global state (`r0.q0.hash_value` -> 2), for viewers and diffs."""
        return {}

    # ---- what the reductions may assume ----

    def rank_classes(self) -> tuple[tuple[int, ...], ...]:
        """Groups of interchangeable ranks (identical parameters): rank symmetry sorts each group."""
        return tuple((r,) for r in range(self.ranks))

    def solo_priority(self, rank: tuple, action: Action) -> Optional[int]:
        """The priority of `action` as a persistent set on its own in a state where the acting
        rank is `rank`, or None when it is not one (default: the declared `solo_steps`)."""
        return self.solo_steps.get(action.kind)

    def postponable(self, rank: tuple, action: Action) -> bool:
        """Whether the partial-order reduction may leave `action` out of what it explores in a
        state where the acting rank is `rank` (default: never). The step stays enabled (fairness
        and deadlocks see it), and where nothing else is left to explore it is explored. The
        protocol argues why every order it drops is matched by one it keeps (issue 23: the
        ack-drain clock, fired only where its check reads it)."""
        return False

    @classmethod
    def harness_configs(cls) -> tuple:
        """Small configurations that exercise every step kind: on them the soundness harness
        compares the reduced and the plain search of a variant before vouching for the reductions."""
        return ()

    # ---- descriptions ----

    @classmethod
    def action_kinds(cls) -> tuple[str, ...]:
        """Every step kind the protocol can take: the kinds that have a description."""
        return tuple(cls._formatters)

    def possible_kinds(self) -> tuple[str, ...]:
        """The step kinds this configuration can take at all (a kind that never fires in a search,
        although possible, means the scenario does not reach that part of the protocol)."""
        return self.action_kinds()

    def describe(self, before: tuple, after: tuple, action: Action) -> str:
        formatter = self._formatters.get(action.kind)
        return formatter(self, before, after, action) if formatter is not None else action.id

    def collective_name(self, tag: tuple) -> str:
        kind, subject = tag
        name = self.collectives[kind].name
        return name if subject < 0 else f"{name} for request {subject}"

    def thread_names(self) -> dict:
        return {t.letter: t.name for t in self.threads}

    def rank_settled(self, rank: tuple) -> bool:
        """True when this rank's threads have nothing left that could change any property's
        answer (a state whose ranks are all settled is where a sampled run may stop). The
        default, never, is always sound."""
        return False


def result(rank: tuple, group: str, tag: tuple):
    """The reduced value of collective `tag` once rank may depart it, else None."""
    reg = getattr(rank, group)
    if reg and reg[1] == DONE and reg[0] == tag:
        return reg[2]
    return None


