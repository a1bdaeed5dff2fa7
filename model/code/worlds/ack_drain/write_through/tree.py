"""The tree of cache mode's write path (CodeConfig.backup in host_memory_mode cache): the host tree
(stand_ins/tree.py) with the device side a write-through backup reads and writes through
`tree_core` (unified_tree_core.py): the insert of the computed request, which under write_through
(write_through_threshold 1: a new node's first hit fires) hands the cache a BackupKV of its node;
`build_backup_spec` (the node's device rows), `commit_backup` (the host slots `cc.write` took become
the node's host value), the pending-write marks, the node's device lock from the backup's launch
to its D2H ack, and `build_storage_backup_spec` (the node's host value and page hashes for
`write_backup_storage`).

A node is the computed request's whole key, unless a second computed request sharing its first
page is inserted (CodeConfig.split_round): its insert splits the node at that page as upstream's
`_split_node` does (the prefix a new node, the suffix keeping the id; rows, host value, device and
host locks, the pending write-through mark and the written mark carried to both), and where the
node's write-through is pending it hands the cache the split's action (0.5.23
UpdatePendingBackupOnNodeSplit, before ReplaceWriteThroughOnNodeSplit: `split_action`), which moves
the pending ack's publish list to the two fragments. A lock holds a node and its ancestors. Device
eviction (CodeConfig.evict_device_round) is the release's own walk (`_evict_components`) over the
tree core's steps here: it takes the leaves the write's device lock does not hold, demotes a written
one (host-only from then on), deletes an unwritten one under write_through and hands it back as a
BackupKV to write first under write_back (CodeConfig.write_policy, whose insert writes nothing);
host eviction (`drive_host_eviction`, when an allocation finds
the host pool short) takes a host-only node no host lock holds, as upstream's takes unlocked host
leaves whose device value is gone: its slots go back through the FULL component's free."""

from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace

from prefetch_check.model.code.stand_ins.errors import WorldFault
from prefetch_check.model.code.stand_ins.torch_stub import Tensor
from prefetch_check.model.code.stand_ins.tree import DriveHostEvictionResult, EvictionStep, InsertResult, TreeCore
from prefetch_check.model.code.worlds.ack_drain.buffer.device_tree import node_of, request_of_node
from prefetch_check.model.code.worlds.ack_drain.buffer.params import BackupKV
from prefetch_check.model.code.worlds.ack_drain.device_side import DeviceLocks, InsertStep, InsertWalk


@dataclass
class LoadBackTransfer:
    """build_load_back_spec's KV transfer (upstream's PoolTransfer of PoolName.KV): the host slots to
    load, the nodes they are the values of (root first), the device rows once committed."""

    host_indices: Tensor
    nodes_to_load: list
    device_indices: object = None


class NotBackedUp(AssertionError, WorldFault):
    """The tree core's own assertion (upstream's `_demote` asserts the node is backed up): the
    caller's bug, not ours; the scheduler thread dies of it."""


class WriteThroughTree(InsertWalk, DeviceLocks, TreeCore):
    _pc_what = "tree_core (write-through)"

    def __init__(self, world, rank: int, pool, page_size: int, device):
        super().__init__(world, rank, pool, page_size)
        self.device = device  # the device KV pool (buffer/device_pool.py): the computed rows, the D2H copy
        self.resident: dict[int, list[int]] = {}  # node -> its device slots
        self.host_value: dict[int, tuple] = {}  # node -> the host slots commit_backup gave it
        self.host_locks: dict[int, int] = {}  # node -> its host lock count (the storage write's)
        self.written: set = set()  # nodes whose host value the D2H ack published
        self.locked: dict[int, int] = {}  # node -> the write's device lock count (inc_lock_ref)
        self.start: dict[int, int] = {}  # node -> its first token (0 unless a split cut the node before it)
        self.parent: dict[int, int] = {}  # node -> its parent (the root unless a split put one above it)
        self.marks: dict[int, int] = {}  # node -> the ack of its pending write-through (write_through_pending_id)
        self.split_action = None  # (ack, old, new, child) -> the release's split action (run.py)
        self.component = "FULL"  # ComponentType.FULL of the release (run.py): the key of its frees
        self._walked: set = set()  # the eviction walk's leaves so far (its LRU cursor)
        self.is_write_back = False  # the cache's is_write_back (write_path.py sets it from the policy)
        self.load_pins: dict[int, int] = {}  # write_back: node -> the load-back anchor pinning its host slots
        self.empty_match_result = SimpleNamespace(device_indices=Tensor([]))  # 0.5.19-0.5.21's nothing loaded
        self._inserting = False

    def reset(self) -> None:
        """The whole tree dropped (the cache's reset): every node, its host value, locks and marks.
        Its device rows go back with the allocator's clear that follows in flush_cache."""
        super().reset()
        for part in (self.resident, self.host_value, self.host_locks, self.locked, self.start, self.parent,
                     self.marks, self.load_pins):
            part.clear()
        self.written.clear()
        self._walked.clear()
        self._inserting = False

    # ---- the insert of the computed request (SCH's cache_unfinished_req after its prefill)
    def begin_insert(self, params) -> InsertStep:
        """The insert of a computed request: a new node for what the tree does not hold; a request
        sharing a node's leading page splits the node there (`_split`) and hangs below the prefix."""
        self.world.baton.point(f"insert {len(params.key)} tokens into device tree (rank {self.rank})")
        self.world.baton.touch(self._pc_name)
        self._inserting = True
        tokens = list(params.key.token_ids)
        request = tokens[-1] // 1000  # a shared prefix's tokens are the first request's
        matched, parent, actions = self._match(tokens)
        node = node_of(request, len(tokens))
        if matched:
            self.start[node], self.parent[node] = matched, parent
        self.resident[node] = list(params.value.data)[matched:]
        self.device.own(self.resident[node], f"req{request}")
        backup = [] if self.is_write_back else [BackupKV([node])]  # write_back: eviction writes it (evict_device_leaf)
        return InsertStep(InsertResult(prefix_len=matched, total_len=len(tokens)), actions + backup)

    def _match(self, tokens: list) -> tuple[int, int, list]:
        """The tokens a resident node's request shares with `tokens` (whole pages), the node they
        end at, and the split's action where they end inside a node."""
        for node in sorted(self.resident):
            request, end = request_of_node(node)
            first = self.start.get(node, 0)
            shared = 0
            while shared < min(end, len(tokens)) and tokens[shared] == request * 1000 + shared:
                shared += 1
            shared -= shared % self.page_size
            if first < shared < end:
                return shared, *self._split(node, request, shared)
            if shared == end and shared < len(tokens):
                return shared, node, []
        return 0, 0, []

    def _split(self, node: int, request: int, at: int) -> tuple[int, list]:
        """upstream's `_split_node`: the node's first `at - start` tokens become a new parent node,
        the node keeps its id for the rest; its action where a write-through is pending."""
        first = self.start.get(node, 0)
        prefix = node_of(request, at)
        cut = at - first
        self.parent[prefix], self.parent[node] = self.parent.get(node, 0), prefix
        if first:
            self.start[prefix] = first
        self.start[node] = at
        rows = self.resident[node]
        self.resident[prefix], self.resident[node] = rows[:cut], rows[cut:]
        if node in self.host_value:
            value = self.host_value[node]
            self.host_value[prefix], self.host_value[node] = value[:cut], value[cut:]
        for counts in (self.locked, self.host_locks):
            if counts.get(node):
                counts[prefix] = counts[node]
        if node in self.written:
            self.written.add(prefix)
        self.world.baton.observe(f"split node {node} at token {at}: node {prefix} above it")
        ack = self.marks.get(node)
        if ack is None:
            return prefix, []
        self.marks[prefix] = ack
        return prefix, [self.split_action(ack, node, prefix, node)]

    def lock_path(self, node_id) -> tuple:
        path = [node_id]
        while self.parent.get(path[-1], 0):
            path.append(self.parent[path[-1]])
        return tuple(path)

    # ---- the host backup (D2H)
    def build_backup_spec(self, node_id):
        """(device value, component transfers): the node's FULL rows; no other component here.
        A node already backed up has nothing left to transfer (an empty value)."""
        self.world.baton.touch(self._pc_name, write=False)
        rows = [] if node_id in self.host_value else self.resident.get(node_id, [])
        return Tensor(rows), {}

    def rotation_phase_of(self, node_id):
        return None  # no shard owner (upstream: None without rotation)

    def commit_backup(self, node_id, host_indices, comp_xfers=None) -> None:
        self.world.baton.point(f"commit host backup of node {node_id} (rank {self.rank})")
        self.world.baton.touch(self._pc_name)
        slots = list(host_indices.data)
        self.host_value[node_id] = tuple(slots)
        self.pool.hand_to_tree(slots)

    # ---- the device-eviction walk the cache's `_evict_components` drives (evict_for_alloc)
    def evict_device_start(self, component_type, request_cnt: int) -> None:
        """An allocation short of device room starts the walk (CodeConfig.evict_device_round)."""
        self.world.baton.point(f"device eviction (rank {self.rank})")
        self.world.baton.touch(self._pc_name)
        self._walked = set()

    def evict_device_next_node(self, component_type, tracker) -> EvictionStep:
        """The next device leaf no device lock holds (upstream's walk skips locked nodes), in node
        order; None when none is left."""
        self.world.baton.touch(self._pc_name, write=False)
        below = {self.parent.get(n, 0) for n in self.resident}
        for node in sorted(self.resident):
            if node not in self._walked and node not in below and not self.locked.get(node):
                self._walked.add(node)
                return EvictionStep(node_id=node, made_progress=True)
        return EvictionStep()

    def evict_device_leaf(self, node_id, is_write_back: bool) -> EvictionStep:
        """A leaf backed up on host is demoted (its rows freed, the node host-only); one that is not
        is, under write_back, handed back as the BackupKV to run first, and under write_through
        deleted with its rows (tokens freed without a backup)."""
        if node_id in self.host_value:
            return self.demote(node_id)
        if is_write_back:
            return EvictionStep(backup_kv=BackupKV([node_id]))
        step = self._free_rows(node_id)
        step.unbacked_tokens = sum(step.tracker.values())
        return step

    def demote(self, node_id) -> EvictionStep:
        """A backed-up node leaves the device; upstream's tree core asserts the backup."""
        if node_id not in self.host_value:
            raise NotBackedUp(f"demote of node {node_id}, which has no host backup")
        return self._free_rows(node_id)

    def drop_subtree_no_host(self, node_id) -> EvictionStep:
        """write_back's fallback when the victim's backup failed: the node and its rows dropped,
        unless a device or host lock holds it (upstream declines then)."""
        self.world.baton.touch(self._pc_name, write=False)
        if self.locked.get(node_id) or self.host_locks.get(node_id):
            return EvictionStep()
        step = self._free_rows(node_id)
        step.is_dropped = True
        return step

    def evict_device_end(self, component_type) -> None:
        self._walked = set()

    def full_evictable_size(self) -> int:
        self.world.baton.touch(self._pc_name, write=False)
        return sum(len(rows) for node, rows in self.resident.items() if not self.locked.get(node))

    def _free_rows(self, node_id) -> EvictionStep:
        """The node leaves the device: its rows returned for the cache to free (`_free_values`)."""
        self.world.baton.touch(self._pc_name)
        rows = self.resident.pop(node_id)
        self.world.baton.observe(f"evicted node {node_id} from the device")
        return EvictionStep(device_frees={self.component: [Tensor(rows)]}, tracker={self.component: len(rows)})

    # ---- the load-back of a host-only node (CodeConfig.load_back: the cache's init_load_back)
    def is_full_device_evicted(self, node_id) -> bool:
        self.world.baton.touch(self._pc_name, write=False)
        return node_id not in self.resident

    def build_load_back_spec(self, node_id, req=None):
        """The H2D transfer of the node's path: its host-only nodes, root first, their host values in
        one KV transfer; an empty one where another load-back's anchor pins one of them (write_back),
        which makes the cache back off, as upstream's tree core does."""
        self.world.baton.touch(self._pc_name, write=False)
        nodes = [n for n in reversed(self.lock_path(node_id)) if n not in self.resident]
        if any(self.load_pins.get(n, node_id) != node_id for n in nodes):
            return LoadBackTransfer(Tensor([]), []), {}
        slots = [h for n in nodes for h in self.host_value.get(n, ())]
        return LoadBackTransfer(Tensor(slots), nodes), {}

    def commit_load_back(self, node_id, device_indices, kv_xfer, comp_xfers=None) -> list:
        """The loaded rows become the device values of the path's nodes (in the transfer's order);
        under write_back their host slots are pinned until the ack (finish_load_back)."""
        self.world.baton.point(f"commit load-back of node {node_id} (rank {self.rank})")
        self.world.baton.touch(self._pc_name)
        rows = list(device_indices.data)
        for n in kv_xfer.nodes_to_load:
            size = len(self.host_value.get(n, ()))
            self.resident[n], rows = rows[:size], rows[size:]
            self.device.own(self.resident[n], f"req{request_of_node(n)[0]}")
            if self.is_write_back:
                self.load_pins[n] = node_id
        kv_xfer.device_indices = device_indices
        return []

    def finish_load_back(self, anchor_node_id) -> None:
        """The ack: write_back's pins of this anchor cleared along the path."""
        self.world.baton.touch(self._pc_name)
        for n in self.lock_path(anchor_node_id):
            if self.load_pins.get(n) == anchor_node_id:
                del self.load_pins[n]

    def collect_full_device_indices(self, from_node_id, until_node_id=0):
        """The device rows of the path from `from_node_id` up to `until_node_id` (excluded), root first."""
        self.world.baton.touch(self._pc_name, write=False)
        path = []
        for n in self.lock_path(from_node_id):
            if n == until_node_id:
                break
            path.append(n)
        return Tensor([row for n in reversed(path) for row in self.resident.get(n, ())])

    # ---- the node's host lock (write_backup_storage to the storage ack), and host eviction
    def inc_host_lock_ref(self, node_id):
        lock = super().inc_host_lock_ref(node_id)
        for node in self.lock_path(node_id):
            if node in self.host_value:
                self.host_locks[node] = self.host_locks.get(node, 0) + 1
        return lock

    def dec_host_lock_ref(self, node_id, params=None):
        super().dec_host_lock_ref(node_id, params)
        for node in self.lock_path(node_id):
            if node in self.host_value or node in self.host_locks:
                self.host_locks[node] = self.host_locks.get(node, 0) - 1
                if not self.host_locks[node]:
                    del self.host_locks[node]

    def drive_host_eviction(self, component_type, num_tokens: int) -> DriveHostEvictionResult:
        """Host-only nodes no host lock holds go first, their slots handed back for the cache to
        free; what else the pool holds, as the host tree's eviction has it."""
        values, tokens = [], 0
        for node in sorted(self.host_value):
            if tokens >= num_tokens:
                break
            if node in self.resident or self.host_locks.get(node, 0) > 0:
                continue
            self.world.baton.point(f"host eviction of node {node} (rank {self.rank})")
            self.world.baton.touch(self._pc_name)
            slots = list(self.host_value.pop(node))
            self.pool.evict_from_tree(slots)
            values.append(Tensor(slots))
            tokens += len(slots)
            self.world.baton.observe(f"evicted node {node} from host")
        if not values:
            return super().drive_host_eviction(component_type, num_tokens)
        return DriveHostEvictionResult(host_frees={component_type: values}, tracker={component_type: tokens})

    def mark_write_through_pending(self, node_ids, ack_id=None) -> list:
        """0.5.20 on: the nodes the ack publishes, under its ack id; 0.5.19: one node, its own ack."""
        self.world.baton.touch(self._pc_name)
        ids = [node_ids] if isinstance(node_ids, int) else list(node_ids)
        ack = ids[0] if ack_id is None else ack_id
        self.marks.update((node, ack) for node in ids)
        return ids

    def finish_write_through(self, node_ids, ack_id=None) -> None:
        """The marks of the acked nodes cleared (where they are this ack's), the nodes written."""
        self.world.baton.touch(self._pc_name)
        for node in node_ids:
            if self.marks.get(node) == ack_id:
                del self.marks[node]
        self.written.update(node_ids)

    # ---- the storage backup (host -> storage)
    def build_storage_backup_spec(self, node_id, pass_prefix_keys: bool = False):
        """What write_backup_storage stores: the node's host value and its pages' hashes, or None
        for a node with no host value (nothing to store)."""
        self.world.baton.touch(self._pc_name, write=False)
        slots = self.host_value.get(node_id)
        if not slots:
            return None
        request, tokens = request_of_node(node_id)
        first = self.start.get(node_id, 0)
        return SimpleNamespace(host_value=Tensor(list(slots)), token_ids=[request * 1000 + t for t in range(first, tokens)],
                               hash_value=self.storage_keys(node_id),
                               prefix_keys=[] if pass_prefix_keys else None, comp_xfers={})

    def storage_keys(self, node_id) -> list[str]:
        """The node's pages' storage hashes (they name their page: stand_ins/radix.py)."""
        request, tokens = request_of_node(node_id)
        return [f"q{request}p{p}" for p in range(self.start.get(node_id, 0) // self.page_size, tokens // self.page_size)]

    def snapshot(self) -> tuple:
        return super().snapshot() + (tuple(sorted((n, tuple(s)) for n, s in self.resident.items())),
                                     tuple(sorted(self.host_value.items())),
                                     tuple(sorted(self.written)), tuple(sorted(self.locked.items())),
                                     tuple(sorted(self.host_locks.items())), tuple(sorted(self.start.items())),
                                     tuple(sorted(self.parent.items())), tuple(sorted(self.marks.items())),
                                     tuple(sorted(self._walked)), tuple(sorted(self.load_pins.items())))
