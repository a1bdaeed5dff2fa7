"""A request's new storage prefetch is revoked by the late hit of its old one.

SGLang 0.5.19 to 0.5.23, `--hicache-storage-prefetch-policy best_effort`, one rank, no GPU needed:

    pip install sglang==0.5.23      # torch on the CPU is enough
    python docs/repro/stale_hit_revokes_new_prefetch.py   # stand_ins.py beside it

Exit status 1 and "REPRODUCED" when the fault shows, 0 when it does not. The classes are built
the way SGLang's own unit tests build them (`__new__` and the attributes the path reads); every
method called on the prefetch path is the release's own, in the order of the schedule
prefetch-check found (docs/findings.md):

  scheduler  prefetch_from_storage(h)         operation A on prefetch_queue (h: its handle; 0.5.19: its rid)
  scheduler  check_prefetch_progress(h)       best_effort: A terminated, the request admitted
  prefetch   prefetch_thread_func()           A is terminated: its hit (0 tokens) on prefetch_hit_queue
  scheduler  prefetch_from_storage(h)         retracted, prefetched again: operation B, same handle
  scheduler  drain_storage_control_queues()   A's hit: `info` is B's entry and A is terminated,
                                              so revoke_pending_prefetch(h) retires B
"""

import inspect
import sys
import threading
from array import array
from collections import Counter
from queue import Queue
from types import SimpleNamespace

from sglang.srt.mem_cache.hybrid_cache.hybrid_cache_controller import HybridCacheController
from sglang.srt.mem_cache.unified_cache.component_type import ComponentType
from sglang.srt.mem_cache.unified_radix_cache import UnifiedRadixCache

from stand_ins import PAGE, Storage, built, page_hashes

TOKENS = array("q", [7])  # the request's uncached tokens, as the scheduler passes them: 1 page
# 0.5.20 on: a request is named by a handle and the scheduler's retries have their own class;
# 0.5.19 names it by its rid and keeps the rids to retry in a set
BY_RID = "req_id" in inspect.signature(UnifiedRadixCache.prefetch_from_storage).parameters
if BY_RID:
    RETRIES = dict(_storage_prefetch_missed_rids=set())
else:
    from sglang.srt.mem_cache.base_prefix_cache import CacheRequestHandle
    from sglang.srt.mem_cache.storage_prefetch import StoragePrefetchRetries

    RETRIES = dict(storage_prefetch_retries=StoragePrefetchRetries())


def controller():
    cc = HybridCacheController.__new__(HybridCacheController)
    for name in ("prefetch_queue", "prefetch_hit_queue", "prefetch_buffer", "ack_prefetch_queue",
                 "ack_backup_queue", "host_mem_release_queue"):
        setattr(cc, name, Queue())
    cc.extra_host_mem_release_queues = {}
    cc.storage_stop_event = threading.Event()
    cc.storage_backend = Storage()
    cc.get_hash_str = page_hashes  # 0.5.19 binds the page keys' function at attach time
    cc.page_size = PAGE
    cc.prefetch_hits_sync_groups = []
    cc._all_reduce = lambda *args, **kwargs: None  # one rank: the MIN over the ranks is the rank's own
    cc.host_memory_mode = "cache"
    cc.prefetch_capacity_limit = 1 << 20
    cc.prefetch_tokens_occupied = 0
    cc.pp_prefetch_command_group = None
    cc.pp_prefetch_decisions = {}
    cc.enable_storage = True
    return cc


def cache(cc):
    return built(
        UnifiedRadixCache,
        tree_core=SimpleNamespace(page_size=PAGE, enable_storage=True, is_eagle=False,
                                  prefetch_anchor_info=lambda node: (None, None)),
        inc_host_lock_ref=lambda node: SimpleNamespace(to_dec_params=lambda: None),  # the anchor is the root
        _all_reduce=lambda *args, **kwargs: None,
        cache_controller=cc, disable=False, tree_components=(ComponentType.FULL,), components={},
        sidecar_pool_specs=[], host_memory_mode="cache", buffer_pipeline=None, linker=None,
        prefetch_threshold=PAGE, prefetch_stop_policy="best_effort", ongoing_prefetch={},
        _storage_prefetch_wait={}, _storage_prefetch_hit_remaining_by_reqid={},
        prefetch_loaded_tokens_by_reqid={}, prefetch_loaded_storage_start_by_reqid={},
        storage_existence_cache=None, enable_storage_metrics=False, storage_metrics_collector=None,
        pp_rank=0, pp_size=1, _prefetch_outcome_stats=Counter(),
        **RETRIES,
    )


def main() -> int:
    cc = controller()
    tree = cache(cc)
    handle = "req0" if BY_RID else CacheRequestHandle("req0", 0)
    cc.storage_stop_event.set()  # prefetch_thread_func then serves what is queued and returns

    tree.prefetch_from_storage(handle, "root", TOKENS)  # round 1: operation A
    a = tree.ongoing_prefetch[handle].operation
    assert tree.check_prefetch_progress(handle), "best_effort admits at once"
    cc.prefetch_thread_func()  # A, terminated: 0 hits on prefetch_hit_queue
    tree.prefetch_from_storage(handle, "root", TOKENS)  # retracted and prefetched again: operation B
    b = tree.ongoing_prefetch[handle].operation
    assert b is not a and a.storage_hit_count == 0

    tree.drain_storage_control_queues()  # round 2: A's hit
    if handle in tree.ongoing_prefetch:
        print("not reproduced: the request's new prefetch survived the old operation's hit")
        return 0
    admitted = tree.check_prefetch_progress(handle)
    cc.prefetch_thread_func()  # B's storage query: the page is there
    tree.drain_storage_control_queues()  # round 3: B's hit, no longer the request's
    print("REPRODUCED: the old operation's late hit revoked the request's new prefetch "
          "(revoke_pending_prefetch from the hit drain, A terminated, B live): the request is admitted "
          f"at once (check_prefetch_progress: {admitted}) with {tree.pop_prefetch_loaded_tokens(handle)} "
          f"token(s) loaded; B then found {b.storage_hit_count} token(s) in storage, drained as nobody's")
    return 1


if __name__ == "__main__":
    sys.exit(main())
