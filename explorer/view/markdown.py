"""A counterexample as Markdown: a table for a pull-request comment or a CI step summary."""

from __future__ import annotations

from prefetch_check.explorer.view.layout import TraceView, build_view, group_changes, leaf, show


def trace_to_markdown(model, trace, prop_result, title: str) -> str:
    return view_to_markdown(build_view(model, trace, prop_result, title))


def view_to_markdown(view: TraceView) -> str:
    out = [f"### {_cell(view.title)}", ""]
    if view.verdict:
        about = f": {_cell(view.prop_description)}" if view.prop_description else ""
        out += [f"**{view.verdict}** `{view.prop_name}`{about}", ""]
    out += ["| # | actor | action | changed fields |", "|--:|---|---|---|"]
    for row in view.rows:
        if row.cycle_start:
            out.append(f"| ⟳ | | **cycle starts here: {_cell(view.cycle_text)}** | |")
        number = f"**{row.number}** ▶ decisive" if row.decisive else str(row.number)
        action = _cell(row.description)
        if row.decisive:
            action = f"**{action}**"
        out.append(f"| {number} | {_cell(view.columns[row.column].label)} | {action} | {_changes(row.changes)} |")
    if view.cycle_start is not None:
        out.append(f"| ⟳ | | back to step {view.cycle_start + 1}, forever | |")
    out.append("")
    if view.reason:
        out += [f"**Why {view.verdict.lower() or 'it fails'}:** {_cell(view.reason)}", ""]
    if view.cycle_start is not None:
        out += [f"**Lasso:** {view.cycle_text}.", ""]
    out += ["Schedule (replayable):", "", "```", view.schedule, "```", ""]
    return "\n".join(out)


def _changes(changes) -> str:
    parts = []
    for prefix, items in group_changes(changes):
        body = ", ".join(f"{leaf(c.name)} {_cell(show(c.old))} → **{_cell(show(c.new))}**" for c in items)
        parts.append(f"`{prefix}` {body}" if prefix else body)
    return "<br>".join(parts)


def _cell(text: str) -> str:
    """Text that cannot break a table row (pipes, newlines) or start HTML."""
    return str(text).replace("\\", "\\\\").replace("|", "\\|").replace("<", "&lt;").replace("\n", "<br>")
