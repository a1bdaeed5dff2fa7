"""Cache mode's load-back of a host hit (CodeConfig.load_back, a mix-in of write_through/run.py):
in the device eviction's round, after its check_hicache_events, a request of the computed
request's tokens arrives; where the eviction took its node, the scheduler runs SCH's steps on the
release's code (`init_load_back`, `ready_to_load_host_cache`) and the next rounds' `loading_check`
reaps the H2D, whose copy the device's thread G makes when the search chooses
(buffer/device_pool.py). SCH's use of the answer is judged here; the end of the run in judge.py."""

from __future__ import annotations

from types import SimpleNamespace

from prefetch_check.model.code.stand_ins.torch_stub import Tensor
from prefetch_check.model.code.worlds.ack_drain.buffer.device_tree import node_of
from prefetch_check.model.code.worlds.ack_drain.buffer.params import InitLoadBackParams
from prefetch_check.model.code.worlds.ack_drain.harness import CONTROLLER
from prefetch_check.model.code.worlds.common import Rank

LOAD_BACK_THRESHOLD = 10  # the cache's load_back_threshold (set in its __init__, 0.5.19-0.5.23): fewer tokens are not loaded


class _LayerEvent:
    """One of the layer-done counter's events (LayerLoadingEvent): the H2D's start is recorded on
    it and each layer's completion reported to it; nothing waits on it here (no forward pass)."""

    def __init__(self):
        self.start_event = SimpleNamespace(record=lambda *a: None)
        self.finish_event = SimpleNamespace(query=lambda: True)

    def complete(self, layer_index: int) -> None:
        """The engine's per-layer callback (the consumer's wait is not modelled)."""


class _Request:
    """The request init_load_back is handed (SCH's Req, as far as the load-back reads it): its device
    match ends at the root, no sidecar hit."""

    def __init__(self, rid: str):
        self.rid, self.last_node = rid, 0
        self.swa_host_hit_length = self.mamba_host_hit_length = 0


class LoadBack:
    """A run mix-in: one more thread per rank with a load-back (G, the device's copies); `_loader`
    in `_build`, the load-back itself after the events of the eviction's round."""

    def __init__(self, modules: dict, config, holder, roots: tuple[str, ...]):
        if config.load_back:  # the device's thread G runs the H2D copies (buffer/device_pool.py copy_loop)
            self.PER_RANK = type(self).PER_RANK + 1
        super().__init__(modules, config, holder, roots)

    def _loader(self, rank: Rank) -> None:
        """A rank that loads host hits back to the device (CodeConfig.load_back): the controller's
        own `load` allocates the rows from the device pool and queues the op, its own
        `start_loading` merges the ops, moves their indices, builds the L2 transfers (write_path.py
        `_l2_side` sets up what they read) and queues the ack; the layer-done counter is the
        release's with stand-in events; the cache's FULL component and its threshold as the
        cache's __init__ makes them (10 tokens, the release's constant)."""
        cc, cache = rank.cc, rank.cache
        cc.load_queue = []
        cc.load_fence_stream = None
        cc.transfer_layer_id_max = cc.layer_num = 1
        counter_cls = self.modules[CONTROLLER].LayerDoneCounter
        cc.layer_done_counter = counter_cls.__new__(counter_cls)
        cc.layer_done_counter.__dict__.update(num_counters=3, producer_index=-1, consumer_index=-1,
                                              events=[_LayerEvent() for _ in range(3)])
        cache._components_tuple = tuple(cache.components.values())
        cache.load_back_threshold = LOAD_BACK_THRESHOLD

    def _load_back(self, rank: Rank) -> None:
        """SCH admitting a request of the computed request's tokens: its match ends at the node; a
        node evicted from the device but backed up on host is a host hit, loaded back by the
        cache's `init_load_back` and started by `ready_to_load_host_cache` (the adder's steps and
        the forward's start); the H2D's ack is reaped by `loading_check` in a later round.
        Only after the node was evicted from the device (a device hit loads nothing)."""
        cfg, w, tree = self.config, self.config.requests, rank.tree
        n = cfg.pages * cfg.page_size
        node = node_of(w, n)
        if node in tree.resident or node not in tree.host_value:
            self.baton.observe(f"req{w}'s tokens requested again: {'a device hit' if node in tree.resident else 'a miss'}")
            return
        req = _Request(f"again{w}")
        got = rank.cache.init_load_back(InitLoadBackParams(best_match_node=node, host_hit_length=n, req=req))
        self.baton.observe(f"req{w}'s tokens requested again: init_load_back {got}")
        self._judge_prefix(rank, got)
        rank.cache.ready_to_load_host_cache()

    def _judge_prefix(self, rank: Rank, got) -> None:
        """SCH takes init_load_back's (loaded tokens, last node) as the request's prefix beyond its
        device match (the root here): the device rows on the path to that node must be exactly
        that many, or the forward reads rows that are not the request's (or misses its own).
        0.5.19 answers the loaded rows themselves, which must be the path's rows."""
        loaded, last = got
        rows = list(rank.tree.collect_full_device_indices(last, 0).data)
        if isinstance(loaded, Tensor):  # 0.5.19: the rows themselves
            ok, said = list(loaded.data) == rows, f"rows {list(loaded.data)}"
        else:
            ok, said = loaded == len(rows), f"{loaded} tokens"
        if not ok:
            me = self.baton.current()
            self.world.fault("data_integrity", f"rank {rank.index}: init_load_back reports {said} loaded up to "
                             f"node {last}, whose path holds {len(rows)} device rows",
                             "wrong KV data served: the request's prefix is not the rows the load filled",
                             me.point.site if me else "?")

    def _spawn(self, rank: Rank) -> None:
        super()._spawn(rank)
        if self.config.load_back:
            self.baton.spawn(f"G{rank.index}", rank.index, "device", lambda: rank.tree.device.copy_loop(rank.cc))

    def after_events(self, rank: Rank) -> None:
        """With a load-back, a request of the computed request's tokens arrives in the device
        eviction's round: its admission and the forward's start follow the round's
        check_hicache_events, so the H2D's ack is reaped by the next round's loading_check (SCH's
        loop: the events, the admission, the batch's run)."""
        if self.config.load_back and rank.rounds == self.config.evict_device_round:
            self._load_back(rank)
