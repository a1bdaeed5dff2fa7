"""The device tree of the write path (CodeConfig.backup): the buffer world's device tree
(device_tree.py) with what the pipeline's backup side asks of `tree_core` (unified_tree_core.py:
`snapshot_buffer_backup`, `validate_buffer_backup`, `build_backup_spec`,
`get_component_device_value`, `buffer_backup_pool_keys`, `inc_lock_ref` / `dec_lock_ref`), and an
insert that, as upstream's under write_through (write_through_threshold 1: the first hit of a new
node fires), hands the cache a BackupKV of the node it added.

A node is a span of one request's resident tokens, (start, end], made by the insert that added it;
it is gone once eviction shrinks the request below its end (validate answers None: "evicted"). The
pipeline's lock (inc_lock_ref, from the D2H launch to its ack) keeps a node's tokens resident
through eviction as a FULL pin does. Splits are not modelled: a node's key length never changes."""

from __future__ import annotations

from prefetch_check.model.code.stand_ins.radix import RadixKey
from prefetch_check.model.code.stand_ins.torch_stub import Tensor
from prefetch_check.model.code.worlds.ack_drain.buffer.device_tree import ROOT, DeviceTree, node_of, request_of_node
from prefetch_check.model.code.worlds.ack_drain.device_side import DeviceLocks
from prefetch_check.model.code.worlds.ack_drain.buffer.params import BackupKV, BufferBackupSnapshot, BufferBackupState


class BackupDeviceTree(DeviceLocks, DeviceTree):
    _pc_what = "tree_core (device, write path)"

    def __init__(self, world, rank: int, pool, page_size: int, device):
        super().__init__(world, rank, pool, page_size, device)
        self.spans: dict[int, int] = {}  # node -> its parent node (the span it continues)
        self.locked: dict[int, int] = {}  # node -> the pipeline's lock count (inc_lock_ref)

    def reset(self) -> None:
        """The cache's reset drops every node, the write path's locked ones too."""
        super().reset()
        self.spans.clear()
        self.locked.clear()

    # ---- the nodes
    def _alive(self, node: int) -> bool:
        request, end = request_of_node(node)
        return node in self.spans and len(self.resident.get(request, ())) >= end

    def _start(self, node: int) -> int:
        """The tokens before the node's span (its parent's end; 0 under the root)."""
        parent = self.spans.get(node, ROOT)
        return 0 if parent == ROOT else request_of_node(parent)[1]

    def _hashes(self, node: int) -> list[str]:
        request, end = request_of_node(node)
        return [f"q{request}p{p}" for p in range(self._start(node) // self.page_size, end // self.page_size)]

    def storage_keys(self, node: int) -> list[str]:
        """The storage keys of a node's pages (as write_through/tree.py's, for the judge)."""
        return self._hashes(node)

    def parent_of(self, node: int) -> int:
        """The node a node's span continues (ROOT under the root)."""
        return self.spans.get(node, ROOT)

    def resident_nodes(self, request: int) -> list[int]:
        """Request's nodes still on the device (made by an insert, not shrunk away by eviction)."""
        return sorted(n for n in self.spans if request_of_node(n)[0] == request and self._alive(n))

    def _state(self, node: int) -> tuple[int, bool, object]:
        parent = self.spans[node]
        return parent, parent == ROOT, self.get_last_hash_value(parent)

    def snapshot_buffer_backup(self, node_id, pass_prefix_keys: bool = False):
        self.world.baton.touch(self._pc_name, write=False)
        if node_id == ROOT or not self._alive(node_id):
            return None
        request, end = request_of_node(node_id)
        parent, is_root, last = self._state(node_id)
        start = self._start(node_id)
        key = RadixKey([request * 1000 + t for t in range(start, end)])
        prefix = [f"q{request}p{p}" for p in range(start // self.page_size)] if pass_prefix_keys else None
        return BufferBackupSnapshot(node_id, parent, is_root, last, self._hashes(node_id), key, prefix)

    def validate_buffer_backup(self, node_id, expected_key_length: int):
        self.world.baton.touch(self._pc_name, write=False)
        if not self._alive(node_id):
            return None  # evicted: its FULL device value is gone
        parent, is_root, last = self._state(node_id)
        if request_of_node(node_id)[1] - self._start(node_id) != expected_key_length:
            return None
        return BufferBackupState(parent, is_root, last)

    def get_component_device_value(self, node_id, component_type=None) -> Tensor:
        self.world.baton.touch(self._pc_name, write=False)
        request, end = request_of_node(node_id)
        return Tensor(self.resident.get(request, [])[self._start(node_id):end])

    def build_backup_spec(self, node_id):
        """(device value, component transfers): FULL only, no other component here."""
        return self.get_component_device_value(node_id), {}

    def build_hicache_transfers(self, component_type, node_id, phase, **kwargs):
        """The FULL component adds no pool to a backup (upstream: None for a pool-less FULL)."""
        if getattr(phase, "value", phase) == "backup_host":
            return None
        return super().build_hicache_transfers(component_type, node_id, phase, **kwargs)

    def buffer_backup_pool_keys(self, node_id, hash_values) -> dict:
        return {}

    # ---- the pipeline's lock on a node from its D2H launch to the D2H ack: DeviceLocks (device_side.py)
    def pinned_tokens(self, request: int) -> int:
        """A FULL pin's tokens, or a locked node's: eviction keeps both."""
        locked = max((request_of_node(n)[1] for n in self.locked if request_of_node(n)[0] == request), default=0)
        return max(super().pinned_tokens(request), locked)

    # ---- the insert under write_through
    def begin_insert(self, params):
        tokens = params.key.token_ids
        request = tokens[0] // 1000 if tokens else 0
        before = len(self.resident.get(request, ()))
        step = super().begin_insert(params)
        if step.result.total_len > step.result.prefix_len:  # a new node: its first hit fires the backup
            node = node_of(request, len(tokens))
            self.spans[node] = node_of(request, before) if before else ROOT
            step.actions.append(BackupKV([node]))
        return step

    def snapshot(self) -> tuple:
        return super().snapshot() + (tuple(sorted(self.spans.items())), tuple(sorted(self.locked.items())))
