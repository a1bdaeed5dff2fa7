"""A readmitted request's old completion ACK inserts a host slot IO never wrote (0.5.19 matches by rid).

The data_integrity and host_memory schedules of the stale ACK (docs/findings.md;
stale_ack_handles_new_prefetch.py is its crash schedule). SGLang 0.5.19, `--hicache-storage-prefetch-policy best_effort`, one rank,
no GPU needed:

    pip install sglang==0.5.19      # torch on the CPU is enough
    python docs/repro/stale_ack_inserts_unwritten_slot.py   # stand_ins.py and the crash script beside it

Exit status 1 and "REPRODUCED" when the fault shows, 0 when it does not. The classes are built
the way SGLang's own unit tests build them; every method on the prefetch path is the release's
own, the IO and sync threads run as threads, and the storage read of IO waits on an event so the
order is the one prefetch-check found (its 82-step data_integrity counterexample):

  scheduler  prefetch_from_storage("req0")     operation A: 1 page in storage, its hit drained,
                                               A on prefetch_buffer
  io         prefetch_io_aux_func              reads A's page into A's host slot (and waits)
  scheduler  check_prefetch_progress("req0")   best_effort: A terminated, the request admitted
  scheduler  prefetch_from_storage("req0")     retracted, prefetched again: operation B, same rid;
                                               B's hit on prefetch_hit_queue
  io, sync                                     A: ACK(1 token), ACK(completed_req)
  scheduler  drain_storage_control_queues()    B's hit first: B's host slot, B to prefetch_buffer;
                                               then A's ACKs, matched by rid to B's entry: A's
                                               result (1 token) inserted with B's host slot, which
                                               IO has not written: the tree serves garbage KV; and
                                               A's own slot, its count raised to 1 after its result
                                               was handled with 0, is released from [1:]: leaked
"""

import sys
import threading
from types import SimpleNamespace

from stale_ack_handles_new_prefetch import TOKENS, cache, controller, settle  # the same set-up


class Reads:
    """IO's storage reads: the host slots each wrote; A's read waits until the script lets it go."""

    def __init__(self):
        self.written: set[int] = set()
        self.first_read, self.go = threading.Event(), threading.Event()

    def page_get(self, operation, hashes, host_indices, extra_info=None) -> int:
        self.written.update(int(i) for i in host_indices)
        self.first_read.set()
        self.go.wait(5)
        return len(hashes)


def queued_hits(cc) -> None:
    """The prefetch thread serves what is queued (its loop returns once stopped and empty)."""
    cc.storage_stop_event.set()
    cc.prefetch_thread_func()
    cc.storage_stop_event.clear()


def main() -> int:
    reads, inserted = Reads(), []

    def insert_host(node, key, host_indices, hashes):
        inserted.extend(int(i) for i in host_indices)
        return SimpleNamespace(cache_actions=[], host_insert_dropped=False, prefix_len=0)

    cc = controller(reads.page_get)
    tree = cache(cc, insert_host)
    rid = "req0"

    tree.prefetch_from_storage(rid, "root", TOKENS)  # operation A
    a = tree.ongoing_prefetch[rid].operation
    queued_hits(cc)
    tree.drain_storage_control_queues()  # A's hit: its host slot, A on prefetch_buffer
    a_slots = [int(i) for i in a.host_indices]
    io = threading.Thread(target=cc.prefetch_io_aux_func, daemon=True)
    io.start()
    reads.first_read.wait(5)  # IO has read A's page into A's slot
    assert tree.check_prefetch_progress(rid), "best_effort admits at once"
    tree.prefetch_from_storage(rid, "root", TOKENS)  # retracted and prefetched again: operation B
    b = tree.ongoing_prefetch[rid].operation
    assert b is not a
    queued_hits(cc)  # B's hit waits on prefetch_hit_queue
    sync = threading.Thread(target=cc.prefetch_sync_thread_func, daemon=True)
    sync.start()
    reads.go.set()  # IO finishes A: ACK(completed_tokens), ACK(completed_req)
    settle(lambda: cc.ack_prefetch_queue.qsize() >= 2)
    cc.storage_stop_event.set()
    io.join()
    sync.join()
    tree.drain_storage_control_queues()  # B's hit, then A's ACKs while B is the request's prefetch
    tree.drain_storage_control_queues()  # the host memory releases those ACKs queued
    unwritten = [slot for slot in inserted if slot not in reads.written]
    # A's slots: A's count, raised to 1 by its own ACK after its result was handled with 0, makes its
    # completed_req release host_indices[1:], nothing; no one else holds them
    leaked = [slot for slot in a_slots if slot not in cc.mem_pool_host.free_slots and slot not in inserted]
    if unwritten or leaked:
        print(f"REPRODUCED: the old operation's ACKs, matched by rid to the new prefetch: host slot(s) "
              f"{unwritten} inserted into the tree as the request's page although IO wrote only "
              f"{sorted(reads.written)} (A's {a_slots}); A's slot(s) {leaked} neither free nor in the tree "
              "(leaked)")
        return 1
    print(f"not reproduced: the tree got host slots {inserted}, all written by IO; leaked: {leaked}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
