"""What a run of cache mode's write path (CodeConfig.backup, run.py) is judged for at its end,
beyond the cache world's properties: every write-through acked and every storage backup acked
(`ongoing_write_through`, `ongoing_backup` empty: each holds a device or host lock), and each node
the D2H ack published, and each node holding a host value (a fragment of a split node too), stored
in full (`_finish_write_through_ack` stores every published node under write_through), unless the
storage is a capped file storage (CodeConfig.file_pages: its evictor refuses or evicts by design).
With nothing in flight on a rank, every device node's rows hold its pages, no load-back pins
one and no node is still marked write-through pending; with a load-back (CodeConfig.load_back), it is acked. The device lock left held is
buffer/backup_judge.py's (the same `tree.locked`)."""

from __future__ import annotations

from prefetch_check.model.code.rt.verdicts import Finding
from prefetch_check.model.code.worlds.ack_drain.buffer.device_tree import request_of_node

UNACKED = ("a write-through never acked: its node's device lock and host slots are held forever, and the "
           "node is never stored")
UNSTORED = ("a backup never acked: its node's host lock is held forever (never evictable from host), and "
            "whether it was stored is never known")
UNLOADED = ("a load-back never acked: its node's device and host locks are held forever, and the request "
            "waiting on its rows never runs")
PINNED = ("a load-back's pin never cleared: the node's host slots are never reclaimed as duplicates, and every "
          "other load-back of them backs off forever")
STALE_ROWS = "wrong KV data served: a request reads device rows that do not hold its pages"
MARKED = ("a node marked write-through pending forever: it is believed in flight, so every later "
          "write-through of it is skipped and a change to it is never backed up")
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
        loading = getattr(cache, "ongoing_load_back", None)
        if loading and run.config.load_back:
            out.append(Finding("progress", f"rank {r.index}: load-back of nodes {sorted(loading)} never acked when "
                               "every thread is idle", UNLOADED, "", steps))
        at_rest = not (cache.ongoing_write_through or cache.ongoing_backup or loading)
        if at_rest:
            out.extend(_at_rest(r, steps))
        # after the storage's findings: a mark left behind is what an unstored node's edits also leave
        marked = [Finding("progress", f"rank {r.index}: nodes {sorted(tree.marks)} still marked write-through "
                          "pending when every thread is idle", MARKED, "", steps)] if at_rest and tree.marks else []
        if cache.ongoing_write_through or cache.ongoing_backup or run.config.file_pages is not None:
            out.extend(marked)
            continue  # a capped file storage may refuse a write or evict a stored page, by design
        stored = r.cc.storage_backend.stored
        for node in sorted(tree.written | set(tree.host_value)):  # a split fragment's host value too
            missing = [k for k in tree.storage_keys(node) if k not in stored]
            if missing:
                out.append(Finding("progress", f"rank {r.index}: node {node} written through to host, its pages "
                                   f"{missing} never stored when every thread is idle", LOST, "", steps))
        out.extend(marked)
    return out


def _at_rest(r, steps: int) -> list[Finding]:
    """With nothing in flight on the rank: a device node whose rows do not hold its pages (a
    computed node's rows hold them from its prefill, a loaded one's from the H2D copy), and under
    write_back a load-back's pin left on a node (finish_load_back clears them at the ack). A host
    lock left held is rt/verdicts.py's (the tree's count of them)."""
    out, tree = [], r.tree
    if tree.load_pins:
        out.append(Finding("anchor_release", f"rank {r.index}: nodes {sorted(tree.load_pins)} still pinned by a "
                           "load-back when every thread is idle", PINNED, "", steps))
    for node in sorted(tree.resident):
        request, _ = request_of_node(node)
        first, page = tree.start.get(node, 0), tree.page_size
        for k, row in enumerate(tree.resident[node]):
            want, got = f"q{request}p{(first + k) // page}", tree.device.data.get(row)
            if got != want:
                out.append(Finding("data_integrity", f"rank {r.index}: device row {row} of node {node} holds "
                                   f"{got or 'nothing'}, not {want}", STALE_ROWS, "", steps))
                break
    return out
