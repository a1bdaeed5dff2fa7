"""The cache's reset drops a write's D2H ack unsynchronised: the copy lands after the host pool
handed its slots to a new request.

SGLang 0.5.19-0.5.23 under hicache write_through (the default write policy), in the default host
memory mode (cache) and, from 0.5.22, in buffer_only; one rank, no GPU needed:

    pip install sglang==0.5.23      # torch on the CPU is enough
    python docs/repro/reset_leaves_d2h_copy_in_flight.py   # stand_ins.py beside it

Exit status 1 and "REPRODUCED" when the fault shows, 0 when it does not. The controller is built
the way SGLang's own unit tests build one (`__new__` and the attributes the reset reads); a write's
D2H copy is an event that is still running (`query()` False, as `writing_check` leaves such an ack
queued) and copies when it is synchronised or when the script lets the stream finish:

  scheduler  the computed request's write-through: its D2H into host slots 1-2, its ack queued
  scheduler  flush_cache -> the cache's reset -> the controller's own reset(): ack_write_queue
             cleared; then mem_pool_host.clear(), as UnifiedRadixCache._reset_full does
  scheduler  a new request's prefetch gets host slots 0-1; the IO thread writes its pages there
  GPU        the write stream finishes the old copy: host slot 1 now holds the old request's row
"""

import sys
import threading
from types import SimpleNamespace

from sglang.srt.managers.cache_controller import HiCacheController

from stand_ins import HostPool, built


class RunningCopy:
    """A D2H copy the write stream is still running: done when synchronised, or when the stream
    gets to it (`finish`), whichever comes first."""

    def __init__(self, host, slots, rows):
        self.host, self.slots, self.rows, self.done = host, slots, rows, False

    def query(self):
        return self.done

    def synchronize(self):
        self.finish()

    def finish(self):
        if not self.done:
            self.done = True
            for slot, row in zip(self.slots, self.rows):
                self.host[slot] = row


def main() -> int:
    pool, host = HostPool(3), {}  # the host pool's accounting, and what each host slot holds
    pool.alloc(1)  # slot 0: a prefetch's staging
    staging = [int(x) for x in pool.alloc(2)]  # slots 1-2: the write's staging
    copy = RunningCopy(host, staging, ["old request, device row 2", "old request, device row 3"])
    cc = built(HiCacheController, enable_storage=False, storage_stop_event=threading.Event(), write_queue=[],
               load_queue=[], ack_write_queue=[SimpleNamespace(node_ids=[7], finish_event=copy)], ack_load_queue=[])
    cc.reset()  # the release's own reset, as flush_cache -> tree_cache.reset() -> _reset_full calls it
    pool.free_slots = list(range(3))  # mem_pool_host.clear(), next in _reset_full
    if copy.done:
        print("not reproduced: the reset waited for the write's D2H copy before clearing its ack")
        return 0
    new = [int(x) for x in pool.alloc(2)]  # a request after the reset: its prefetch's staging
    for slot, page in zip(new, ["new request, page 0", "new request, page 1"]):
        host[slot] = page  # the IO thread's storage read
    copy.finish()  # the write stream gets to the old copy
    hit = [s for s in new if host[s].startswith("old")]
    if not hit:
        print("not reproduced: the late copy landed on no slot the new request holds")
        return 0
    print(f"REPRODUCED: the reset cleared the write's D2H ack without synchronising it; its copy "
          f"landed after the new request's storage read, so host slot(s) {hit} hold "
          f"{[host[s] for s in hit]} instead of the new request's pages")
    return 1


if __name__ == "__main__":
    sys.exit(main())
