"""Host-only pages the tree holds from an earlier request (CodeConfig.host_held_pages), and their
host eviction: what the release's `evict_host` asks `tree_core.drive_host_eviction` for when a
prefetch's host allocation fails. The pages are a chain of one-page nodes below the root (as
matches split a request's node); the leading `host_locked_pages` are locked by a running request
(a lock holds a node and its ancestors). Eviction takes unlocked leaves, deepest first, until the
tokens asked for are freed, as upstream's FULL component does (LRU leaves; here every leaf was
used by the same earlier request, so depth decides). An evicted node leaves the tree at once; its
slots are the cache's to free (HostPool EVICTED), which the release does through
`components[FULL].free_host_values` (stand_ins/components.py).

Judged at the end of a run (`audit`, rt/verdicts.py): a node the tree still holds keeps the slots
and the data it was inserted with (a slot freed, reused or overwritten under it is wrong KV data
served). Which node may be evicted is the tree core's choice (a stand-in): the locks are held by a request outside the run,
and this world's prefetch anchors at the root, so the release's code never moves them."""

from __future__ import annotations

from dataclasses import dataclass

from prefetch_check.model.code.stand_ins.host_pool import TREE
from prefetch_check.model.code.stand_ins.torch_stub import Tensor


@dataclass(frozen=True)
class HeldNode:
    page: str  # the storage hash of the page it holds ('q<request>p<page>')
    slots: tuple[int, ...]
    locked: bool


class HostHeldPages:
    """The chain of host-only nodes one rank's tree holds, in the host pool's first slots."""

    def __init__(self, world, rank: int, pool, page_size: int, pages: int, locked: int, request: int):
        self.world, self.rank, self.pool, self.page_size = world, rank, pool, page_size
        self.nodes: list[HeldNode] = []
        for n in range(pages):
            slots = tuple(range(n * page_size, (n + 1) * page_size))
            node = HeldNode(f"q{request}p{n}", slots, n < locked)
            pool.hold_for_tree(list(slots), node.page)
            self.nodes.append(node)
        self.evicted: list[str] = []  # pages evicted, in order

    def evict(self, num_tokens: int) -> tuple[list, int]:
        """Evict unlocked leaves until num_tokens are freed: their slots as tensors, and the tokens."""
        values, tokens = [], 0
        while tokens < num_tokens and self.nodes and not self.nodes[-1].locked:
            node = self.nodes.pop()
            self.pool.evict_from_tree(list(node.slots))
            self.evicted.append(node.page)
            values.append(Tensor(node.slots))
            tokens += len(node.slots)
        self.world.baton.observe(f"evicted {self.evicted or 'nothing'}")
        return values, tokens

    def audit(self) -> str:
        """Each node the tree still holds keeps its slots, holding its page: '' or what is wrong."""
        for node in self.nodes:
            for slot in node.slots:
                status, got = self.pool.status[slot], self.pool.written.get(slot)
                if status != TREE or got != node.page:
                    return (f"the host tree holds page {node.page} in slot {slot}, which is {status} and "
                            f"holds {got or 'nothing written'}")
        return ""

    def snapshot(self) -> tuple:
        return tuple(n.page for n in self.nodes)
