"""The prefetch budget's books, judged at the end of an ack-drain run where every request was
admitted or aborted: the controller's `prefetch_tokens_occupied` (what `prefetch_rate_limited`
compares with `prefetch_capacity_limit`) is back where the run started (0) once no prefetch is in
flight, no staged bounce is held and no load-back is pending. Cache mode reserves the requested
span at issue and gives it back when the prefetch is handled, retired or revoked; buffer mode
grants it at the hit's allocation and gives it back at the load ack, a drop or an abort. Occupancy
left behind (or given back twice) is a budget that no prefetch holds: the limiter declines
prefetches for it from then on, which no other check sees unless a later request happens to need
that budget in the same run (issue 29's held-out edits: a decrement dropped or of the wrong sign
at a load ack, a staged hold's release or a retire got 0.5.23's verdicts)."""

from __future__ import annotations

from prefetch_check.model.code.rt.verdicts import Finding

BOOKS = ("prefetch budget lost: prefetch_tokens_occupied counts tokens no prefetch holds, so "
         "prefetch_rate_limited declines prefetches for them until the server restarts")


def judge(run, terminal: bool, found: list[Finding]) -> list[Finding]:
    """The findings of a run's end (none before, or where the run already failed otherwise)."""
    if not terminal or any(f.prop in ("not_modelled", "deadlock_freedom", "progress", "no_crash") for f in found):
        return []
    out, steps = [], len(run.baton.steps)
    for r in run.ranks:
        occupied = getattr(r.cc, "prefetch_tokens_occupied", None)
        if not occupied or r.cache.ongoing_prefetch:
            continue
        p = getattr(r.cache, "buffer_pipeline", None)
        if p is not None and (vars(p).get("staged_prefetches") or vars(p).get("ongoing_buffer_load_back")):
            continue
        out.append(Finding("host_memory", f"rank {r.index}: prefetch_tokens_occupied is {occupied} when no prefetch "
                           "is in flight, staged or loading back (every request admitted or aborted)", BOOKS, "",
                           steps))
    return out
