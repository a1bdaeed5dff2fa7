"""What every trace format shows, computed once: columns per actor, rows per step, field diffs.

The terminal, HTML, Markdown and JSON views only differ in how they draw a `TraceView`,
so they cannot disagree about which step is decisive, which fields changed or where a
lasso's cycle starts. Nothing here knows a protocol: actors that are `(group, name)`
pairs are drawn as threads grouped by their group (the model names what a group is: its
`group_name` hook); any other actor gets a column of its own.
"""

from __future__ import annotations

from prefetch_check.explorer.interface import hooks

import re
from dataclasses import dataclass
from typing import Optional

# `-> accept;`, `-> wait` at the end: a one-word answer after an arrow is an evaluation result
_RESULT = re.compile(r"(->\s*)([A-Za-z_]+)(?=[;,]|$)")


@dataclass(frozen=True)
class Change:
    name: str  # the flat field name, e.g. `w0.count`
    old: object
    new: object


@dataclass(frozen=True)
class Column:
    actor: object
    group: Optional[str]  # e.g. "node 0", or None when the actor is not a (group, name) pair
    name: str  # e.g. "writer" (with the model's `thread_names` hook) or "W"
    short: str  # a narrow header, e.g. "S0" (the thread's own name and its group)
    lane: str = ""  # the narrowest header, for a lane one letter wide: e.g. "W" (its group says whose)
    group_short: str = ""  # the group in a few characters, e.g. "r0"

    @property
    def label(self) -> str:
        return self.name if self.group is None else f"{self.group} {self.name}"


@dataclass(frozen=True)
class Row:
    number: int  # 1-based step number
    column: int  # index into TraceView.columns
    action_id: str
    description: str
    changes: tuple[Change, ...]
    decisive: bool  # the step that makes the property fail (last step of a finite trace)
    cycle_start: bool  # a lasso's cycle begins with this step
    in_cycle: bool


@dataclass(frozen=True)
class TraceView:
    title: str
    columns: tuple[Column, ...]
    rows: tuple[Row, ...]
    field_names: tuple[str, ...]
    states: tuple[tuple, ...]  # field values: states[0] initial, states[i] after step i
    schedule: str
    cycle_start: Optional[int]  # 0-based index of the first repeating step, as in Trace
    prop_name: str
    verdict: str
    prop_description: str
    reason: str

    @property
    def groups(self) -> list[tuple[Optional[str], list[int]]]:
        """Consecutive columns of the same group: [(group, [column indices])]."""
        out: list = []
        for i, col in enumerate(self.columns):
            if out and out[-1][0] == col.group:
                out[-1][1].append(i)
            else:
                out.append((col.group, [i]))
        return out

    @property
    def key_step(self) -> int:
        """The step a reader should see first: the decisive one, or where a lasso's cycle starts."""
        if self.cycle_start is not None:
            return self.cycle_start + 1
        return next((r.number for r in self.rows if r.decisive), len(self.rows))

    @property
    def cycle_text(self) -> str:
        """How a lasso loops, in words (empty for a finite trace)."""
        if self.cycle_start is None:
            return ""
        first, last = self.cycle_start + 1, len(self.rows)
        span = f"step {first}" if first == last else f"steps {first}-{last}"
        return f"{span} repeat forever (after step {last} the state is the one before step {first})"


def build_view(model, trace, prop_result, title: str) -> TraceView:
    if trace is None:
        raise ValueError("no trace to show: the property has no counterexample")
    columns = _columns(model, trace)
    index = {c.actor: i for i, c in enumerate(columns)}
    names, states = _field_table(model, trace)
    rows = []
    last = len(trace.steps) - 1
    for i, step in enumerate(trace.steps):
        rows.append(
            Row(
                number=i + 1,
                column=index[step.actor],
                action_id=step.action_id,
                description=step.description,
                changes=diff(names, states[i], states[i + 1]),
                decisive=trace.cycle_start is None and i == last,
                cycle_start=trace.cycle_start == i,
                in_cycle=trace.cycle_start is not None and i >= trace.cycle_start,
            )
        )
    return TraceView(
        title=title,
        columns=tuple(columns),
        rows=tuple(rows),
        field_names=tuple(names),
        states=tuple(states),
        schedule=trace.schedule,
        cycle_start=trace.cycle_start,
        prop_name=getattr(prop_result, "name", ""),
        verdict=getattr(prop_result, "verdict", ""),
        prop_description=getattr(prop_result, "description", ""),
        reason=getattr(prop_result, "reason", ""),
    )


def diff(names, before: tuple, after: tuple) -> tuple[Change, ...]:
    return tuple(Change(n, a, b) for n, a, b in zip(names, before, after) if a != b)


def group_changes(changes) -> list[tuple[str, list[Change]]]:
    """Changes under a common prefix (`r0.q0`), in field order, so a row reads `r0.q0: a, b`."""
    out: list = []
    for c in changes:
        prefix = c.name.rsplit(".", 1)[0] if "." in c.name else ""
        if out and out[-1][0] == prefix:
            out[-1][1].append(c)
        else:
            out.append((prefix, [c]))
    return out


def leaf(name: str) -> str:
    return name.rsplit(".", 1)[-1]


def show(value) -> str:
    """A field value as short text (lists without quotes)."""
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(show(v) for v in value) + "]"
    return str(value)


def clauses(description: str) -> list[str]:
    """A step description split at `; ` into the clauses it is made of (one per line)."""
    return [c for c in description.split("; ") if c]


def result_spans(text: str) -> list[tuple[str, bool]]:
    """Split text into (piece, is_result) where results are the words after `->` (accept, wait)."""
    out, pos = [], 0
    for m in _RESULT.finditer(text):
        out.append((text[pos : m.start(2)], False))
        out.append((m.group(2), True))
        pos = m.end(2)
    out.append((text[pos:], False))
    return [(t, r) for t, r in out if t]


class Absent:
    """The value of a field a state does not have (the model's `fields` left it out, e.g. for
    something not created yet). Shown as None, as every viewer always showed it; the ITF export
    says what it is instead of claiming a value."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "None"

    __str__ = __repr__

    def __eq__(self, other) -> bool:
        return isinstance(other, Absent)

    def __hash__(self) -> int:
        return hash(Absent)


ABSENT = Absent()


def jsonable(value):
    """A value JSON and GraphML can hold: containers become lists, unknown objects text."""
    if isinstance(value, Absent):
        return None
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple, set, frozenset)):
        items = sorted(value, key=repr) if isinstance(value, (set, frozenset)) else value
        return [jsonable(v) for v in items]
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    return str(value)


def _field_table(model, trace) -> tuple[list[str], list[tuple]]:
    fields = hooks(model).fields
    if fields is None:
        return [], [() for _ in range(len(trace.steps) + 1)]
    dicts = [fields(trace.initial)] + [fields(s.state) for s in trace.steps]
    names: list = []
    seen: set = set()
    for d in dicts:
        for n in d:
            if n not in seen:
                seen.add(n)
                names.append(n)
    return names, [tuple(d.get(n, ABSENT) for n in names) for d in dicts]


def _columns(model, trace) -> list[Column]:
    """Every actor that acts or could act along the trace; (group, name) pairs as a full grid."""
    seen: dict = {}  # in the order the model lists its enabled actions (its own thread order)
    for state in [trace.initial] + [s.state for s in trace.steps]:
        for action, _ in model.successors(state):
            seen.setdefault(model.actor(action), None)
    for step in trace.steps:
        seen.setdefault(step.actor, None)
    actors = list(seen)
    if not actors or not all(isinstance(a, tuple) and len(a) == 2 for a in actors):
        return [Column(a, None, _actor_text(a), _actor_text(a), _actor_text(a)) for a in actors]
    hook = hooks(model).thread_names or {}
    names = [n for n in hook if any(a[1] == n for a in actors)]
    for a in actors:
        if a[1] not in names:
            names.append(a[1])
    groups = list(dict.fromkeys(a[0] for a in actors))
    try:
        groups.sort()
    except TypeError:
        pass
    word = hooks(model).group_name or "group"
    return [Column((g, n), f"{word} {g}", str(hook.get(n, n)), f"{n}{g}", str(n), f"{word[0]}{g}") for g in groups for n in names]


def _actor_text(actor) -> str:
    if isinstance(actor, tuple):
        return " ".join(str(x) for x in actor)
    return str(actor)
