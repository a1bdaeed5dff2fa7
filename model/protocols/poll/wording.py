"""Phrases several step descriptions share: how a collective is named, what an arrival led to."""

from __future__ import annotations

from prefetch_check.model.interface import DONE


def op_label(protocol, kind: int) -> str:
    """`all_reduce(MAX)`: the reduction the protocol declares for this collective kind."""
    return f"all_reduce({protocol.collectives[kind].reduce.__name__.upper()})"


def arrival(reg) -> str:
    """What an arrival led to, read off the rank's register after the step."""
    if reg and reg[1] == DONE:
        return f" (last to arrive: result {list(reg[2])})"
    return " (waits for the other ranks)"


def vote_text(vote: tuple, shape: str) -> str:
    """What a rank brought to the termination collective."""
    if shape == "late2025":
        return f"[not can_terminate={vote[0]}, terminated={vote[1]}]"
    return f"[not can_terminate={vote[0]}]"
