"""A readmitted request's old completion ACK is applied to its new prefetch (0.5.19 matches by rid).

SGLang 0.5.19 (0.5.20 matches the ACK's operation, not its rid), `--hicache-storage-prefetch-policy
best_effort`, one rank, no GPU needed:

    pip install sglang==0.5.19      # torch on the CPU is enough
    python docs/repro/stale_ack_handles_new_prefetch.py   # stand_ins.py beside it

Exit status 1 and "REPRODUCED" when the fault shows, 0 when it does not. The classes are built
the way SGLang's own unit tests build them (`__new__` and the attributes the path reads); every
method on the prefetch path is the release's own, the IO and sync threads run as threads, in the
order of the schedule prefetch-check found (docs/findings.md):

  scheduler  prefetch_from_storage("req0")     operation A
  prefetch   prefetch_thread_func()            A: 1 page in storage, on prefetch_hit_queue
  scheduler  drain_storage_control_queues()    A's hit: a host slot, A on prefetch_buffer
  scheduler  check_prefetch_progress("req0")   best_effort: A terminated before IO read its page,
                                               its result (0 tokens) handled, the request admitted
  scheduler  prefetch_from_storage("req0")     retracted, prefetched again: operation B, same rid
  io, sync   prefetch_io_aux_func, prefetch_sync_thread_func
                                               A terminated: ACK(0 tokens), ACK(completed_req)
  scheduler  drain_storage_control_queues()    A's completed_req: "req0" is in ongoing_prefetch
                                               (B's entry), so _handle_prefetch_result(A) runs on
                                               B's entry, whose host_indices is None: TypeError
"""

import sys
import threading
import time
from array import array
from collections import Counter
from queue import Queue
from types import SimpleNamespace

from sglang.srt.mem_cache.hybrid_cache.hybrid_cache_controller import HybridCacheController
from sglang.srt.mem_cache.unified_cache.component_type import ComponentType
from sglang.srt.mem_cache.unified_radix_cache import UnifiedRadixCache

from stand_ins import PAGE, HostPool, Storage, built, page_hashes

TOKENS = array("q", [7])  # the request's uncached tokens, as the scheduler passes them: 1 page


def controller(page_get=None):
    """The controller, its queues and stand-ins; `page_get`: IO's storage read (every page read)."""
    cc = HybridCacheController.__new__(HybridCacheController)
    for name in ("prefetch_queue", "prefetch_hit_queue", "prefetch_buffer", "prefetch_sync_queue",
                 "ack_prefetch_queue", "ack_backup_queue", "host_mem_release_queue"):
        setattr(cc, name, Queue())
    cc.extra_host_mem_release_queues = {}
    cc.storage_stop_event = threading.Event()
    cc.storage_backend = Storage()
    cc.mem_pool_host = HostPool(4)
    cc.page_size = PAGE
    cc.prefetch_hits_sync_groups = cc.prefetch_completion_sync_groups = []
    cc._all_reduce = lambda *args, **kwargs: None  # one rank: the MIN over the ranks is the rank's own
    cc.get_hash_str = page_hashes
    cc.page_get_func = page_get or (lambda operation, hashes, host_indices, extra_info=None: len(hashes))
    cc.host_memory_mode = "cache"
    cc.prefetch_capacity_limit = 1 << 20
    cc.prefetch_tokens_occupied = 0
    return cc


def _insert_host(node, key, host_indices, hashes):
    """The host tree takes what it is given, and already holds none of it."""
    return SimpleNamespace(cache_actions=[], host_insert_dropped=False, prefix_len=0)


def cache(cc, insert_host=_insert_host):
    """The cache over `cc`; `insert_host`: the host tree's insert (stale_ack_inserts_unwritten_slot.py
    records what it is given)."""
    return built(
        UnifiedRadixCache,
        tree_core=SimpleNamespace(
            page_size=PAGE, enable_storage=True, is_eagle=False,
            prefetch_anchor_info=lambda node: (None, None),
            insert_host=insert_host,
            commit_hicache_transfers=lambda *args, **kwargs: None,
        ),
        inc_host_lock_ref=lambda node: SimpleNamespace(to_dec_params=lambda: None),  # the anchor is the root
        dec_host_lock_ref=lambda node, params: None,
        _all_reduce=lambda *args, **kwargs: None,
        cache_controller=cc, disable=False, tree_components=(ComponentType.FULL,), components={},
        sidecar_pool_specs=[], host_memory_mode="cache", buffer_pipeline=None, linker=None,
        prefetch_threshold=PAGE, prefetch_stop_policy="best_effort", ongoing_prefetch={},
        prefetch_loaded_tokens_by_reqid={}, storage_existence_cache=None, enable_storage_metrics=False,
        storage_metrics_collector=None, pp_rank=0, pp_size=1, _prefetch_outcome_stats=Counter(),
        _storage_prefetch_missed_rids=set(),
    )


def settle(done) -> None:
    """Wait (at most 5 s) until the IO and sync threads have passed everything on."""
    deadline = time.monotonic() + 5
    while not done() and time.monotonic() < deadline:
        time.sleep(0.01)


def main() -> int:
    cc = controller()
    tree = cache(cc)
    rid = "req0"

    tree.prefetch_from_storage(rid, "root", TOKENS)  # operation A
    a = tree.ongoing_prefetch[rid].operation
    cc.storage_stop_event.set()  # prefetch_thread_func serves what is queued and returns
    cc.prefetch_thread_func()
    cc.storage_stop_event.clear()
    tree.drain_storage_control_queues()  # A's hit: host slots, A on prefetch_buffer
    assert a.host_indices is not None and cc.prefetch_buffer.qsize() == 1
    assert tree.check_prefetch_progress(rid), "best_effort admits at once"
    tree.prefetch_from_storage(rid, "root", TOKENS)  # retracted and prefetched again: operation B
    b = tree.ongoing_prefetch[rid].operation
    assert b is not a

    io = threading.Thread(target=cc.prefetch_io_aux_func, daemon=True)
    sync = threading.Thread(target=cc.prefetch_sync_thread_func, daemon=True)
    io.start()
    sync.start()
    # A's two ACKs (its one batch's completed_tokens, then completed_req) reach the scheduler's queue
    settle(lambda: cc.ack_prefetch_queue.qsize() >= 2)
    cc.storage_stop_event.set()
    io.join()
    sync.join()
    try:
        tree.drain_storage_control_queues()  # A's ACKs, drained while B is the request's prefetch
    except TypeError as exc:
        print(f"REPRODUCED: the old operation's completed_req ACK ran _handle_prefetch_result on the "
              f"request's new prefetch (matched by rid): the scheduler thread raises TypeError ({exc})")
        return 1
    print("not reproduced: the old operation's ACKs left the request's new prefetch alone "
          f"(its entry {'kept' if rid in tree.ongoing_prefetch else 'gone'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
