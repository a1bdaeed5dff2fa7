"""flush_cache at TP 2 right after a client abort of a request whose fetch is in flight: one rank's
sync thread waits forever in the completion ACK's all_reduce that its peer's sync thread left, and
that rank's reset of the cache raises after its 10 s join (0.5.21 on: "Failed to stop HiCache
storage threads cleanly") or never returns (0.5.19-0.5.20: a join without a timeout). The abort's
`release_aborted_request` terminates the fetch and pops its `ongoing_prefetch` entry while IO may
still run it, so flush_cache's `is_fully_idle` lets the reset through (docs/findings.md); this
script shows what the reset then does. No GPU needed:

    pip install sglang==0.5.23      # torch on the CPU is enough
    python docs/repro/reset_strands_sync_thread.py   # stand_ins.py beside it; about 10 s

Exit status 1 and "REPRODUCED" when the fault shows, 0 when it does not. Two controllers (two TP
ranks) are built the way SGLang's own unit tests build one (`__new__` and the attributes the
threads and the reset read), each with the release's own storage threads started as
`_start_storage_threads` starts them, and a two-rank MIN standing in for the gloo all_reduce:

  rank 0   IO's completion ACK reaches the sync thread first: it takes it into the all_reduce
  rank 1   flush_cache: the release's own reset() sets the stop event before its IO's ACK comes;
           its sync thread leaves its loop (the reset's None, or its 1 s poll), the reset returns
  rank 0   flush_cache: reset() joins its sync thread, which waits in the all_reduce for rank 1's
           sync thread, gone
"""

import sys
import threading
from queue import Queue

from sglang.srt.managers.cache_controller import HiCacheController, PrefetchAck

from stand_ins import built

QUEUES = ("prefetch_queue", "prefetch_buffer", "prefetch_sync_queue", "prefetch_hit_queue", "ack_prefetch_queue",
          "backup_queue", "ack_backup_queue", "host_mem_release_queue")
THREADS = (("prefetch_thread", "prefetch_thread_func"), ("prefetch_io_aux_thread", "prefetch_io_aux_func"),
           ("prefetch_sync_thread", "prefetch_sync_thread_func"), ("backup_thread", "backup_thread_func"))
WAIT = 15.0  # seconds to wait for rank 0's reset (its join gives up after 10)


class TwoRankMin:
    """The completion ACK's all_reduce(MIN) over two ranks: each rank's call returns once both
    made it, as gloo's does (without gloo's 30 min timeout: a rank that never calls is waited for)."""

    def __init__(self):
        self.values, self.barrier = {}, threading.Barrier(2)

    def for_rank(self, rank):
        def all_reduce(tensor, op, groups):
            self.values[rank] = tensor.item()
            self.barrier.wait()
            tensor.fill_(min(self.values.values()))
            self.barrier.wait()
        return all_reduce


class _PoolHost:
    def clear(self):
        pass


def controller(rank, reduce):
    cc = built(HiCacheController, enable_storage=True, storage_stop_event=threading.Event(),
               write_queue=[], load_queue=[], ack_write_queue=[], ack_load_queue=[],
               prefetch_completion_sync_groups=["completion"], prefetch_tokens_occupied=0,
               mem_pool_host=_PoolHost())
    for name in QUEUES:
        setattr(cc, name, Queue())
    cc._all_reduce = reduce.for_rank(rank)
    for attr, func in THREADS:  # as _start_storage_threads starts them
        setattr(cc, attr, threading.Thread(target=getattr(cc, func), daemon=True))
        getattr(cc, attr).start()
    return cc


def main() -> int:
    reduce = TwoRankMin()
    rank0, rank1 = controller(0, reduce), controller(1, reduce)
    operation = object()  # the request's PrefetchOperation (the sync thread only passes it on)
    rank0.prefetch_sync_queue.put(PrefetchAck(rid="req0", operation=operation, completed_tokens=1))
    for _ in range(500):  # rank 0's sync thread takes the ACK into the all_reduce
        if reduce.barrier.n_waiting == 1:
            break
        threading.Event().wait(0.01)
    rank1.reset()  # rank 1's flush comes before its IO's ACK (which the reset's queue clear drops): its sync
    # thread leaves without it
    outcome = {}

    def flush_rank0():
        try:
            rank0.reset()
            outcome["returned"] = True
        except RuntimeError as exc:
            outcome["raised"] = str(exc)

    flusher = threading.Thread(target=flush_rank0, daemon=True)
    flusher.start()
    flusher.join(WAIT)
    stranded = reduce.barrier.n_waiting == 1
    if "raised" in outcome:
        print(f"REPRODUCED: rank 0's reset raised RuntimeError ({outcome['raised']}): its sync thread waits "
              "forever in the completion ACK's all_reduce, which rank 1's sync thread left when rank 1's reset "
              "stopped it first; flush_cache fails on rank 0 only")
        return 1
    if flusher.is_alive():
        print(f"REPRODUCED: rank 0's reset has not returned after {WAIT:.0f} s: it joins its sync thread, which "
              "waits forever in the completion ACK's all_reduce that rank 1's sync thread left when rank 1's "
              "reset stopped it first; flush_cache never returns on rank 0")
        return 1
    print(f"not reproduced: rank 0's reset returned (a sync thread left in the all_reduce: {stranded})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
