"""The device radix tree of one rank, as the buffer pipeline reaches it through `tree_core`: each
request's leading tokens resident on the device (request q's tokens are q*1000 + position, so a
key names its request), the FULL pins that anchor a staged prefetch's splice base, eviction of
unpinned tokens (which shrinks a later match), and the insert that publishes a loaded span. The
host side (`insert_host`, host eviction) is the cache-mode tree's (stand_ins/tree.py). Every call
enters a step's footprint as the tree's (`r<rank>.tree`: a match, a pin count or `has_ongoing_insert`
read it; a pin, an unpin, an eviction and an insert write it)."""

from __future__ import annotations


from prefetch_check.model.code.stand_ins.torch_stub import Tensor
from prefetch_check.model.code.stand_ins.tree import InsertResult, TreeCore
from prefetch_check.model.code.worlds.ack_drain.buffer.params import MatchResult
from prefetch_check.model.code.worlds.ack_drain.device_side import InsertStep, InsertWalk

ROOT = 0


def node_of(request: int, tokens: int) -> int:
    """The node id ending request's first `tokens` tokens (the root for none)."""
    return 0 if tokens == 0 else 1 + request * 1000 + tokens


def request_of_node(node: int) -> tuple[int, int]:
    return (node - 1) // 1000, (node - 1) % 1000


PAST_CAP = ("device memory pinned past the anchor-lock cap, which keeps room for the largest request: a queued "
            "hold can wedge admission for good (the pool full, nothing retractable)")


class DeviceTree(InsertWalk, TreeCore):
    _pc_what = "tree_core (device)"

    def __init__(self, world, rank: int, pool, page_size: int, device):
        super().__init__(world, rank, pool, page_size)
        self.device = device  # the device KV pool (device_pool.py): slots of the resident tokens
        self.resident: dict[int, list[int]] = {}  # request -> device slots of its leading tokens
        self.pins: dict[int, int] = {}  # node -> FULL pin count
        self.pin_cap = None  # () -> the pipeline's anchor-lock cap in tokens, or None (harness.py sets it)
        self.empty_match_result = MatchResult(world, 0, ROOT, ROOT)
        self._inserting = False

    def seed(self, request: int, tokens: int) -> None:
        """Request's first `tokens` tokens already on the device (another request computed them)."""
        if tokens:
            self.resident[request] = self.device.take(tokens, f"req{request}")

    # ---- matching
    def _matched(self, key) -> tuple[int, int]:
        self.world.baton.touch(self._pc_name, write=False)
        tokens = key.token_ids
        if not tokens:
            return 0, ROOT
        request = tokens[0] // 1000
        n = 0
        for i, t in enumerate(tokens[: len(self.resident.get(request, ()))]):
            if t != request * 1000 + i:
                break
            n = i + 1
        n -= n % self.page_size
        return n, node_of(request, n)

    def match_full_device_prefix(self, key) -> tuple[int, int, int]:
        """(matched tokens, the node ending them, the tokens an anchor pin there protects)."""
        self.world.baton.point(f"match device prefix of {len(key)} tokens (rank {self.rank})")
        n, node = self._matched(key)
        self.world.baton.observe(f"device match {n}")
        return n, node, n

    def match_prefix(self, params):
        n, node = self._matched(params.key)
        self.world.baton.observe(f"device match {n}")
        return MatchResult(self.world, n, node, node)

    def collect_full_device_indices(self, node, root=ROOT) -> Tensor:
        self.world.baton.touch(self._pc_name, write=False)
        if node == ROOT:
            return Tensor([])
        request, tokens = request_of_node(node)
        return Tensor(self.resident.get(request, [])[:tokens])

    def root_node_handle(self, extra_key=None) -> int:
        return ROOT

    def get_last_hash_value(self, node_id):
        """A device node's last page's storage hash (SCH _prefetch_kvcache re-anchors a buffer_only
        lookup at the deepest device node and issues it only where the node has one); the root's
        None. Hashes name their page (stand_ins/radix.py), so the node's request and length give it."""
        if node_id == ROOT:
            return None
        request, tokens = request_of_node(node_id)
        return f"q{request}p{tokens // self.page_size - 1}"

    # ---- pins
    def inc_full_pin(self, node) -> None:
        self.world.baton.point(f"pin device node {node} (rank {self.rank})")
        self.world.baton.touch(self._pc_name)
        self.pins[node] = self.pins.get(node, 0) + 1
        cap = self.pin_cap() if self.pin_cap is not None else None
        pinned = sum(request_of_node(n)[1] * count for n, count in self.pins.items())
        if cap is not None and pinned > cap:
            site = self.world.baton.current().point.site if self.world.baton.current() else "?"
            self.world.fault("anchor_release", f"rank {self.rank}: anchor pins hold {pinned} device tokens, past the "
                             f"pipeline's anchor-lock cap of {cap}", PAST_CAP, site)

    def dec_full_pin(self, node) -> None:
        self.world.baton.point(f"unpin device node {node} (rank {self.rank})")
        self.world.baton.touch(self._pc_name)
        left = self.pins.get(node, 0) - 1
        if left < 0:
            site = self.world.baton.current().point.site if self.world.baton.current() else "?"
            self.world.fault("anchor_release", f"rank {self.rank}: device node {node} unpinned more often than pinned",
                             "a device prefix another request pinned becomes evictable under it: its splice "
                             "reads freed KV", site)
        self.pins[node] = max(0, left)
        if not self.pins[node]:
            del self.pins[node]

    def pinned_tokens(self, request: int) -> int:
        self.world.baton.touch(self._pc_name, write=False)
        return max((request_of_node(n)[1] for n in self.pins if request_of_node(n)[0] == request), default=0)

    def evict_unpinned(self) -> None:
        """Eviction under device pressure: every request's tokens beyond its pinned prefix go."""
        self.world.baton.point(f"device eviction (rank {self.rank})")
        self.world.baton.touch(self._pc_name)
        for request in list(self.resident):
            keep = self.pinned_tokens(request)
            slots = self.resident[request]
            if keep < len(slots):
                self.device.give_back(slots[keep:])
                self.resident[request] = slots[:keep]
                self.world.baton.observe(f"evicted req{request} down to {keep}")

    def reset(self) -> None:
        """The whole tree dropped (the cache's reset): no resident span, no pin. Its device slots go
        back with the allocator's clear that follows in flush_cache (DevicePool.clear)."""
        super().reset()
        self.resident.clear()
        self.pins.clear()
        self._inserting = False

    # ---- insert (the loaded span published; the walk around it: device_side.py)
    def begin_insert(self, params) -> InsertStep:
        self.world.baton.point(f"insert {len(params.key)} tokens into device tree (rank {self.rank})")
        self.world.baton.touch(self._pc_name)
        self._inserting = True
        tokens = params.key.token_ids
        request = tokens[0] // 1000 if tokens else 0
        have = self.resident.get(request, [])
        prefix = min(len(have), len(tokens))
        value = params.value.data
        # upstream's insert keeps the resident prefix and takes the new tail's slots; a duplicate
        # tail slot the tree already holds would be freed (the pipeline's ownership check reads it)
        self.resident[request] = have[:prefix] + value[prefix:len(tokens)]
        self.device.own(value[prefix:len(tokens)], f"req{request}")
        self.world.baton.observe(f"device insert prefix {prefix}")
        return InsertStep(InsertResult(prefix_len=prefix, total_len=len(tokens)))

    def snapshot(self) -> tuple:
        return super().snapshot() + (tuple(sorted((q, tuple(s)) for q, s in self.resident.items())),
                                     tuple(sorted(self.pins.items())))
