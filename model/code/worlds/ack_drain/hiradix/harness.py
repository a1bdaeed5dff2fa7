"""One run of the HiRadixCache that 0.5.19-0.5.20 ship beside UnifiedRadixCache (`--cache-class
HiRadixCache`; the server's factory no longer builds it): the same ack-drain threads (its
HiCacheController's P, IO and the sync thread Y, PrefetchAck through the scheduler's drain), with
the radix tree inline in the cache instead of a tree core. What differs from the UnifiedRadixCache
world (../harness.py), and how it stands in:

- the cache keeps `(last_host_node, key, operation)` per rid and frees the fetched tail directly
  in the ACK drain (no host_mem_release_queue for it); a request is its rid;
- the anchor is the request's `last_host_node` (the root here: nothing of the request is cached),
  whose host lock `protect_host`/`release_host` count (hiradix/node.py, on the rank's tree);
- `_insert_helper_host`, the host radix tree's insert, is the rank's tree stand-in's insert
  (stand_ins/tree.py), which judges each page was written, as in the predicate-poll world;
- the controller is the tree's own HiCacheController (managers/cache_controller.py), not the
  HybridCacheController UnifiedRadixCache gets; its PrefetchOperation is hooked like the other."""

from __future__ import annotations

from prefetch_check.model.code.stand_ins.radix import RadixKey
from prefetch_check.model.code.worlds.ack_drain.harness import CONTROLLER, Run
from prefetch_check.model.code.worlds.ack_drain.hiradix.node import HostNode
from prefetch_check.model.code.worlds.common import ROOT_NODE, Rank

HIRADIX = "mem_cache/hiradix_cache.py"
STORAGE = "mem_cache/hicache_storage.py"  # PrefetchTimeoutConfig
FILES = (HIRADIX,)  # beside the UnifiedRadixCache world's (a tree without it gets a stub)


class HiRadixRun(Run):
    """The ack-drain world with the tree's HiRadixCache and HiCacheController."""

    def _cache_class(self):
        return self.modules[HIRADIX].HiRadixCache

    def _controller_class(self):
        return self.modules[CONTROLLER].HiCacheController

    def _build(self, i: int) -> Rank:
        rank = super()._build(i)
        cache, cfg = rank.cache, self.config
        node = HostNode(self.world, rank.tree)
        attrs = dict(
            page_size=cfg.page_size, enable_storage=True, is_eagle=False, device="cpu", root_node=node,
            evictable_host_leaves=set(), _insert_helper_host=self._inserter(rank.tree),
            prefetch_timeout_config=self.modules[STORAGE].PrefetchTimeoutConfig())
        for k, v in attrs.items():
            setattr(cache, k, v)
        cache.is_prefetch_timeout = cache._prefetch_timeout_check_linear_func  # as __init__ binds it
        rank.node = node
        return rank

    def anchor(self, rank: Rank):
        return rank.node

    @staticmethod
    def _inserter(tree):
        """`_insert_helper_host` stands in: the tree takes the slots and judges each page was written."""

        def insert(node, key, host_value, hash_value=None, *args, **kwargs):
            key = key if isinstance(key, RadixKey) else RadixKey(list(key))
            return tree.insert_host(ROOT_NODE, key, host_value, hash_value).prefix_len

        return insert
