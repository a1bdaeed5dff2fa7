"""A storage backend that raises in its existence query ends the rank's prefetch thread.

SGLang 0.5.19 to 0.5.21 (0.5.22 catches the exception and counts the query as a miss), any
prefetch policy, one rank, no GPU needed:

    pip install sglang==0.5.21      # torch on the CPU is enough
    python docs/repro/storage_query_raises_ends_prefetch_thread.py   # stand_ins.py beside it

Exit status 1 and "REPRODUCED" when the fault shows, 0 when it does not. The controller is built
the way SGLang's own unit tests build it (`__new__` and the attributes the thread reads); the
thread's loop is the release's own `prefetch_thread_func`, run in this thread until its queue is
empty (the stop event is set first):

  scheduler  cc.prefetch("req0", ...), cc.prefetch("req1", ...)   two operations on prefetch_queue
  prefetch   prefetch_thread_func()   req0's query: batch_exists raises, and nothing in the loop
                                      catches it: the thread is gone, req0 and req1 never reach
                                      prefetch_hit_queue
"""

import sys
import threading
from array import array
from queue import Queue

from sglang.srt.managers.cache_controller import HiCacheController

from stand_ins import PAGE, UnreachableStorage, page_hashes



def controller():
    cc = HiCacheController.__new__(HiCacheController)
    for name in ("prefetch_queue", "prefetch_hit_queue", "prefetch_buffer", "ack_prefetch_queue",
                 "host_mem_release_queue"):
        setattr(cc, name, Queue())
    cc.storage_stop_event = threading.Event()
    cc.storage_backend = UnreachableStorage()
    cc.page_size = PAGE
    cc.prefetch_hits_sync_groups = []
    cc._all_reduce = lambda *args, **kwargs: None  # one rank: the MIN over the ranks is the rank's own
    # 0.5.19 hashes the pages with the function it binds when the backend attaches
    cc.get_hash_str = page_hashes
    return cc


def main() -> int:
    cc = controller()
    cc.prefetch("req0", array("q", [7]))
    cc.prefetch("req1", array("q", [8]))
    cc.storage_stop_event.set()  # prefetch_thread_func then serves what is queued and returns
    try:
        cc.prefetch_thread_func()
    except ConnectionError as exc:
        print(f"REPRODUCED: the storage backend's exception ({exc}) ended prefetch_thread_func: "
              f"{cc.prefetch_hit_queue.qsize()} of 2 operations reached prefetch_hit_queue, and no later "
              "prefetch of this rank will (with TP > 1 its peers' prefetch threads wait for it in the "
              "hit count's all_reduce)")
        return 1
    print(f"not reproduced: the failed query was caught; {cc.prefetch_hit_queue.qsize()} of 2 operations "
          "reached prefetch_hit_queue")
    return 0


if __name__ == "__main__":
    sys.exit(main())
