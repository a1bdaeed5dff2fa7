"""The terminal report of `prefetch-check sglang`: a block per tree, or a range's summary table.

Why this shape: the report is read in a terminal of 100 columns. One tree's block starts with a
short header (the tree, its family and protocol, its predicate and options, conformance in one
line, what each engine's verdicts rest on), then one line per property by engine: the model
under the release's own predicate (under upstream's assumptions, and what only a scenario that
drops one finds), and the tree's code, executed. A violation shows its shortest counterexample's
length and case; everything longer (the trace commands, consequences, settings, the evidence of
the options, the conformance figures, why a tree got no verdict) goes to numbered footnotes
under the block. A range gets one compact row per tree (consecutive trees that read the same
share a row). Widths follow the console's; no line is longer, and no property name is broken
(layout.py): a table too wide for the terminal stacks its cells instead.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from rich import box
from rich.console import Console
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from prefetch_check.explorer.result import BOUNDED, NOT_APPLICABLE, VIOLATED
from prefetch_check.sglang import layout
from prefetch_check.sglang.checks import CHECKED, DROPPED, NOT_ASKED, NOT_CHECKED, UPSTREAM, TRANSCRIPTION, PropertyVerdict, ReleaseCheck
from prefetch_check.sglang.code_checks import NOT_JUDGED
from prefetch_check.sglang.families import UNKNOWN
from prefetch_check.sglang import vouch
from prefetch_check.sglang.report import (
    FAILING, _short, code_note, code_rests_on, code_verdict, conformance_headlines, conformance_text,
)

INDENT = 2  # a block's header and table, under the tree's line
GAP = 3  # between the columns of a table (box.SIMPLE_HEAD with padding 1)
MAX_CELL = 36  # a verdict column wider than this reads worse, not better
NOTE_INDENT = 4  # a footnote's continuation lines
UPSTREAM_HEAD, DROPPED_HEAD = "the model, under upstream's assumptions", "the model, only without an upstream assumption"
CODE_HEAD = "its code, executed"


# ---------------------------------------------------------------- footnotes


@dataclass(frozen=True)
class Note:
    """One footnote: its first line's text, an optional command after it, and further lines."""

    text: str
    command: str = ""
    more: tuple[str, ...] = ()


class Notes:
    """The footnotes of the report, numbered in the order they are referred to; each tree's are
    printed under its block (the numbers run on)."""

    def __init__(self):
        self.notes: list[Note] = []
        self.printed = 0

    def add(self, note: Note) -> str:
        self.notes.append(note)
        return f"[{len(self.notes)}]"

    def violation(self, v: PropertyVerdict) -> str:
        """A violation's footnote: its shortest case and the command that shows it, its consequence,
        the settings its case runs with, the other cases."""
        first, rest = v.cases[0], v.cases[1:]
        more = [f"consequence: {first.consequence}"] if first.consequence else []
        if first.reproduction:
            more.append(f"reproduced without prefetch-check: {first.reproduction}")
        if first.settings:
            more.append(f"its case runs with settings that are not the release's defaults: {'; '.join(first.settings)}")
        if rest:
            also = ", ".join(f"{f.case} ({f.steps} steps)" for f in rest)
            more.append(f"also violated in {also}; their commands are in the --json report")
        return self.add(Note(f"{first.label()}:", first.command, tuple(more)))

    def pending(self, width: int) -> list[str]:
        """The lines of the footnotes added since the last call, wrapped to `width`."""
        out = []
        for number, note in enumerate(self.notes[self.printed:], start=self.printed + 1):
            head = f"[{number}] {note.text}"
            if note.command:
                out += layout.command_lines(note.command, width, prefix=head + " ")
            else:
                out += layout.wrap_hanging(head, width, NOTE_INDENT)
            for line in note.more:
                out += [" " * NOTE_INDENT + x for x in layout.wrap_hanging(line, width - NOTE_INDENT, 2)]
        self.printed = len(self.notes)
        return out


# ---------------------------------------------------------------- cells


def _marked(text: str, mark: str) -> str:
    return f"{text} {layout.unbroken(f'({mark})')}" if mark and text else text


def verdict_cell(v: Optional[PropertyVerdict], notes: Notes, case: str = "") -> str:
    """A verdict in a cell: a violation's length on the first line, its case (`case`, where the
    footnote's label says more) and footnote on the next."""
    if v is None:
        return ""
    if v.verdict == VIOLATED:
        lines = [layout.unbroken(f"VIOLATED, {v.steps} steps"), f"{case or v.case} {notes.violation(v)}"]
        extra = [" (non-default settings)" if v.cases[0].settings else "",
                 f" (+{len(v.cases) - 1} case{'s' if len(v.cases) > 2 else ''})" if len(v.cases) > 1 else ""]
        if any(extra):
            lines.append("".join(extra).strip())
        return "\n".join(lines)
    if v.verdict == BOUNDED:
        return f"BOUNDED\n{v.case} {notes.add(Note(f'{v.case}: {v.reason}'))}" if v.reason else "BOUNDED"
    if v.verdict == NOT_APPLICABLE:
        return "n/a"
    if v.verdict == NOT_JUDGED:
        return "not judged"
    return v.verdict


def code_cell(row: ReleaseCheck, prop: str, notes: Notes, mark: str = "") -> str:
    v = row.code.verdicts().get(prop)
    if v is None:
        return ""
    if v.verdict == VIOLATED:
        return _marked(verdict_cell(code_verdict(row, prop, v), notes, case=v.case), mark)
    if v.verdict == BOUNDED:
        return _marked(verdict_cell(PropertyVerdict(BOUNDED, case=v.case, reason=v.reason), notes), mark)
    return _marked(verdict_cell(PropertyVerdict(v.verdict), notes), mark)


# ---------------------------------------------------------------- one tree


def _title(row: ReleaseCheck) -> str:
    family = row.family or "-"
    if row.protocol and row.family != UNKNOWN:
        family += f" ({row.protocol})"
    return f"{row.label}: {family}"


def _fitting(candidates: list[str], width: int) -> str:
    """The first of `candidates` that fits on one line of `width`, else the last."""
    return next((c for c in candidates if len(c) <= width), candidates[-1])


def _long_note(text: str, width: int, notes: Notes, lines: int = 2) -> str:
    """`text` where it wraps to at most `lines` lines; else its first clause and a footnote with all of it."""
    if len(layout.wrap(text, width)) <= lines:
        return text
    clause = text.split("; ")[0].split(" (")[0]
    mark = notes.add(Note(text))
    short = f"{clause} {mark}"
    return short if len(layout.wrap(short, width)) <= lines else mark


def header(row: ReleaseCheck, notes: Notes, width: int) -> list[tuple[str, str]]:
    """(label, value) lines of a tree's header; the conformance value on one line."""
    value_width = width - INDENT - len("conformance") - 2
    out = []
    if row.predicate and row.predicate != "?":
        out.append(("predicate", _short(row.predicate)))
    if row.release is not None and row.release.settings:
        settled = "; ".join(s.describe() for s in row.release.settings)
        options = ", ".join(s.assignment() for s in row.release.settings)
        out.append(("options", f"{options} " + notes.add(Note(f"the options and the detections that settled them "
                                                               f"(file:line in --json): {settled}"))))
    conformance = _conformance_line(row, notes, value_width)
    if conformance:
        out.append(("conformance", conformance))
    out.append(("the model", _model_line(row, notes, value_width)))
    out.append(("its code", _code_line(row, notes, value_width)))
    return out


def _conformance_line(row: ReleaseCheck, notes: Notes, width: int) -> str:
    c = row.conformance
    if not c.planned and not c.note:
        return ""
    candidates = conformance_headlines(row)
    full = conformance_text(row)
    if candidates[0] == full and len(full) <= width:  # all of it fits: no footnote
        return full
    mark = notes.add(Note(full))
    return _fitting([f"{c} {mark}" for c in candidates], width)


def _model_line(row: ReleaseCheck, notes: Notes, width: int) -> str:
    if row.status == CHECKED and row.withheld:
        return "verdicts withheld: its code diverges from the model (conformance, above)"
    if row.status == CHECKED:
        rests = row.sizes()
        if row.vouch is not None and row.vouch.rests_on:  # an edited tree its conforming code vouches for
            rests += " " + notes.add(Note(vouch.text(row)))
        elif row.note:
            rests += " " + notes.add(Note(row.note))
        return rests
    if row.status == NOT_ASKED:
        return "not asked (--engine code)"
    if row.status == NOT_CHECKED:
        return f"{NOT_CHECKED}: no verdicts for code no case ran (its code, below)"
    return _long_note(f"{row.status}: {row.note}" if row.note else row.status, width, notes)


def _code_line(row: ReleaseCheck, notes: Notes, width: int) -> str:
    if not row.code.ran:
        return _long_note(row.code.note, width, notes) if row.code.note else "not asked (--engine model)"
    if row.code.withheld:  # a changed statement no case ran: no verdict (coverage_report.py)
        return _long_note(f"{NOT_CHECKED}: {row.code.withheld}", width, notes)
    text = code_rests_on(row.code)
    missing = code_note(row)
    if missing:
        text += " " + notes.add(Note(missing))
    return text


def coverage_line(row: ReleaseCheck, notes: Notes) -> str:
    """Under the table: what its code checks ran (coverage_report.py), the per-function table and
    the changed statements in --json."""
    if row.coverage is None:
        return ""
    text = f"coverage: {row.coverage.summary()}"
    changed = row.coverage.changed
    if changed:
        ran = sum(1 for c in changed if c.executed)
        text += (f"; {ran} of {len(changed)} statement(s) changed against {row.coverage.changes.against or 'no release'}"
                 " ran")
    return text + " " + notes.add(Note("per function, and per changed statement the cases and schedules that ran "
                                       "it: coverage in --json (docs/coverage.md)"))


def _ours_line(row: ReleaseCheck, own: dict, ours: dict, notes: Notes) -> str:
    """Our transcription beside the release's predicate: where it differs, and how."""
    differs = []
    for prop, mine in ours.items():
        theirs = own.get(prop)
        if theirs is not None and (theirs.verdict, theirs.steps) == (mine.verdict, mine.steps):
            continue
        text = mine.verdict if mine.verdict != NOT_APPLICABLE else "n/a"
        if mine.verdict == VIOLATED:
            text += f", {mine.steps} steps, {mine.case} {notes.violation(mine)}"
        differs.append(f"{prop} {text}")
    said = "; ".join(differs) if differs else "the same verdicts and counterexample lengths"
    return f"ours ({TRANSCRIPTION}), for comparison, under upstream's assumptions: {said}"


def property_columns(row: ReleaseCheck, notes: Notes, base) -> tuple[list[str], list[list[str]]]:
    """The property table of one tree: its headers and rows (cells as text with line breaks)."""
    model = row.status == CHECKED and not row.withheld
    code = row.code.verdicts() if row.code.ran else {}
    upstream = UPSTREAM_HEAD if row.vouch is None else UPSTREAM_HEAD.replace("the model", f"the model as {row.vouch.label}")
    heads = ["property"] + ([upstream, DROPPED_HEAD] if model else []) + ([CODE_HEAD] if code else [])
    own = row.verdicts("own", UPSTREAM) if model else {}
    dropped = row.verdicts("own", DROPPED) if model else {}
    marks = base.marks(row) if base is not None and model else {}
    code_marks = base.code_marks(row) if base is not None else {}
    rows = []
    for prop in list(own) + [p for p in code if p not in own]:
        cells = [prop]
        if model and prop not in own:  # a property only the executor judges (no_crash of a poll tree)
            cells += ["", ""]
        elif model:
            mark = marks.get(prop, "")
            only_dropped = own[prop].verdict not in FAILING and dropped[prop].verdict in FAILING
            cells.append(_marked(verdict_cell(own[prop], notes), "" if only_dropped else mark))
            cells.append(_marked(verdict_cell(dropped[prop], notes), mark) if only_dropped else "")
        if code:
            cells.append(code_cell(row, prop, notes, code_marks.get(prop, "")))
        rows.append(cells)
    return heads, rows


def merged_model(heads: list[str], rows: list[list[str]]) -> tuple[list[str], list[list[str]]]:
    """The property table with the model's two columns in one (a narrow terminal): what only a
    scenario that drops an upstream assumption finds comes under the verdict, said so."""
    if heads[1:3] != [UPSTREAM_HEAD, DROPPED_HEAD]:
        return heads, rows
    merged = [[r[0], r[1] + (f"\nonly without an upstream assumption: {r[2]}" if r[2] else "")] + r[3:] for r in rows]
    return [heads[0], "the model, the release's predicate"] + heads[3:], merged


def _table(heads: list[str], rows: list[list[str]], width: int, keep_first: bool = True) -> Optional[Table]:
    """The rows as a table whose every line fits `width` and whose cells break only at spaces and
    after hyphens (the first column not at all with `keep_first`: a property name); None where the
    narrowest such table is too wide."""
    columns = list(zip(heads, *rows))
    cells = [max((layout.natural_width(t) for t in col[1:]), default=0) for col in columns]
    # a wide cell is capped (it reads better wrapped), a heading is not (where there is room)
    natural = [max(len(col[0]), c if i == 0 else min(c, MAX_CELL)) for i, (col, c) in enumerate(zip(columns, cells))]
    minimum = [max(layout.min_width(t) for t in col) for col in columns]
    if keep_first:
        minimum[0] = natural[0]
    widths = layout.fit(natural, minimum, width - GAP * (len(heads) - 1), last=(0,))
    if widths is None:
        return None
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, padding=(0, 1))
    for head, w in zip(heads, widths):
        table.add_column("\n".join(layout.wrap(head, w)), width=w, no_wrap=True)
    for cells in rows:
        table.add_row(*("\n".join(layout.wrap(c, w)) if c else "" for c, w in zip(cells, widths)))
    return table


def _stacked(heads: list[str], rows: list[list[str]], width: int) -> list[str]:
    """A table too wide for the terminal, one cell a line: the first cell, then `head: cell` indented."""
    out = []
    for cells in rows:
        out.append(cells[0])
        for head, cell in zip(heads[1:], cells[1:]):
            if cell:
                out += ["  " + line for line in layout.wrap_hanging(f"{head}: {cell.replace(chr(10), ' ')}",
                                                                    width - 2, 4)]
    return out


def tree_block(console: Console, row: ReleaseCheck, notes: Notes, base=None) -> None:
    """Print one tree: its header, its properties by engine, our transcription's differences and
    its footnotes."""
    width = console.width
    for line in layout.wrap_hanging(_title(row), width, INDENT):
        console.print(Text(line, style="bold"), soft_wrap=True)
    value_width = width - INDENT - len("conformance") - 2
    grid = Table.grid(padding=(0, 2))
    grid.add_column(width=len("conformance"), no_wrap=True)
    grid.add_column(width=value_width, overflow="fold")  # only a path longer than the line is folded
    for label, value in header(row, notes, width):
        grid.add_row(label, "\n".join(layout.wrap(value, value_width)))
    console.print(Padding(grid, (0, 0, 0, INDENT)))
    heads, rows = property_columns(row, notes, base)
    if rows:
        console.print()
        table = _table(heads, rows, width - INDENT) or _table(*merged_model(heads, rows), width - INDENT)
        if table is not None:
            console.print(Padding(table, (0, 0, 0, INDENT)))
        else:
            for line in _stacked(heads, rows, width - INDENT):
                console.print(" " * INDENT + line, soft_wrap=True)
    if row.status == CHECKED and not row.withheld:
        own, ours = row.verdicts("own", UPSTREAM), row.verdicts("ours", UPSTREAM)
        for line in layout.wrap_hanging(_ours_line(row, own, ours, notes), width - INDENT, 2):
            console.print(" " * INDENT + line, soft_wrap=True)
    covered = coverage_line(row, notes)
    if covered:
        console.print()
        for line in layout.wrap_hanging(covered, width - INDENT, 2):
            console.print(" " * INDENT + line, soft_wrap=True, highlight=False)
    footnotes = notes.pending(width)
    if footnotes:
        console.print()
        for line in footnotes:
            console.print(line, soft_wrap=True, highlight=False)
    console.print()


# ---------------------------------------------------------------- a range


SUMMARY_HEADS = ("release", "family", "conformance", "the model: violated", "its code: violated")
LEGEND = ("N: the length of the shortest counterexample; *: found only without an upstream assumption (a scenario "
          "with drops_assumption); bounded: a limit cut the search before a verdict; one release's cases, footnotes "
          "and trace commands: " + layout.unbroken("prefetch-check sglang RELEASE"))


def _violated(verdicts: dict, dropped_only: set, marks: dict) -> str:
    """`host_memory 33*, progress 38; bounded: tp_agreement`; `none` where every property holds."""
    def named(prop: str, text: str) -> str:
        return layout.unbroken(text) + (f" ({marks[prop]})" if marks.get(prop) else "")

    failed = [named(p, f"{p} {v.steps}{'*' if p in dropped_only else ''}") for p, v in verdicts.items()
              if v.verdict == VIOLATED]
    cut = [named(p, p) for p, v in verdicts.items() if v.verdict == BOUNDED]
    parts = [", ".join(failed)] if failed else []
    if cut:
        parts.append("bounded: " + ", ".join(cut))
    return "; ".join(parts) or "none"


def summary_cells(row: ReleaseCheck, base) -> tuple[tuple[str, Optional[str]], ...]:
    """A tree's summary cells without their footnote numbers: (text, the footnote it needs or None)."""
    c = row.conformance
    conformance = ("-", None)
    if c.planned:
        headline = conformance_headlines(row)[-1]
        conformance = (headline, None) if c.conforms else (headline, conformance_text(row))
    if row.status == CHECKED and not row.withheld:
        own, dropped = row.verdicts("own"), row.verdicts("own", DROPPED)
        upstream = row.verdicts("own", UPSTREAM)
        only = {p for p, v in own.items() if upstream[p].verdict not in FAILING and dropped[p].verdict in FAILING}
        marks = base.marks(row) if base is not None else {}
        model = (_violated(own, only, marks), None)
        ours = row.verdicts("ours")
        differs = [f"{p} {ours[p].verdict}" + (f" ({ours[p].steps} steps)" if ours[p].verdict == VIOLATED else "")
                   for p in ours if (ours[p].verdict, ours[p].steps) != (own[p].verdict, own[p].steps)]
        if differs:
            model = (model[0], f"ours ({TRANSCRIPTION}), over every case: " + ", ".join(differs))
    elif row.status == CHECKED:
        model = ("withheld", "the model's verdicts are withheld: its code diverges from the model (conformance)")
    elif row.status == NOT_ASKED:
        model = ("not asked", None)
    else:
        model = (row.status, row.note or None)
    if row.code.withheld:
        code = (NOT_CHECKED, row.code.withheld)
    elif row.code.ran:
        marks = base.code_marks(row) if base is not None else {}
        code = (_violated(row.code.verdicts(), set(), marks), code_note(row) or None)
    else:
        code = ("-", row.code.note or None)
    return ((row.family or "-", None), conformance, model, code)


def summary(console: Console, rows: list[ReleaseCheck], notes: Notes, base=None) -> None:
    """Print a range: a row per group of consecutive trees that read the same, then the footnotes."""
    groups: list[tuple[list[ReleaseCheck], tuple]] = []
    for row in rows:
        cells = summary_cells(row, base)
        if groups and groups[-1][1] == cells:
            groups[-1][0].append(row)
        else:
            groups.append(([row], cells))
    table_rows = []
    for members, cells in groups:
        label = members[0].label if len(members) == 1 else f"{members[0].label}{layout.NBSP}..{layout.NBSP}{members[-1].label}"
        shown = label.replace(layout.NBSP, " ")
        texts = [label] + [text + (" " + notes.add(Note(f"{shown}: {note}")) if note else "") for text, note in cells]
        table_rows.append(texts)
    width = console.width
    table = _table(list(SUMMARY_HEADS), table_rows, width, keep_first=False)
    if table is None:  # the release, its family and conformance in one cell
        heads = ["release, family, conformance"] + list(SUMMARY_HEADS[3:])
        merged = [["\n".join(r[:3])] + r[3:] for r in table_rows]
        table = _table(heads, merged, width, keep_first=False)
        if table is None:
            for line in _stacked(list(SUMMARY_HEADS), table_rows, width):
                console.print(line, soft_wrap=True)
    if table is not None:
        console.print(table)
    for line in layout.wrap(LEGEND, width):
        console.print(line, soft_wrap=True, highlight=False)
    footnotes = notes.pending(width)
    if footnotes:
        console.print()
        for line in footnotes:
            console.print(line, soft_wrap=True, highlight=False)
    console.print()


def show(console: Console, rows: list[ReleaseCheck], base=None, as_summary: bool = False) -> None:
    """The report of `rows`: a block per tree, or (a range, commits) one summary table."""
    notes = Notes()
    if as_summary:
        summary(console, rows, notes, base)
        return
    for row in rows:
        tree_block(console, row, notes, base)


def lines(console: Console, texts: list[str], indent: int = 2) -> None:
    """Plain lines wrapped to the console, each kept at its own indentation and its continuation
    lines indented by `indent` more."""
    for text in texts:
        lead = len(text) - len(text.lstrip(" "))
        wrapped = layout.wrap_hanging(text, console.width - lead, indent) if text.strip() else [""]
        for line in wrapped:
            console.print(" " * lead + line, soft_wrap=True, highlight=False)
