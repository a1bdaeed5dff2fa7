"""A counterexample in the terminal (rich): threads as columns, steps as rows, the verdict last.

Two layouts of the same content. `columns` writes each step's description into the
column of the thread that takes it; when the console is too narrow for one readable
column per thread (many groups of actors), `lanes` marks the thread with a dot in a narrow lane
and writes the description in one wide column next to the lanes.
"""

from __future__ import annotations

from rich import box
from rich.console import Console
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from prefetch_check.explorer.view.layout import TraceView, build_view, clauses, group_changes, leaf, result_spans, show

GROUP_STYLES = ("cyan", "magenta", "green", "yellow", "blue", "bright_red")
MIN_COLUMN = 26  # narrower than this and a description wraps into an unreadable ribbon
CHANGES_SHARE = 1.3  # the changed-fields column is this many times as wide as a thread column


def render_trace(console: Console, model, trace, prop_result, title: str, layout: str = "auto") -> None:
    """Print the trace as a table and the property's verdict below it."""
    print_view(console, build_view(model, trace, prop_result, title), layout)


def print_view(console: Console, view: TraceView, layout: str = "auto") -> None:
    console.print(trace_table(view, console.width, layout))
    console.print(verdict_panel(view))


def choose_layout(view: TraceView, width: int) -> str:
    acting = len({row.column for row in view.rows})
    idle = len(view.columns) - acting
    per_column = (width - 8 - 3 * (len(view.columns) + 2) - 6 * idle) / (acting + CHANGES_SHARE)
    return "columns" if per_column >= MIN_COLUMN else "lanes"


def trace_table(view: TraceView, width: int, layout: str = "auto") -> Table:
    if layout == "auto":
        layout = choose_layout(view, width)
    if layout not in ("columns", "lanes"):
        raise ValueError(f"layout must be 'auto', 'columns' or 'lanes', not {layout!r}")
    styles = _group_styles(view)
    table = Table(title=view.title, box=box.SIMPLE_HEAD, expand=True, show_lines=False, title_style="bold")
    table.add_column("#", justify="right", no_wrap=True, width=4)
    acting = {row.column for row in view.rows}
    for i, col in enumerate(view.columns):
        if layout == "columns":
            first = i == 0 or view.columns[i - 1].group != col.group
            # a thread that never acts in this trace keeps a narrow, empty column (short header)
            name = col.name if i in acting else col.short
            header = name if col.group is None else f"{col.group if first else ''}\n{name}"
            ratio = 10 if i in acting else 2
            table.add_column(header, ratio=ratio, min_width=6, header_style=f"bold {styles[i]}", overflow="fold")
        else:
            table.add_column(col.short, justify="center", no_wrap=True, header_style=f"bold {styles[i]}")
    if layout == "lanes":
        table.add_column("step", ratio=20, overflow="fold")
    table.add_column("changed fields", ratio=int(10 * CHANGES_SHARE), overflow="fold", header_style="bold")

    for row in view.rows:
        if row.cycle_start:
            table.add_section()
        number = Text(str(row.number))
        if row.decisive:
            number = Text(f"▶{row.number}", style="bold red")
        elif row.cycle_start:
            number = Text(f"⟳{row.number}", style="bold cyan")
        elif row.in_cycle:
            number.stylize("cyan")
        text = _description(view, row)
        cells = [number]
        for i in range(len(view.columns)):
            if layout == "columns":
                cells.append(text if i == row.column else Text(""))
            else:
                cells.append(Text("●", style=f"bold {styles[i]}") if i == row.column else Text(""))
        if layout == "lanes":
            cells.append(Text.assemble((view.columns[row.column].short + " ", f"bold {styles[row.column]}"), text))
        cells.append(_changes(row.changes))
        table.add_row(*cells, style="on grey15" if row.decisive else None)
    if view.cycle_start is not None:
        table.add_section()
        back = Text(f"back to step {view.cycle_start + 1}: ", style="bold cyan") + Text(view.cycle_text, style="cyan")
        filler = [Text("")] * (len(view.columns) - 1 if layout == "columns" else len(view.columns))
        table.add_row(Text("⟳", style="bold cyan"), *([back] + filler if layout == "columns" else filler + [back]), Text(""))
    return table


def verdict_panel(view: TraceView) -> Panel:
    style = {"VIOLATED": "red", "VERIFIED": "green"}.get(view.verdict, "yellow")
    body = Table.grid(padding=(0, 2))
    body.add_column(style="dim", no_wrap=True)
    body.add_column(overflow="fold")
    if view.prop_description:
        body.add_row("property", view.prop_description)
    decisive = [r for r in view.rows if r.decisive]
    if decisive:
        r = decisive[0]
        body.add_row("decisive", Text.assemble((f"step {r.number} ", "bold"), f"({view.columns[r.column].label}: {r.action_id})"))
    if view.cycle_start is not None:
        body.add_row("lasso", Text(view.cycle_text, style="cyan"))
    if view.reason:
        body.add_row("why", Text(view.reason, style=f"bold {style}"))
    body.add_row("schedule", Text(view.schedule, style="dim"))
    title = Text.assemble((f" {view.verdict} ", f"bold white on {style}"), " ", (view.prop_name, "bold"), " ")
    return Panel(body, title=title, title_align="left", border_style=style)


def _description(view: TraceView, row) -> Text:
    hot = "bold white on red" if row.decisive else "bold yellow"
    text = Text()
    for n, clause in enumerate(clauses(row.description)):
        if n:
            text.append("\n")
        for piece, is_result in result_spans(clause):
            text.append(piece, style=hot if is_result else ("bold" if row.decisive else ""))
    if row.decisive:
        text.append(f"\n◀ {view.prop_name or 'property'} fails here", style="bold red")
    if row.cycle_start:
        text.append("\n⟳ cycle starts here, repeats forever", style="bold cyan")
    return text


def _changes(changes) -> Text:
    text = Text()
    for n, (prefix, items) in enumerate(group_changes(changes)):
        if n:
            text.append("\n")
        if prefix:
            text.append(prefix + " ", style="bold")
        for k, c in enumerate(items):
            if k:
                text.append(" · ", style="dim")
            text.append(leaf(c.name) + ": ")
            text.append(show(c.old), style="dim strike")
            text.append(" → ")
            text.append(show(c.new), style="bold green")
    return text


def _group_styles(view: TraceView) -> list[str]:
    order = list(dict.fromkeys(c.group for c in view.columns))
    return [GROUP_STYLES[order.index(c.group) % len(GROUP_STYLES)] if c.group is not None else "white" for c in view.columns]
