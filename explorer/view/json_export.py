"""A counterexample as JSON: the replayable schedule plus every step, for tools and archives."""

from __future__ import annotations

from prefetch_check.explorer.view.layout import build_view, jsonable

FORMAT = "explorer-trace/1"  # bump when a key changes meaning


def trace_to_json(model, trace, prop_result, title: str) -> dict:
    """A JSON-ready dict; `schedule` replays through `explorer.replay.replay`."""
    view = build_view(model, trace, prop_result, title)
    return view_to_json(view)


def view_to_json(view) -> dict:
    return {
        "format": FORMAT,
        "title": view.title,
        "property": {
            "name": view.prop_name,
            "verdict": view.verdict,
            "description": view.prop_description,
            "reason": view.reason,
        },
        "schedule": view.schedule,
        "cycle_start": view.cycle_start,
        "lasso": view.cycle_text or None,
        "actors": [
            {"actor": jsonable(c.actor), "group": c.group, "name": c.name, "label": c.label} for c in view.columns
        ],
        "initial": {n: jsonable(v) for n, v in zip(view.field_names, view.states[0])},
        "steps": [
            {
                "step": row.number,
                "actor": jsonable(view.columns[row.column].actor),
                "actor_label": view.columns[row.column].label,
                "action_id": row.action_id,
                "description": row.description,
                "changed": {c.name: {"old": jsonable(c.old), "new": jsonable(c.new)} for c in row.changes},
                "decisive": row.decisive,
                "cycle_start": row.cycle_start,
                "in_cycle": row.in_cycle,
            }
            for row in view.rows
        ],
    }
