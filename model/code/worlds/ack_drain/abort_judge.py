"""request_release in the worlds without the scheduler's retry path (CodeConfig.abort_round): a
request its client aborted leaves nothing of itself in the cache once every thread is idle.
`release_aborted_request` retires its in-flight prefetch (the operation, the host slots it holds,
its anchor's host lock) and drops its deadline and loaded-token records; an entry left in one of
them is held for good, and a client reusing the rid inherits it. The retry world judges the same
records with its own scheduler (retry_judge.py)."""

from __future__ import annotations

from prefetch_check.model.code.rt.verdicts import Finding
from prefetch_check.model.code.worlds.ack_drain.retry_judge import LEFT, PROPERTY, held_by


def judges(config) -> bool:
    """Whether a run of `config` has client aborts this judge reads (the retry world has its own)."""
    return config.abort_round is not None and not config.retries


def judge(run, terminal: bool, found: list[Finding]) -> list[Finding]:
    """The findings of a run's end (none before, or where the run already failed)."""
    if not terminal or not judges(run.config):
        return []
    if any(f.prop in ("not_modelled", "deadlock_freedom", "no_crash") for f in found):
        return []
    out, steps = [], len(run.baton.steps)
    for rank in run.ranks:
        for q in rank.aborted:
            handle = rank.handles[q]
            kept = held_by(rank.cache, handle)
            if kept:
                out.append(Finding(PROPERTY, f"rank {rank.index}: req{q} was aborted, the cache still holds it in "
                                   f"{', '.join(kept)}", LEFT, "", steps))
    return out
