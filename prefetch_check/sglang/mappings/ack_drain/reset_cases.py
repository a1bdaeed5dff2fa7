"""The ack-drain cases of the cache's reset (0.5.19 on): the engine paused (as RL frameworks pause it
around a weight update), `flush_cache` asks the tree's own `Scheduler.is_fully_idle`, and where it
lets the flush through the tree's own reset stops, joins and restarts the storage threads
(model/code/worlds/ack_drain/cache_reset.py, flush_gate.py). Each names the round from which the
flush is asked."""

from __future__ import annotations

from prefetch_check.model.code import CodeConfig, CodeLimits
from prefetch_check.sglang.code_checks import Case, needs
from prefetch_check.sglang.mappings.ack_drain.buffer_cases import skip as buffer_skip
from prefetch_check.sglang.mappings.ack_drain.options import PROTOCOL
from prefetch_check.sglang.mappings.ack_drain.retry_shape import retry_skip

# the reset the world runs: the cache's _reset_full hands the storage threads to the controller's reset
_resets = needs("mem_cache/unified_radix_cache.py", "self.cache_controller.reset()",
                "its cache's reset does not call the controller's reset, as the reset world models")


def skip(srt) -> str:
    return _resets(srt)


def skip_retries(srt) -> str:
    return _resets(srt) or retry_skip(srt)


def skip_buffer(srt) -> str:
    return _resets(srt) or buffer_skip(srt)


# how the controller's reset joins the sync thread: 0.5.19-0.5.20 without a timeout (a stranded thread
# keeps the scheduler in the join: deadlock_freedom), 0.5.21 on through _stop_storage_threads, whose
# 10 s join is followed by a RuntimeError (no_crash)
UNTIMED_JOIN = "            self.prefetch_sync_thread.join()\n"
_joins_untimed = needs("managers/cache_controller.py", UNTIMED_JOIN,
                       "its reset joins the storage threads with a timeout: the case of that shape judges it")


def skip_untimed(srt) -> str:
    return _resets(srt) or _joins_untimed(srt)


def skip_timed(srt) -> str:
    return _resets(srt) or ("" if _joins_untimed(srt) else
                            "its reset joins the storage threads without a timeout: the case of that shape judges it")


TWO = CodeConfig(world=PROTOCOL, ranks=2, abort_round=1, reset_round=1)
STRANDED = "2 ranks, aborted by its client in round 1, then flush_cache"
RESET_CASES: tuple[Case, ...] = (
    # flush_cache asks the tree's own Scheduler.is_fully_idle first (worlds/ack_drain/flush_gate.py),
    # which refuses while the cache's books hold a prefetch, a write-through, a backup or a load-back
    # (and before 0.5.21, any waiting request); the client asks again after each round until it
    # succeeds. So each reset comes once the path is idle by the cache's books, and the request
    # arriving after it is served by the threads the reset started (their stop event cleared, their
    # queues emptied). 177 runs on 0.5.21-0.5.23 (135 on 0.5.19-0.5.20), exhaustive, clean
    Case("1 rank, flush_cache asked after round 1's drain (refused until the cache is idle)",
         CodeConfig(world=PROTOCOL, ranks=1, reset_round=1), skip=skip),
    # 397 runs on 0.5.21-0.5.23 (285 on 0.5.19-0.5.20), exhaustive, clean; the late request's delivery is judged
    Case("1 rank, flush_cache asked after round 1's drain, then a request arrives",
         CodeConfig(world=PROTOCOL, ranks=1, requests=2, reset_round=1, reset_arrival=True), skip=skip),
    # best_effort admits a request early and terminates its fetch, which may still be in the storage
    # threads when the cache's books let the flush through (6,277 runs on 0.5.21-0.5.23, 1,933 on
    # 0.5.19-0.5.20, exhaustive, clean)
    Case("1 rank, best_effort, flush_cache asked after round 1's drain, then a request arrives",
         CodeConfig(world=PROTOCOL, ranks=1, requests=2, reset_round=1, reset_arrival=True, policy="best_effort"),
         skip=skip),
    # under host_memory_mode buffer_only: the gate reads the pipeline's is_idle() too; the cache's
    # reset runs the pipeline's own reset, and flush_cache clears the device pool (392 runs on 0.5.22-0.5.23,
    # exhaustive, clean)
    Case("1 rank, buffer_only, 1 device page, flush_cache asked after round 1's drain, then a request arrives",
         CodeConfig(world=PROTOCOL, ranks=1, requests=2, host_memory_mode="buffer_only", device_pages=1,
                    reset_round=1, reset_arrival=True), skip=skip_buffer),
    # buffer_only's write path (hicache write_through): asked while the computed request's write is in
    # its D2H copy or its storage write, refused until the pipeline is idle (2,011 runs on 0.5.22-0.5.23,
    # exhaustive, clean)
    Case("1 rank, buffer_only, write_through, flush_cache asked mid-write",
         CodeConfig(world=PROTOCOL, ranks=1, host_memory_mode="buffer_only", backup=True, reset_round=2),
         skip=skip_buffer),
    # the same flush in the scheduler's retry path (the tree's own Scheduler methods, retries on as by
    # default; 172 runs on 0.5.21-0.5.23, 130 on 0.5.20, exhaustive, clean)
    Case("1 rank, retries: flush_cache asked after round 1's drain",
         CodeConfig(world=PROTOCOL, ranks=1, pages=1, retries=True, reset_round=1), skip=skip_retries),
    # the client aborts its request in round 1 and asks for the flush (as RL loops abort every request
    # before a weight update): release_aborted_request terminates the fetch and pops its
    # ongoing_prefetch entry while IO may still run it, so is_fully_idle lets the flush through. At
    # two ranks a rank's sync thread may have taken the fetch's completion ACK into the all_reduce
    # while its peer's reset stopped the peer's sync thread first: it waits forever, and its reset's
    # join raises (0.5.21 on) or never returns (before). Each case judges only what the stranded
    # thread does and stops once both are violated (1,500 runs on 0.5.23, 883 on 0.5.20)
    Case(f"{STRANDED} (the reset's join times out)", TWO, judges=("no_crash", "progress"),
         limits=CodeLimits(max_seconds=300, stop_on=("no_crash", "progress")), skip=skip_timed),
    Case(f"{STRANDED} (the reset's join waits)", TWO, judges=("deadlock_freedom", "progress"),
         limits=CodeLimits(max_seconds=300, stop_on=("deadlock_freedom", "progress")), skip=skip_untimed),
)
