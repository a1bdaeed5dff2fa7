"""A counterexample as text: one line per step (thread, rank, the file:line of the point in the
tree, what it did and saw), then the violation and what it means for a serving system."""

from __future__ import annotations

from prefetch_check.model.code.config import Violation


def render(v: Violation, width: int = 60) -> str:
    lines = [f"{v.prop}: {v.message}", f"  consequence: {v.consequence}", f"  at {v.site or '(end of run)'}",
             f"  schedule ({len(v.schedule)} steps): {' '.join(v.schedule)}", ""]
    lines.append(f"{'#':>4}  {'thread':<6} {'site':<50} what")
    for n, s in enumerate(v.steps, start=1):
        what = s.label + (f"  -> {s.observed}" if s.observed else "")
        if len(what) > width * 2:
            what = what[: width * 2 - 3] + "..."
        lines.append(f"{n:>4}  {s.choice:<6} {s.site:<50} {what}")
    return "\n".join(lines)
