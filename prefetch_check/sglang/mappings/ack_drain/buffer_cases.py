"""The ack-drain cases with `--hicache-host-memory-mode buffer_only` (0.5.19 on): the tree's
BufferModePipeline runs as written (model/code/worlds/ack_drain/buffer/). Each names its
non-default settings; together they run the pipeline's prefetch side: the hit's staging
allocation and anchor lock, parking under host pressure, staging at the ACK, admission's
plan and load-back, the load ack, an anchor lost to eviction, an abort of a staged hold and a staged span
whose unpinned anchor shrank; and, under hicache write_through (CodeConfig.backup), its write side: a
request the scheduler computed, written back through the pipeline to storage."""

from __future__ import annotations


from prefetch_check.model.code import CodeConfig, CodeLimits
from prefetch_check.sglang.code_checks import LIMITS, Case, needs
from prefetch_check.sglang.mappings.ack_drain.options import PROTOCOL
from prefetch_check.sglang.mappings.ack_drain.retry_shape import retry_skip

BUFFER = "host_memory_mode=buffer_only"
PIPELINE = "mem_cache/buffer_mode/pipeline.py"
# the pipeline shape the world's stand-ins model (0.5.22 on): the hit drain hands the hit to this method
STAGING_ENTRY = "def allocate_and_queue_prefetch("


# the pipeline shape the world's stand-ins model (0.5.22 on); before it, staging reads device state
# the world's device tree does not give (0.5.20-0.5.21: a match's device indices; 0.5.19: another
# anchor-lock variable). Such a tree gets no buffer_only case: its edits are refused by coverage.
skip = needs(PIPELINE, STAGING_ENTRY, "its buffer pipeline predates the staging the world models (0.5.22 on)")


def _retry_skip(tree):
    """A buffer_only case of the retry world: the pipeline's shape and the scheduler's retry methods."""
    return skip(tree) or retry_skip(tree)


def _buffer(**kwargs) -> CodeConfig:
    return CodeConfig(world=PROTOCOL, host_memory_mode="buffer_only", **kwargs)


WRITE = "write_through"  # the write path's cases (worlds/ack_drain/buffer/backup_run.py)


def _case(name: str, config: CodeConfig, limits: CodeLimits = LIMITS) -> Case:
    return Case(name, config, limits=limits, skip=skip)


BUFFER_CASES: tuple[Case, ...] = (
    _case(f"1 rank, {BUFFER}", _buffer(ranks=1)),
    _case(f"2 ranks, {BUFFER}", _buffer(ranks=2)),
    _case(f"1 rank, {BUFFER}, 1 page on the device (anchor locked)", _buffer(ranks=1, device_pages=1)),
    _case(f"1 rank, {BUFFER}, 1 page on the device, evicted in round 1",
          _buffer(ranks=1, device_pages=1, evict_device_round=1)),
    _case(f"1 rank x 2 requests, {BUFFER}, host pool of 2 pages (a hit parks)",
          _buffer(ranks=1, requests=2, host_pages=2)),
    _case(f"1 rank, {BUFFER}, abort in round 2", _buffer(ranks=1, device_pages=1, abort_round=2)),
    # the anchor (2 pages) over the lock cap of a 3-page device pool: launched unpinned, evicted
    # after staging, so admission finds the span shrunk and prefetches again
    _case(f"1 rank x 3 pages, {BUFFER}, 2 on a 3-page device, evicted in round 2",
          _buffer(ranks=1, pages=3, device_pages=2, device_room=3, evict_device_round=2)),
    # SGLang's default stop policy (0.5.12 on): the deadlines fire as the search's choices
    # (worlds/deadlines.py) in the buffer world's own loop. 0.5.23: 775 runs, exhaustive, clean
    _case(f"1 rank, {BUFFER}, timeout (deadlines fire as choices)", _buffer(ranks=1, policy="timeout")),
    # a deadline cut with nothing usable fetched while the anchor is locked: stage_completed_prefetch's
    # recompute branch gives the lock back (a one-place mutant that keeps it escaped every other
    # case: docs/code-mutants.md). 0.5.23: 676 runs, 0.5.22: 997, exhaustive, clean
    _case(f"1 rank x 2 pages, {BUFFER}, timeout, 1 on the device (anchor locked; a cut with nothing fetched)",
          _buffer(ranks=1, pages=2, device_pages=1, policy="timeout")),
    # the scheduler's own issue, retry poll and admission (the retry world's waiting queue, the
    # tree's Scheduler methods): a staged plan rebuilt at admission, and a staged span whose anchor
    # shrank, refetched through StoragePrefetchRetries.refetch and pop_ready instead of the world's
    # direct re-issue (issue 29's held-out escapes: a refetch loop the re-issue cap ends is caught
    # as the prefix it loses), and an anchor lost before the IO commit, which the world's own loop
    # admits short (4 runs) and the scheduler re-issues through its device-hit-loss re-query. 0.5.23:
    # 18, 31 and 47 runs, exhaustive, clean
    Case(f"1 rank, {BUFFER}, retries, 1 page on the device",
         _buffer(ranks=1, device_pages=1, retries=True), skip=_retry_skip),
    Case(f"1 rank, {BUFFER}, retries, 1 page on the device, evicted in round 1",
         _buffer(ranks=1, device_pages=1, evict_device_round=1, retries=True), skip=_retry_skip),
    Case(f"1 rank x 3 pages, {BUFFER}, retries, 2 on a 3-page device, evicted in round 2",
         _buffer(ranks=1, pages=3, device_pages=2, device_room=3, evict_device_round=2, retries=True),
         skip=_retry_skip),
    # a higher-priority arrival at a full queue aborts the waiting request whose prefetch is staged
    # and anchored (the retry world's late arrival, CodeConfig.arrival): 1,712 runs on 0.5.23, clean;
    # without the release the staged slot, the anchor's pin and the records stay (three properties)
    Case(f"1 rank x 2 requests, {BUFFER}, retries, 1 page on the device, req1 arrives in round 1 and "
         "outranks req0 (aborted)",
         _buffer(ranks=1, requests=2, device_pages=1, retries=True, arrival_round=1, arrival="preempts"),
         skip=_retry_skip),
    # the write side: in round 1 the scheduler inserts a request it computed, whose new node the
    # tree's insert hands to the pipeline (enqueue, flush: staging and the node's lock, the D2H ack,
    # the backup thread's storage write, the storage ack freeing the staging); beside it the
    # prefetch of the other request, whose load-back insert is believed stored (not written again).
    # Eviction in round 2 meets the node locked from its D2H launch to its ack; with a host pool of
    # 2 pages the prefetch's staging makes the write wait, and eviction sweeps the queued intent;
    # with two requests the write's staging parks the second hit until the storage ack frees it.
    # At two ranks the write and storage acks are drained at their MIN over the ranks; with the
    # prefetch fetching too the search takes minutes (the bench row), so the prefetch finds nothing.
    # 0.5.23: 268, 268, 30, 1,093 and 348 runs, exhaustive, clean
    _case(f"1 rank, {BUFFER}, {WRITE} (a computed request written back)", _buffer(ranks=1, backup=True)),
    _case(f"1 rank, {BUFFER}, {WRITE}, the written node evicted in round 2 (locked until its D2H ack)",
          _buffer(ranks=1, backup=True, evict_device_round=2)),
    _case(f"1 rank, {BUFFER}, {WRITE}, host pool of 2 pages, evicted in round 2 (a queued write swept)",
          _buffer(ranks=1, backup=True, host_pages=2, evict_device_round=2)),
    _case(f"1 rank x 2 requests, {BUFFER}, {WRITE}, host pool of 2 pages (the write's staging parks a hit)",
          _buffer(ranks=1, requests=2, backup=True, host_pages=2)),
    _case(f"2 ranks x 1 page, {BUFFER}, {WRITE}, nothing stored (the write's acks drained across ranks)",
          _buffer(ranks=2, pages=1, backup=True, hits=(0, 0))),
    # chunked prefill: the computed request inserted in two chunks (rounds 1 and 2), a chain of two
    # nodes whose child is admitted while its parent is in flight or believed stored; with a host
    # pool of 3 pages the prefetch's staging leaves a write window of one page, so the child's write
    # waits at flush_pending_writes' window gate until the parent's storage ack frees its staging.
    # (A mutation round's survivors: every other write case queues one write of a root node.)
    _case(f"1 rank, {BUFFER}, {WRITE}, prefilled in 2 chunks (a chain of 2 nodes)",
          _buffer(ranks=1, backup=True, computed_chunks=2)),
    _case(f"1 rank, {BUFFER}, {WRITE}, prefilled in 2 chunks, host pool of 3 pages (the child waits for the window)",
          _buffer(ranks=1, backup=True, computed_chunks=2, host_pages=3)),
    # a first chunk of 2 pages against a host pool of 1: the parent's write could never stage and is
    # dropped at admission (`_backup_oversize`), and its child's with it (no write above a dropped
    # parent); nothing is stored, so the prefetch finds nothing. 0.5.23: 5 runs
    _case(f"1 rank x 3 pages, {BUFFER}, {WRITE}, nothing stored, prefilled in 2 chunks, host pool of 1 page "
          "(the 2-page parent dropped as oversize, its child with it)",
          _buffer(ranks=1, pages=3, backup=True, computed_chunks=2, host_pages=1, hits=(0,))),
    # the same chain of 1-page nodes through a host pool of 1 page: each write fits exactly and
    # stages in turn (a boundary a one-place edit of `_backup_oversize` moves). 0.5.23: 6 runs
    _case(f"1 rank, {BUFFER}, {WRITE}, nothing stored, prefilled in 2 chunks, host pool of 1 page "
          "(each node's write in turn)",
          _buffer(ranks=1, backup=True, computed_chunks=2, host_pages=1, hits=(0,))),
    # two requests of one prefix: another request computes request 0's tokens in two chunks while
    # request 0's prefetch is staged, so at admission the device tree covers the staged span and
    # the pipeline gives the staged hold back (`_resolve_device_covered`), and a write queued for a
    # span covered since is retired at the flush. 0.5.23: 25 runs
    _case(f"1 rank, {BUFFER}, {WRITE}, request 0's prefix computed by another request in 2 chunks (the device "
          "covers its staged span)",
          _buffer(ranks=1, backup=True, computed_shares=True, computed_chunks=2)),
    # the same prefix computed only to its first page: the device covers the head of request 0's
    # staged span, so the hit drain trims the device-resident head off the fetch
    # (`_trim_buffer_prefetch_full_head`) and admission loads the rest after the device's page (issue
    # 29's tenth mutant round: with the whole span covered, every edit of the trim got the release's
    # verdicts). 0.5.22-0.5.23: 25 runs, clean
    _case(f"1 rank, {BUFFER}, {WRITE}, request 0's first page computed by another request (the device covers the "
          "head of its staged span)",
          _buffer(ranks=1, backup=True, computed_shares=True, computed_pages=1)),
    # the write path under the default stop policy, one page (two: 15,443 runs, 45 s untraced).
    # 0.5.23: 5,538 runs, exhaustive, clean; 0.5.22: 9,438 runs, traced near the 120 s budget (cut
    # there under load), so 300 s
    _case(f"1 rank x 1 page, {BUFFER}, {WRITE}, timeout (deadlines fire as choices)",
          _buffer(ranks=1, pages=1, backup=True, policy="timeout"), CodeLimits(max_seconds=300)),
)
