"""What a run of cache mode's write path (CodeConfig.backup, run.py) is judged for at its end,
beyond the cache world's properties: every write-through acked and every storage backup acked
(`ongoing_write_through`, `ongoing_backup` empty: each holds a device or host lock), and each node
the D2H ack published, and each node holding a host value (a fragment of a split node too), stored
in full (`_finish_write_through_ack` stores every published node under write_through), unless the
storage is a capped file storage (CodeConfig.file_pages: its evictor refuses or evicts by design). The device lock left held is buffer/backup_judge.py's (the same `tree.locked`)."""

from __future__ import annotations

from prefetch_check.model.code.rt.verdicts import Finding

UNACKED = ("a write-through never acked: its node's device lock and host slots are held forever, and the "
           "node is never stored")
UNSTORED = ("a backup never acked: its node's host lock is held forever (never evictable from host), and "
            "whether it was stored is never known")
LOST = ("a node written through to host is never stored: under write_through every server sharing the storage "
        "misses it, and this one never writes it again (it is believed backed up)")


def judge(run, terminal: bool, found: list[Finding]) -> list[Finding]:
    """The findings of a cache-mode write-path run's end (none before, or where the run already failed)."""
    out: list[Finding] = []
    if not terminal or not getattr(run.config, "backup", False) or run.config.host_memory_mode != "cache":
        return out
    if any(f.prop in ("not_modelled", "deadlock_freedom", "progress") for f in found):
        return out
    steps = len(run.baton.steps)
    for r in run.ranks:
        cache, tree = r.cache, r.tree
        if cache.ongoing_write_through:
            out.append(Finding("progress", f"rank {r.index}: write-through of nodes {sorted(cache.ongoing_write_through)} "
                               "never acked when every thread is idle", UNACKED, "", steps))
        if cache.ongoing_backup:
            out.append(Finding("progress", f"rank {r.index}: storage backups {sorted(cache.ongoing_backup)} never acked "
                               "when every thread is idle", UNSTORED, "", steps))
        if cache.ongoing_write_through or cache.ongoing_backup or run.config.file_pages is not None:
            continue  # a capped file storage may refuse a write or evict a stored page, by design
        stored = r.cc.storage_backend.stored
        for node in sorted(tree.written | set(tree.host_value)):  # a split fragment's host value too
            missing = [k for k in tree.storage_keys(node) if k not in stored]
            if missing:
                out.append(Finding("progress", f"rank {r.index}: node {node} written through to host, its pages "
                                   f"{missing} never stored when every thread is idle", LOST, "", steps))
    return out
