"""With prefetch_threshold 0, a request whose pages storage does not hold is never admitted.

SGLang 0.5.18, `--hicache-storage-prefetch-policy wait_complete` and `prefetch_threshold: 0` in
`--hicache-storage-backend-extra-config` (neither is the default), one rank, no GPU needed:

    pip install sglang==0.5.18      # torch on the CPU is enough
    python docs/repro/threshold_zero_never_admits.py   # stand_ins.py beside it

Exit status 1 and "REPRODUCED" when the fault shows, 0 when it does not. The classes are built
the way SGLang's own unit tests build them (`__new__` and the attributes the path reads); every
method on the prefetch path is the release's own, the IO thread runs as a thread:

  scheduler  prefetch_from_storage("req0")    an operation for 1 page
  prefetch   prefetch_thread_func()           storage holds none of it: 0 hits
  scheduler  drain_storage_control_queues()   0 < 0 is false: not revoked; 0 host slots, on to IO
  io         prefetch_io_aux_func             no page to read: completed_tokens stays 0
  scheduler  check_prefetch_progress("req0")  can_terminate_prefetch: the page list is empty, so
                                              not completed, and nothing will ever change that
"""

import sys
import threading
import time
from array import array
from queue import Queue
from types import SimpleNamespace

from sglang.srt.managers.cache_controller import HiCacheController
from sglang.srt.mem_cache.hiradix_cache import HiRadixCache

from stand_ins import PAGE, HostPool, Storage, built, page_hashes

POLLS = 1000  # scheduler rounds the request is checked in


def controller():
    cc = HiCacheController.__new__(HiCacheController)
    for name in ("prefetch_queue", "prefetch_hit_queue", "ack_backup_queue", "host_mem_release_queue"):
        setattr(cc, name, Queue())
    cc.storage_stop_event = threading.Event()
    cc.storage_backend = Storage(stored=0)  # none of the pages asked for
    cc.mem_pool_host = HostPool(4)
    cc.page_size = PAGE
    cc.has_draft = False
    cc._all_reduce_prefetch_groups = lambda *args, **kwargs: None  # one rank
    cc.get_hash_str = page_hashes
    cc.prefetch_capacity_limit = 1 << 20
    cc.prefetch_tokens_occupied = 0
    return cc


def cache(cc):
    return built(
        HiRadixCache,
        _all_reduce_attn_groups=lambda *args, **kwargs: None,  # one rank
        cache_controller=cc, enable_storage=True, prefetch_threshold=0, page_size=PAGE, is_eagle=False,
        prefetch_stop_policy="wait_complete", ongoing_prefetch={}, prefetch_loaded_tokens_by_reqid={},
        enable_storage_metrics=False,
    )


def main() -> int:
    cc = controller()
    tree = cache(cc)
    root = SimpleNamespace(key=SimpleNamespace(extra_key=None, cache_salt=None),
                           protect_host=lambda: None, release_host=lambda: None)

    tree.prefetch_from_storage("req0", root, array("q", [7]))
    cc.storage_stop_event.set()  # prefetch_thread_func serves what is queued and returns
    cc.prefetch_thread_func()  # (it also starts the IO thread, which returns at once: the event is set)
    cc.storage_stop_event.clear()
    io = threading.Thread(target=cc.prefetch_io_aux_func, daemon=True)
    io.start()
    tree.drain_storage_control_queues()  # the 0-page hit, not revoked at threshold 0
    deadline = time.monotonic() + 5
    while not cc.prefetch_buffer.empty() and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.05)  # the IO thread's transfer of no page
    cc.storage_stop_event.set()
    io.join()

    admitted = [tree.check_prefetch_progress("req0") for _ in range(POLLS)]
    if not any(admitted):
        operation = tree.ongoing_prefetch["req0"][2]
        print(f"REPRODUCED: check_prefetch_progress answered False in all {POLLS} rounds: the 0-hit "
              f"operation was not revoked (threshold 0), its page list is empty (hash_value="
              f"{operation.hash_value}, completed_tokens={operation.completed_tokens}) and no thread has "
              "anything left to do for it: the request waits forever")
        return 1
    print(f"not reproduced: the request was admitted in round {admitted.index(True) + 1}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
