"""Buffer mode's steps of admitting one waiting request, as SCH `_get_new_batch_prefill_raw` and
schedule_policy's adder take them after `check_prefetch_progress` said the prefetch is done:
surface the loaded span (`pop_prefetch_loaded_span`), rebuild the staged plan from this pass's
device match (the pipeline's `prepare_staged_prefetch`: False when the staged span's anchor shrank,
which arms the request's refetch), then the adder's `init_load_back`. One copy for both scheduler
loops of the buffer_only world: its own (harness.py) and the retry world's waiting queue
(CodeConfig.retries: ../waiting_queue.py runs `Staging` between the tree's own Scheduler methods)."""

from __future__ import annotations

from prefetch_check.model.code.worlds.ack_drain.buffer.params import InitLoadBackParams


class Key:
    """A radix key as the device tree stand-in reads it."""

    def __init__(self, tokens):
        self.token_ids = tokens

    def __len__(self) -> int:
        return len(self.token_ids)


def surface_loaded(cache, req) -> None:
    """SCH: the L3-loaded span popped after the check; buffer mode marks it staged only later."""
    loaded, start = cache.pop_prefetch_loaded_span(req.cache_request_handle)
    if loaded > 0:
        req.storage_hit_length, req.storage_hit_start = loaded, start
        req.host_hit_is_storage = False


def load_back(cache, req) -> bool:
    """The adder: a staged plan is loaded back to the device (`init_load_back`); None is no room."""
    if req.staged_prefetch_plan is None:
        return True
    got = cache.init_load_back(InitLoadBackParams(best_match_node=req.best_match_node,
                                                  host_hit_length=req.host_hit_length, req=req))
    if got is None:
        return False
    req.host_loaded_length, req.last_node = got
    return True


class Staging:
    """The retry world's scheduler (waiting_queue.SchedulerStandIn) in buffer_only: each request's
    device match comes from the rank's device tree, and admission runs the steps above."""

    def __init__(self, run, rank):
        self.run, self.rank, self.cache = run, rank, rank.cache

    def match(self, req) -> tuple[int, int]:
        """(prefix_len, last_node) of the request's lookup: its tokens on the device tree."""
        return self.rank.tree._matched(Key(self.run.tokens(req.q)))

    def loaded(self, req) -> None:
        surface_loaded(self.cache, req)

    def staged(self, req) -> bool:
        return self.cache.buffer_pipeline.prepare_staged_prefetch(req)

    def load_back(self, req) -> bool:
        return load_back(self.cache, req)
