"""What the device side of a tree stand-in does the same in the buffer world and cache mode's
write path: the resumable insert's walk (unified_tree_core begin_insert / resume_insert /
end_insert, finished in one step) and the write path's device lock on a node (inc_lock_ref from
the backup's launch to its D2H ack; a lock holds the node's `lock_path`). A tree stand-in mixes
them in; it keeps `_inserting` and `locked` (node -> lock count)."""

from __future__ import annotations

from dataclasses import dataclass, field

from prefetch_check.model.code.stand_ins.tree import InsertResult, _Lock


@dataclass
class InsertStep:
    """One step of the resumable insert: its cache actions, the result at once."""

    result: InsertResult
    actions: list = field(default_factory=list)


class InsertWalk:
    """The insert walk around a tree stand-in's `begin_insert` (which sets `_inserting`)."""

    def has_ongoing_insert(self) -> bool:
        self.world.baton.touch(self._pc_name, write=False)
        return self._inserting

    def resume_insert(self):
        raise AssertionError("the insert stand-in finishes in begin_insert")

    def end_insert(self) -> list:
        self.world.baton.touch(self._pc_name)
        self._inserting = False
        return []


class DeviceLocks:
    """The write path's lock on a device node: it keeps the node's rows through eviction, and an
    unlock without its lock is an anchor_release finding."""

    def lock_path(self, node_id) -> tuple:
        """The nodes a lock on `node_id` holds: the node and its ancestors below the root (a node of
        these trees hangs off the root unless a split gave it a parent)."""
        return (node_id,)

    def inc_lock_ref(self, node_id, skip_lock_components=()):
        self.world.baton.point(f"lock device node {node_id} (rank {self.rank})")
        self.world.baton.touch(self._pc_name)
        for node in self.lock_path(node_id):
            self.locked[node] = self.locked.get(node, 0) + 1
        return _Lock(node_id)

    def dec_lock_ref(self, node_id, params=None, skip_swa: bool = False):
        self.world.baton.point(f"unlock device node {node_id} (rank {self.rank})")
        self.world.baton.touch(self._pc_name)
        for node in self.lock_path(node_id):
            left = self.locked.get(node, 0) - 1
            if left < 0:
                site = self.world.baton.current().point.site if self.world.baton.current() else "?"
                self.world.fault("anchor_release", f"rank {self.rank}: device node {node} unlocked more often than "
                                 "locked", "a device span another write still reads becomes evictable under it: the "
                                 "D2H copy reads freed KV", site)
            if left > 0:
                self.locked[node] = left
            else:
                self.locked.pop(node, None)
