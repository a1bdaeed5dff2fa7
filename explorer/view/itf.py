"""A counterexample in the Informal Trace Format (ITF) of Apalache and Quint.

ITF (Apalache's ADR-015) is the JSON that the TLA+/Quint tools write their traces in, so
their viewers and model-based-testing drivers can read ours: an object with `#meta`,
`vars` (the variable names), `states` (each an object with `#meta: {"index": i}` and one
value per variable) and, for a lasso, `loop` (the index of the state the cycle returns to:
the last state equals it). Values: booleans and strings as they are, integers as
`{"#bigint": "..."}` (as Quint writes them: exact at any size), lists as lists, tuples as
`{"#tup": [...]}`, sets as `{"#set": [...]}`, dicts as `{"#map": [[key, value], ...]}`, anything
else as `{"#unserializable": "its text"}`; a variable a state does not have (the model's
fields leave it out there, e.g. something not created yet) as `{"#unserializable": "absent: ..."}`,
never as a value it does not have.

The variables are the model's readable fields (`fields(state)`) plus `mbt::actionTaken`, the
name Quint's model-based testing gives the step that led to a state (`init` for the first).
Each state's `#meta` also carries the step's action id, actor and description.
"""

from __future__ import annotations

from prefetch_check.explorer.view.layout import Absent, TraceView, build_view

FORMAT_DESCRIPTION = "https://apalache-mc.org/docs/adr/015adr-trace.html"
ACTION_TAKEN = "mbt::actionTaken"
INITIAL_ACTION = "init"
ABSENT_TEXT = "absent: the model has no such field in this state"


def trace_to_itf(model, trace, prop_result, title: str) -> dict:
    """A JSON-ready dict in ITF; write it with `json.dump` (by convention to `NAME.itf.json`)."""
    return view_to_itf(build_view(model, trace, prop_result, title))


def view_to_itf(view: TraceView) -> dict:
    bad = [n for n in view.field_names if n.startswith("#") or n == ACTION_TAKEN]
    if bad:
        raise ValueError(f"ITF variable names cannot start with '#' or be {ACTION_TAKEN!r}: {', '.join(bad)}")
    meta = {
        "format": "ITF",
        "format-description": FORMAT_DESCRIPTION,
        "source": view.title,
        "description": f"counterexample to {view.prop_name}" + (f": {view.prop_description}" if view.prop_description else ""),
        "status": "violation" if view.verdict == "VIOLATED" else view.verdict.lower(),
        "property": view.prop_name,
        "verdict": view.verdict,
        "reason": view.reason,
        "schedule": view.schedule,
        "generator": "prefetch-check",
    }
    if view.cycle_start is not None:
        meta["lasso"] = view.cycle_text
    states = []
    for i, values in enumerate(view.states):
        state_meta: dict = {"index": i}
        if i:
            row = view.rows[i - 1]
            state_meta.update(
                action=row.action_id,
                actor=view.columns[row.column].label,
                description=row.description,
                changed=[c.name for c in row.changes],
            )
        state = {"#meta": state_meta}
        state.update((name, itf_value(v)) for name, v in zip(view.field_names, values))
        state[ACTION_TAKEN] = INITIAL_ACTION if i == 0 else view.rows[i - 1].action_id
        states.append(state)
    out = {"#meta": meta, "vars": list(view.field_names) + [ACTION_TAKEN], "states": states}
    if view.cycle_start is not None:
        out["loop"] = view.cycle_start
    return out


def itf_value(value):
    """One value as an ITF expression."""
    if isinstance(value, Absent):
        return {"#unserializable": ABSENT_TEXT}
    if isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return {"#bigint": str(value)}
    if isinstance(value, list):
        return [itf_value(v) for v in value]
    if isinstance(value, tuple):
        return {"#tup": [itf_value(v) for v in value]}
    if isinstance(value, (set, frozenset)):
        return {"#set": [itf_value(v) for v in sorted(value, key=repr)]}
    if isinstance(value, dict):
        return {"#map": [[itf_value(k), itf_value(v)] for k, v in value.items()]}
    return {"#unserializable": str(value)}
