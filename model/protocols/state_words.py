"""Where the scheduler is, in words, for the trace viewers. Each protocol names its scheduler
states in a table (`scheduler_states`: kind -> text, `{q}` the request); a variant that adds a
state extends the table with its own name, and a state no table names is shown as its raw
value: a viewer never fails on a state it was not told about."""

from __future__ import annotations


def pc_words(names: dict, pc: tuple) -> str:
    """The scheduler's program counter `(kind, q, ...)` in words, or its raw value."""
    text = names.get(pc[0])
    if text is None:
        return f"s_pc={tuple(pc)} (not named in scheduler_states)"
    return text.format(q=pc[1])
