"""What a buffer_only run is judged for beyond the prefetch path's properties (rt/verdicts.py), at
the end of a run where every request was admitted or aborted:

- anchor_release: BufferModePipeline's own contract, pipeline.py `release_anchor_lock` ("called
  at every consume/drop/abort exit") and `is_idle` ("no ... anchor pins"): no FULL pin left on the
  device tree and no anchor lock or locked tokens left in the pipeline; an unpin without its pin
  is seen when it happens (device_tree.py);
- host_memory: a staged bounce or a load-back never consumed (its host slots are also held);
- data_integrity: a device slot of a request's resident span holding another page than its
  position's (what the H2D copied, device_pool.py)."""

from __future__ import annotations

from prefetch_check.model.code.rt.verdicts import LEAK, Finding

PROPERTY = "anchor_release"
PINNED = ("a device prefix pinned forever: never evictable, and the pipeline's anchor-lock budget shrinks until "
          "prefetches park for it (cap_busy) or launch with their splice base unpinned")
WRONG = "wrong KV data served: the device span spliced in holds pages other than the request's"


def judge(run, terminal: bool, found: list[Finding]) -> list[Finding]:
    """The findings of a buffer_only run's end (none before, or where the run already failed)."""
    out: list[Finding] = []
    if not terminal or run.config.host_memory_mode != "buffer_only":
        return out
    if any(f.prop in ("not_modelled", "deadlock_freedom", "progress") for f in found):
        return out
    steps = len(run.baton.steps)
    for r in run.ranks:
        p, tree = r.cache.buffer_pipeline, r.tree
        if tree.pins:
            out.append(Finding(PROPERTY, f"rank {r.index}: device nodes {sorted(tree.pins)} still pinned when every "
                               "request was admitted or aborted", PINNED, "", steps))
        f = vars(p).get  # a field an edited tree never set: its own code's AttributeError says so (no_crash)
        locks, locked = f("anchor_locks", {}), f("anchor_locked_tokens_", 0)
        if locks or locked:
            out.append(Finding(PROPERTY, f"rank {r.index}: anchor locks {sorted(h.rid for h in locks)} "
                               f"({locked} tokens) left in the pipeline", PINNED, "", steps))
        left = sorted(h.rid for h in f("staged_prefetches", ())) + sorted(map(str, f("ongoing_buffer_load_back", ())))
        if left:
            out.append(Finding("host_memory", f"rank {r.index}: staged prefetches or load-backs {left} never consumed "
                               "or released", LEAK, "", steps))
        for q, slots in sorted(tree.resident.items()):
            bad = tree.device.check_resident(q, slots)
            if bad:
                out.append(Finding("data_integrity", f"rank {r.index}: req{q}'s device span: {bad[0]}", WRONG, "", steps))
    return out
