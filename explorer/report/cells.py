"""How one verdict reads in a report cell, shared by every output format."""

from __future__ import annotations

from prefetch_check.explorer.result import BOUNDED, NOT_APPLICABLE, VERIFIED, VIOLATED

SHORT = {VERIFIED: "VERIFIED", VIOLATED: "VIOLATED", BOUNDED: "BOUNDED", NOT_APPLICABLE: "n/a"}
HOLDS, FAILS = "✓", "✗"
LEGEND = f"{HOLDS} as expected   {FAILS} NOT as expected   (no mark: no expectation)   n/a = NOT APPLICABLE"


def mark(entry, prop: str) -> str:
    """✓ / ✗ when the scenario states an expectation for this property, else ''."""
    e = entry.expectation(prop)
    if e is None:
        return ""
    return HOLDS if e.holds else FAILS


def cell(entry, prop: str) -> str:
    """`VIOLATED ✓`: the verdict and whether it is the expected one."""
    r = entry.result.results.get(prop)
    if r is None:
        return "-"
    m = mark(entry, prop)
    return f"{SHORT.get(r.verdict, r.verdict)} {m}".rstrip()


def properties(entries) -> list[str]:
    """Every property name, in the order the results list them (first seen first)."""
    seen: dict[str, None] = {}
    for e in entries:
        for name in e.result.results:
            seen.setdefault(name)
    return list(seen)


def seconds(entry) -> str:
    s = entry.result.stats.total_seconds
    return f"{s:.2f}s"


def states(entry) -> str:
    st = entry.result.stats
    return f"{st.states:,}" + ("" if st.complete else "+")


def failure_line(entry, e) -> str:
    """One line per failed expectation: where, expected, got, the checker's reason, the author's why."""
    r = entry.result.results[e.prop]
    text = f"{entry.subject} / {entry.variant} / {e.prop}: expected {e.expected}, got {e.actual}"
    if r.reason:
        text += f" ({r.reason})"
    if e.why:
        text += f"; the scenario says why: {e.why}"
    return text
