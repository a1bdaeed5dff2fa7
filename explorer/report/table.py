"""The final verdict table in the terminal (rich).

One block of rows per subject (scenario case), one row per property, one column per
variant (predicate) side by side, and a last row with each search's states and time.
Narrow enough for an 80-column terminal with two variants.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Callable, Optional

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from prefetch_check.explorer.report.cells import FAILS, LEGEND, cell, failure_line, properties, seconds, states
from prefetch_check.explorer.report.records import Labels, summary
from prefetch_check.explorer.result import BOUNDED, NOT_APPLICABLE, VERIFIED, VIOLATED

STYLE = {VERIFIED: "green", VIOLATED: "red", BOUNDED: "yellow", NOT_APPLICABLE: "dim"}


def _groups(entries):
    groups: "OrderedDict[str, dict]" = OrderedDict()
    variants: "OrderedDict[str, None]" = OrderedDict()
    for e in entries:
        groups.setdefault(e.subject, {})[e.variant] = e
        variants.setdefault(e.variant)
    return groups, list(variants)


def _subject_lines(subject: str, rows: int) -> list[str]:
    """`demo[size=2, mode=fast]` -> ["demo", "  size=2", "  mode=fast"], padded to `rows`."""
    lines = [subject]
    if subject.endswith("]") and "[" in subject:
        name, _, label = subject[:-1].partition("[")
        lines = [name] + [f"  {part}" for part in label.split(", ")]
        if len(lines) > rows:  # more parameters than rows: keep them on one line
            lines = [name, "  " + label]
    return lines + [""] * (rows - len(lines))


def verdict_table(entries, labels: Labels = Labels()) -> Table:
    groups, variants = _groups(entries)
    props = properties(entries)
    table = Table(title=labels.title, box=box.SIMPLE_HEAD, header_style="bold", pad_edge=False)
    table.add_column(labels.subject, overflow="fold", max_width=36)
    table.add_column("property", no_wrap=True)
    for v in variants:
        table.add_column(v, no_wrap=True, min_width=10)
    for n, (subject, by_variant) in enumerate(groups.items()):
        if n:
            table.add_section()
        names = _subject_lines(subject, len(props) + 1)
        for i, p in enumerate(props):
            row = [Text(names[i], style="bold" if i == 0 else ""), Text(p)]
            for v in variants:
                e = by_variant.get(v)
                r = e.result.results.get(p) if e else None
                text = cell(e, p) if e else "-"
                style = STYLE.get(r.verdict, "") if r else ""
                if text.endswith(FAILS):
                    style = "bold reverse " + style
                row.append(Text(text, style=style))
            table.add_row(*row)
        footer = [Text(names[-1]), Text("states, time", style="dim")]
        for v in variants:
            e = by_variant.get(v)
            footer.append(Text(f"{states(e)}, {seconds(e)}" if e else "-", style="dim"))
        table.add_row(*footer)
    return table


def print_report(console: Console, entries, labels: Labels = Labels(), hint: Optional[Callable] = None) -> None:
    """The table, the legend, then the expectation check with every failure spelled out;
    `hint(entry, expectation)` may give lines (e.g. the command that shows a counterexample),
    printed under the failure they belong to."""
    console.print(verdict_table(entries, labels))
    console.print(Text(LEGEND, style="dim"))
    hold, fail = summary(entries)
    if hold + fail == 0:
        console.print(Text("No expectations stated: verdicts reported, nothing judged."))
        return
    style = "bold red" if fail else "bold green"
    console.print(Text(f"Expectations: {hold} hold, {fail} fail.", style=style))
    for e in entries:
        for x in e.failed:
            console.print(Text(f"{FAILS} {failure_line(e, x)}", style="red"), soft_wrap=True)
            for line in (hint(e, x) if hint else None) or ():
                console.print(Text(f"  {line}"), soft_wrap=True)
