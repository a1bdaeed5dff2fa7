"""Results as Markdown, for a pull-request comment or a CI step summary."""

from __future__ import annotations

from prefetch_check.explorer.report.cells import FAILS, LEGEND, cell, failure_line, properties, seconds, states
from prefetch_check.explorer.report.records import Labels, summary


def _escape(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def to_markdown(entries, labels: Labels = Labels()) -> str:
    props = properties(entries)
    hold, fail = summary(entries)
    if hold + fail == 0:
        verdict = "no expectations stated"
    else:
        verdict = f"{hold} expectations hold, {fail} fail " + ("❌" if fail else "✅")
    lines = [f"## {labels.title}: {verdict}", ""]
    header = [labels.subject, labels.variant] + [p.replace("_", " ") for p in props] + ["states", "time"]
    lines.append("| " + " | ".join(header) + " |")
    lines.append("|" + "|".join(["---"] * 2 + [":-:"] * len(props) + ["--:"] * 2) + "|")
    for e in entries:
        cells = []
        for p in props:
            text = cell(e, p)
            cells.append(f"**{text}**" if text.endswith(FAILS) else text)
        row = [_escape(e.subject), _escape(e.variant)] + cells + [states(e), seconds(e)]
        lines.append("| " + " | ".join(row) + " |")
    lines += ["", f"<sub>{LEGEND}</sub>", ""]
    failed = [(e, x) for e in entries for x in e.failed]
    if failed:
        lines += ["### Expectations that do not hold", ""]
        lines += [f"- {FAILS} {_escape(failure_line(e, x))}" for e, x in failed]
        lines.append("")
    return "\n".join(lines) + "\n"
