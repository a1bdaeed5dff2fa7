"""Host-only pages the tree holds from an earlier request (CodeConfig.host_held_pages), and their
host eviction: what the release's `evict_host` asks `tree_core.drive_host_eviction` for when a
prefetch's host allocation fails. The pages are a chain of one-page nodes below the root (as
matches split a request's node); the leading `host_locked_pages` are locked by a running request
(a lock holds a node and its ancestors). Eviction takes unlocked leaves, deepest first, until the
tokens asked for are freed, as upstream's FULL component does (LRU leaves; here every leaf was
used by the same earlier request, so depth decides). An evicted node leaves the tree at once; its
slots are the cache's to free (HostPool EVICTED), which the release does through
`components[FULL].free_host_values` (stand_ins/components.py).

With CodeConfig.host_anchored the pages are the request's own prefix and its prefetch anchors at
the deepest one: the release's `inc_host_lock_ref` on that node locks it and its ancestors
(upstream's host lock walks up), and eviction takes no locked node. Judged here: the prefetched
pages inserted below a node evicted meanwhile (the anchor's pages freed and handed out again while
the fetch depended on them); at the end of a run (`audit`, rt/verdicts.py), each node the tree
still holds keeps the slots and the data it was inserted with."""

from __future__ import annotations

from dataclasses import dataclass

from prefetch_check.model.code.stand_ins.host_pool import TREE
from prefetch_check.model.code.stand_ins.torch_stub import Tensor


FIRST_ID = 100  # node ids of the held chain: FIRST_ID + depth (the root is 0)


@dataclass(frozen=True)
class HeldNode:
    node_id: int
    page: str  # the storage hash of the page it holds ('q<request>p<page>')
    slots: tuple[int, ...]
    locked: bool  # by a request outside the run


class HostHeldPages:
    """The chain of host-only nodes one rank's tree holds, in the host pool's first slots."""

    def __init__(self, world, rank: int, pool, page_size: int, pages: int, locked: int, request: int):
        self.world, self.rank, self.pool, self.page_size = world, rank, pool, page_size
        self.nodes: list[HeldNode] = []
        for n in range(pages):
            slots = tuple(range(n * page_size, (n + 1) * page_size))
            node = HeldNode(FIRST_ID + n, f"q{request}p{n}", slots, n < locked)
            pool.hold_for_tree(list(slots), node.page)
            self.nodes.append(node)
        self.evicted: list[str] = []  # pages evicted, in order
        self.lock_refs: dict[int, int] = {}  # node id -> host locks the code under test holds on it

    def deepest(self) -> int:
        return self.nodes[-1].node_id

    def holds(self, node_id) -> bool:
        return isinstance(node_id, int) and FIRST_ID <= node_id < FIRST_ID + len(self.nodes) + len(self.evicted)

    def was_evicted(self, node_id) -> bool:
        return self.holds(node_id) and node_id >= FIRST_ID + len(self.nodes)

    def lock(self, node_id: int, delta: int) -> bool:
        """A host lock taken (+1) or released (-1) on a node and its ancestors; False for a release
        of a lock never taken."""
        for n in range(FIRST_ID, node_id + 1):
            count = self.lock_refs.get(n, 0) + delta
            if count < 0:
                return False
            self.lock_refs[n] = count
        return True

    def _evictable(self) -> bool:
        leaf = self.nodes[-1]
        return not leaf.locked and not self.lock_refs.get(leaf.node_id, 0)

    def evict(self, num_tokens: int) -> tuple[list, int]:
        """Evict unlocked leaves until num_tokens are freed: their slots as tensors, and the tokens."""
        values, tokens = [], 0
        while tokens < num_tokens and self.nodes and self._evictable():
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
        return tuple(n.page for n in self.nodes), tuple(sorted(self.lock_refs.items()))
