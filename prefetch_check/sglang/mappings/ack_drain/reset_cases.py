"""The ack-drain cases of the cache's reset while requests wait (0.5.19 on): the engine paused,
`flush_cache` resets the tree with a waiting request's fetch in flight (it ignores waiting requests
that hold no KV), and the tree's own reset stops, joins and restarts the storage threads
(model/code/worlds/ack_drain/cache_reset.py). Each names the round of the flush."""

from __future__ import annotations

from prefetch_check.model.code import CodeConfig, CodeLimits
from prefetch_check.sglang.code_checks import Case, needs
from prefetch_check.sglang.mappings.ack_drain.buffer_cases import skip as buffer_skip
from prefetch_check.sglang.mappings.ack_drain.options import PROTOCOL
from prefetch_check.sglang.mappings.ack_drain.retry_shape import retry_skip
from prefetch_check.sglang.mappings.ack_drain.write_through_cases import skip as write_through_skip

# the reset the world runs: the cache's _reset_full hands the storage threads to the controller's reset
_resets = needs("mem_cache/unified_radix_cache.py", "self.cache_controller.reset()",
                "its cache's reset does not call the controller's reset, as the reset world models")
# how the controller's reset joins the sync thread: 0.5.19-0.5.20 without a timeout (a stranded thread
# keeps the scheduler in the join: deadlock_freedom), 0.5.21 on through _stop_storage_threads, whose
# 10 s join is followed by a RuntimeError (no_crash)
UNTIMED_JOIN = "            self.prefetch_sync_thread.join()\n"
_joins_untimed = needs("managers/cache_controller.py", UNTIMED_JOIN,
                       "its reset joins the storage threads with a timeout: the case of that shape judges it")


def skip(srt) -> str:
    return _resets(srt)


def skip_retries(srt) -> str:
    return _resets(srt) or retry_skip(srt)


def skip_buffer(srt) -> str:
    return _resets(srt) or buffer_skip(srt)


def skip_write_through(srt) -> str:
    return _resets(srt) or write_through_skip(srt)


def skip_untimed(srt) -> str:
    return _resets(srt) or _joins_untimed(srt)


def skip_timed(srt) -> str:
    return _resets(srt) or ("" if _joins_untimed(srt) else
                            "its reset joins the storage threads without a timeout: the case of that shape judges it")


TWO = CodeConfig(world=PROTOCOL, ranks=2, reset_round=1)
STRANDED = "2 ranks, flush_cache (the cache's reset) after round 1's drain, a fetch in flight"
RESET_CASES: tuple[Case, ...] = (
    # 942 runs, exhaustive, clean on 0.5.21-0.5.23 (198 on 0.5.19-0.5.20)
    Case("1 rank, flush_cache (the cache's reset) after round 1's drain, its fetch in flight",
         CodeConfig(world=PROTOCOL, ranks=1, reset_round=1), skip=skip),
    # a new request as the engine resumes, served by the threads the reset started: their stop
    # event cleared, their queues emptied of the dropped fetch's items (1,111 runs on 0.5.21-0.5.23,
    # 296 on 0.5.19-0.5.20, exhaustive, clean; its delivery is judged)
    Case("1 rank, flush_cache after round 1's drain, a fetch in flight, then a request arrives",
         CodeConfig(world=PROTOCOL, ranks=1, requests=2, reset_round=1, reset_arrival=True), skip=skip),
    # under host_memory_mode buffer_only: the cache's reset runs the pipeline's own reset too (its
    # anchor locks, staged prefetches), and flush_cache clears the device pool; the prefetch anchored
    # at a device page pinned at the reset (1,093 runs on 0.5.22-0.5.23, exhaustive, clean)
    Case("1 rank, buffer_only, 1 device page, flush_cache after round 1's drain, then a request arrives",
         CodeConfig(world=PROTOCOL, ranks=1, requests=2, host_memory_mode="buffer_only", device_pages=1,
                    reset_round=1, reset_arrival=True), skip=skip_buffer),
    # under buffer_only's write path (hicache write_through): flush_cache waits for no write, so the
    # computed request's write is dropped by the pipeline's reset wherever it is. After round 1's drain
    # its D2H copy is in flight: the controller's reset clears its ack unsynchronised, the copy lands
    # when the write stream runs it, and the request arriving after the reset gets the same host slot
    # (2,091 runs on 0.5.22-0.5.23, exhaustive: data_integrity VIOLATED, docs/findings.md)
    Case("1 rank, buffer_only, write_through, flush_cache mid-D2H copy, then a request arrives",
         CodeConfig(world=PROTOCOL, ranks=1, requests=2, host_memory_mode="buffer_only", device_pages=1, backup=True,
                    reset_round=1, reset_arrival=True), skip=skip_buffer),
    # after round 2's drain the write is in the backup thread's storage write, which the reset's join
    # lets finish; its storage ack is dropped with the pipeline's entry (4,006 runs, exhaustive, clean)
    Case("1 rank, buffer_only, write_through, flush_cache mid-storage write",
         CodeConfig(world=PROTOCOL, ranks=1, host_memory_mode="buffer_only", backup=True, reset_round=2),
         skip=skip_buffer),
    # the same in cache mode, the default (write_through/): the write's D2H is submitted in the drain
    # just before writing_check asks whether it is done, a copy not yet done keeps its ack for the next
    # round, and the flush comes before it; the controller's reset clears the ack unsynchronised and
    # the copy lands on a host slot the request arriving after the reset was handed (3,302 runs on
    # 0.5.21-0.5.23, 1,736 on 0.5.19-0.5.20, exhaustive: data_integrity VIOLATED, docs/findings.md)
    Case("1 rank, write_through, flush_cache mid-D2H copy, then a request arrives",
         CodeConfig(world=PROTOCOL, ranks=1, requests=2, backup=True, reset_round=1, reset_arrival=True),
         skip=skip_write_through),
    # after round 2's drain the write may still be in its D2H copy, or in the backup thread's storage
    # write, which the reset's join lets finish (7,333 runs on 0.5.21-0.5.23, 2,121 on 0.5.19-0.5.20,
    # exhaustive, clean)
    Case("1 rank, write_through, flush_cache after round 2's drain, the write in flight",
         CodeConfig(world=PROTOCOL, ranks=1, backup=True, reset_round=2), skip=skip_write_through),
    # the same flush in the scheduler's retry path (the tree's own Scheduler methods, retries on as by
    # default): the reset drops the cache's retry registry while the scheduler's queue keeps the
    # request (924 runs on 0.5.21-0.5.23, 196 on 0.5.20, exhaustive, clean)
    Case("1 rank, retries: flush_cache after round 1's drain, its fetch in flight",
         CodeConfig(world=PROTOCOL, ranks=1, pages=1, retries=True, reset_round=1), skip=skip_retries),
    # the same at two ranks: a rank's sync thread may have taken its completion ACK into the
    # all_reduce while its peer's stop came first, so the peer's sync thread leaves and the first
    # waits forever. Its exhaustive search takes 187 s (0.5.23, gate "agreed"), so each case judges
    # only what the stranded thread does to the reset and stops once both are violated (899 runs on
    # 0.5.23 under the gate "any", 448 on 0.5.20); the other properties are the other cases'
    Case(f"{STRANDED} (the reset's join times out)", TWO, judges=("no_crash", "progress"),
         limits=CodeLimits(max_seconds=300, stop_on=("no_crash", "progress")), skip=skip_timed),
    Case(f"{STRANDED} (the reset's join waits)", TWO, judges=("deadlock_freedom", "progress"),
         limits=CodeLimits(max_seconds=300, stop_on=("deadlock_freedom", "progress")), skip=skip_untimed),
)
