"""flush_cache's gate: the tree's own `Scheduler.is_fully_idle`, compiled from managers/scheduler.py
as written (scheduler_methods.py), asked the way the tree's `flush_cache` asks it with the engine
paused (0.5.21 on: `ignore_waiting=self._engine_paused`, so waiting requests that hold no KV do not
count; before, any waiting request refuses). Its HiCache part reads the cache's books as written:
`ongoing_write_through`, `ongoing_load_back` and, with storage, `ongoing_prefetch`, `ongoing_backup`
and under buffer_only the pipeline's `is_idle()`. So a flush comes only where the release lets it:
never under a waiting request's prefetch still in the cache's books, a write not yet acked, a
storage backup or a load-back.

The scheduler it reads is idle apart from the prefetch path (`IdleScheduler`): no batch running or
last, no chunked request, no grammar, disaggregation, HiSparse or LMCache, one PP stage; its
waiting queue holds the world's waiting requests, none holding KV. Anything else it reads is not
modelled (Strict)."""

from __future__ import annotations

import functools
from pathlib import Path
from types import SimpleNamespace

from prefetch_check.model.code.stand_ins.context import Strict
from prefetch_check.model.code.stand_ins.errors import NotModelled
from prefetch_check.model.code.worlds.ack_drain.scheduler_methods import (SCHEDULER, DisaggregationMode, Memory,
                                                                        scheduler_methods)

CACHE = "mem_cache/unified_radix_cache.py"
PAUSED_CALL = "self.is_fully_idle(ignore_waiting=self._engine_paused)"  # flush_cache's call, 0.5.21 on


class _Batch:
    """The running batch of an engine paused with nothing running."""

    def is_empty(self) -> bool:
        return True


class _Dllm:
    def any_staging_reqs(self) -> bool:
        return False


class IdleScheduler(Strict):
    """The scheduler as is_fully_idle reads it: idle but for the rank's cache and waiting requests."""

    _pc_what = "scheduler (flush_cache's is_fully_idle)"

    def __init__(self, world, cache, waiting: int):
        self.world, self.tree_cache = world, cache
        self.running_batch, self.chunked_req, self.last_batch = _Batch(), None, None
        self.dllm_manager = _Dllm()
        self.enable_overlap, self.result_queue = False, []
        self.waiting_queue = [SimpleNamespace(kv=SimpleNamespace(holds_kv=False)) for _ in range(waiting)]
        self._engine_paused = True
        self.disaggregation_mode = DisaggregationMode.NULL
        self.grammar_manager = SimpleNamespace(grammar_queue=[])
        self.enable_hisparse, self.enable_hierarchical_cache, self.enable_lmcache = False, True, False

    def _pp_microbatches_drained(self) -> bool:
        return True  # one PP stage (the reset world's pp_size is 1)


@functools.lru_cache(maxsize=4)
def _gate(srt: str, host_memory_mode: str) -> tuple:
    """The tree's is_fully_idle (None where it has none) and whether flush_cache asks it with the
    engine paused, once per tree and mode (reading scheduler.py was most of a run's time)."""
    methods = scheduler_methods(Path(srt), Memory(0, 0, host_memory_mode), ("is_fully_idle",))
    return methods.get("is_fully_idle"), PAUSED_CALL in (Path(srt) / SCHEDULER).read_text()


class FlushGate:
    """The tree's is_fully_idle for one run."""

    def __init__(self, run):
        srt = Path(run.modules[CACHE].__file__).resolve().parents[1]
        self.is_fully_idle, self.paused_call = _gate(str(srt), run.config.host_memory_mode)
        if self.is_fully_idle is None:
            raise NotModelled("Scheduler.is_fully_idle (flush_cache's gate, read from the tree)", SCHEDULER)
        self.world = run.world

    def idle(self, cache, waiting: int) -> bool:
        """What the tree's flush_cache asks before it resets the cache."""
        scheduler = IdleScheduler(self.world, cache, waiting)
        if self.paused_call:
            return self.is_fully_idle(scheduler, ignore_waiting=scheduler._engine_paused)
        return self.is_fully_idle(scheduler)
