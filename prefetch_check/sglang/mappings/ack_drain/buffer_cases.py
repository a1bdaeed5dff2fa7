"""The ack-drain cases with `--hicache-host-memory-mode buffer_only` (0.5.19 on): the tree's
BufferModePipeline runs as written (model/code/worlds/ack_drain/buffer/). Each names its
non-default settings; together they run the pipeline's prefetch side: the hit's staging
allocation and anchor lock, parking under host pressure, staging at the ACK, admission's
plan and load-back, the load ack, an anchor lost to eviction, an abort of a staged hold and a staged span
whose unpinned anchor shrank."""

from __future__ import annotations

from prefetch_check.model.code import CodeConfig
from prefetch_check.sglang.code_checks import Case
from prefetch_check.sglang.mappings.ack_drain.options import PROTOCOL

BUFFER = "host_memory_mode=buffer_only"


def _buffer(**kwargs) -> CodeConfig:
    return CodeConfig(world=PROTOCOL, host_memory_mode="buffer_only", **kwargs)


BUFFER_CASES: tuple[Case, ...] = (
    Case(f"1 rank, {BUFFER}", _buffer(ranks=1)),
    Case(f"2 ranks, {BUFFER}", _buffer(ranks=2)),
    Case(f"1 rank, {BUFFER}, 1 page on the device (anchor locked)", _buffer(ranks=1, device_pages=1)),
    Case(f"1 rank, {BUFFER}, 1 page on the device, evicted in round 1", _buffer(ranks=1, device_pages=1,
                                                                               evict_device_round=1)),
    Case(f"1 rank x 2 requests, {BUFFER}, host pool of 2 pages (a hit parks)", _buffer(ranks=1, requests=2,
                                                                                       host_pages=2)),
    Case(f"1 rank, {BUFFER}, abort in round 2", _buffer(ranks=1, device_pages=1, abort_round=2)),
    # the anchor (2 pages) over the lock cap of a 3-page device pool: launched unpinned, evicted
    # after staging, so admission finds the span shrunk and prefetches again
    Case(f"1 rank x 3 pages, {BUFFER}, 2 on a 3-page device, evicted in round 2",
         _buffer(ranks=1, pages=3, device_pages=2, device_room=3, evict_device_round=2)),
)
