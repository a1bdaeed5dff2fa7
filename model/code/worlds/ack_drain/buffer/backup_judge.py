"""What a run of buffer_only's write path (CodeConfig.backup, backup_run.py) is judged for at its
end, beyond the buffer world's properties: the pipeline's own contract for its write side
(pipeline.py `is_idle`: no write queued, staged or awaiting its storage ack; the node's lock given
back at the D2H ack), every node of the computed request still on the device stored once nothing is
queued or staged (under write_through the insert queues it; a flush that retires it unwritten
escaped a mutation trial) unless upstream drops it by design (a span larger than the host pool,
and every node below it), and the write staging's books: `write_staged_tokens_` (what
flush_pending_writes compares with its cap before it stages the queue head) back at 0 once no write
is staged or awaiting its ack (a mutation trial's escape: the storage ack's decrement dropped got
0.5.23's verdicts, since no case queues enough writes to meet the cap; docs/code-mutants.md)."""

from __future__ import annotations

from prefetch_check.model.code.rt.verdicts import LEAK, Finding
from prefetch_check.model.code.worlds.ack_drain.buffer.device_tree import ROOT

LOCKED = ("a device span locked forever: never evictable, and every later write of it is believed in flight "
          "and skipped")
WEDGED = ("the write queue wedged: its head never stages, and every write behind it, whatever its size, waits "
          "forever (head-of-line)")
STUCK = "a write the pipeline believes in flight forever: its pages are never stored and never written again"
STAGING_BOOKS = ("write staging budget lost: write_staged_tokens_ counts staging no write holds, so "
                 "flush_pending_writes holds the queue head back against it; at the cap every later write "
                 "waits forever")
NEVER_WRITTEN = ("a computed node never stored: its write was dropped or retired unwritten, so every server sharing the storage "
                 "misses it until a later hit of the node queues it again")
UNSTORED = ("pages believed stored that storage does not have: never written again, and every server sharing the "
            "storage misses them")


def judge(run, terminal: bool, found: list[Finding]) -> list[Finding]:
    """The findings of a write-path run's end (none before, or where the run already failed)."""
    out: list[Finding] = []
    if not terminal or not getattr(run.config, "backup", False):
        return out
    if any(f.prop in ("not_modelled", "deadlock_freedom", "progress") for f in found):
        return out
    steps = len(run.baton.steps)
    for r in run.ranks:
        p = r.cache.buffer_pipeline
        if r.tree.locked:
            by = "the write path" + (" or a load-back" if getattr(run.config, "load_back", False) else "")
            out.append(Finding("anchor_release", f"rank {r.index}: device nodes {sorted(r.tree.locked)} still locked "
                               f"by {by} when every thread is idle", LOCKED, "", steps))
        if p is None:
            continue
        staged = sorted(p.ongoing_write_through) + sorted(p.ongoing_backup)
        if staged:
            out.append(Finding("host_memory", f"rank {r.index}: writes {staged} staged and never acked when every "
                               "thread is idle", LEAK, "", steps))
        books = getattr(p, "write_staged_tokens_", 0)
        if books and not staged:
            out.append(Finding("host_memory", f"rank {r.index}: write_staged_tokens_ is {books} with no write staged "
                               "or awaiting its ack when every thread is idle", STAGING_BOOKS, "", steps))
        if p.pending_write_queue and not staged:  # nothing in flight will free staging: the FIFO is wedged
            out.append(Finding("progress", f"rank {r.index}: {len(p.pending_write_queue)} write(s) queued with nothing "
                               "staged or in flight to make room when every thread is idle", WEDGED, "", steps))
        if p.inflight_backup_pools and not p.pending_write_queue and not staged:
            out.append(Finding("progress", f"rank {r.index}: nodes {sorted(p.inflight_backup_pools)} believed in "
                               "flight with no write queued, staged or awaiting its ack", STUCK, "", steps))
        if not staged and not p.pending_write_queue:  # at rest: a computed node still on the device is stored
            for node in _owed(r.tree, run.computed_request(), r.cc.mem_pool_host.size):
                missing = [k for k in r.tree.storage_keys(node) if not r.cc.storage_backend.holds(k)]
                if missing:
                    out.append(Finding("progress", f"rank {r.index}: node {node} of the computed request, still on the "
                                       f"device, its pages {missing} never stored when every thread is idle",
                                       NEVER_WRITTEN, "", steps))
        unstored = [k for k in _believed(r.cache.storage_existence_cache) if not r.cc.storage_backend.holds(k)]
        if unstored and not staged:
            out.append(Finding("progress", f"rank {r.index}: pages {unstored} believed stored, never stored when "
                               "every thread is idle", UNSTORED, "", steps))
    return out


def _owed(tree, request: int, pool_tokens: int) -> list[int]:
    """The computed request's resident nodes the write path owes storage: upstream drops, by design,
    a node whose span could never stage in the whole host pool (`_backup_oversize`) and with it
    every node below it (`_backup_parent_covered`: no write above a dropped parent)."""
    owed: dict[int, bool] = {}

    def owes(node: int) -> bool:
        if node not in owed:
            parent = tree.parent_of(node)
            fits = len(tree.storage_keys(node)) * tree.page_size <= pool_tokens
            owed[node] = fits and (parent == ROOT or owes(parent))
        return owed[node]
    return [n for n in tree.resident_nodes(request) if owes(n)]


def _believed(beliefs) -> list:
    """The keys the storage beliefs (StorageExistenceCache) hold, every pool's; a release of another
    shape: none read."""
    pools = getattr(beliefs, "_pools", None) or {}
    return [k for b in pools.values() for k in getattr(b, "_entries", ())]
