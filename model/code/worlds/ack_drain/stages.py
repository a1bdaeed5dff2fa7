"""PP > 1 in the ack-drain world (CodeConfig.pp_size): ranks as pipeline stages of TP ranks, each
rank its own host pool, host tree and storage view, and the release's own PP code as written:
`_all_reduce` (the first stage reduces over its TP group, then `_pp_sync` receives from the stage
before and isends to the stage after on the PP group: stand_ins/p2p.py), `_drain_async_work`
waiting on those sends, the drain taking the first stage's counts (`_drain_queue` blocks until a
later stage's queue holds as many), and under `timeout` only the first stage evaluating its
deadline. P's hit MIN and Y's completion MIN reduce over the stage's TP group, then over the
rank's PP group (`_create_sync_groups`: size-1 groups skipped).

What is left out: the scheduler's relay of requests between stages (every stage issues each request
in the same order, as the relay delivers it). The PP tickets of buffer_only (`submit_prefetch`,
`pp_prefetch_command_thread_func`, `PPPrefetchState.ready_event`) are buffer/tickets.py's."""

from __future__ import annotations

from prefetch_check.model.code.stand_ins.p2p import PointToPoint
from prefetch_check.model.code.worlds.ack_drain.harness import Run
from prefetch_check.model.code.worlds.common import Rank


class StagesRun(Run):
    """A run whose ranks are pp_size stages of tp_size TP ranks (rank i: stage i // tp, TP rank i % tp)."""

    def _point_to_point(self):
        self.p2p = PointToPoint(self.world, lambda: self.baton.current().rank)
        return self.p2p

    def stage_of(self, i: int) -> tuple[int, int]:
        tp = self.config.tp_size()
        return i // tp, i % tp

    def _group(self, name: str, ranks: tuple[int, ...]):
        key = f"{name}:{','.join(map(str, ranks))}"
        group = self.groups.get(key)
        if group is None:
            group = self.groups[key] = self.GROUP(self.world, key, ranks)
        return group

    def _build(self, i: int) -> Rank:
        rank = super()._build(i)
        cfg = self.config
        tp, pp = cfg.tp_size(), cfg.pp_size
        stage, t = self.stage_of(i)
        mates = tuple(stage * tp + k for k in range(tp))  # this stage's TP ranks
        line = tuple(s * tp + t for s in range(pp))  # this TP rank's pipeline
        cache, cc = rank.cache, rank.cc
        pp_group = self._group("pp", line)
        cache.pp_rank, cache.pp_size, cache.pp_group = stage, pp, pp_group
        cache.tp_world_size = cc.tp_world_size = tp
        cache.tp_rank = t
        cache.tp_group = self._group("S-tp", mates) if tp > 1 else None
        for attr, channel in (("prefetch_hits_sync_groups", "P-hits"), ("prefetch_completion_sync_groups", "Y-completion")):
            setattr(cc, attr, [self._group(channel, ranks) for ranks in (mates, line) if len(ranks) > 1])
        if stage + 1 < pp:  # _pp_sync's send to the next stage
            self.p2p.open(pp_group, i, line[stage + 1])
        return rank

    # ---- who decides
    def first_stage(self) -> list:
        return [r for r in self.ranks if self.stage_of(r.index)[0] == 0]

    def drain_deciders(self) -> list:
        """`_sync_hicache_ready_counts`: later stages send zeros and take the first stage's counts."""
        return self.first_stage()

    def deciding_clocks(self) -> list:
        """`_can_terminate_prefetch`: only the first stage reads its deadline (worlds/deadlines.py)."""
        return self.first_stage()

    # ---- the round gate: the first stage may run a round ahead
    def round_enabled(self, rank: Rank) -> bool:
        """Lockstep rounds (Run.round_enabled), and besides: the first stage may start the next round
        while the later stages are still in this one, as upstream (its `_drain_async_work` waits
        only until they received this round's counts; it blocks there if they have not). What it
        asks is the first stage's own: every first-stage rank at its round start, every later
        stage started the same round, and something for the first stage to do (its drain's MIN,
        a fired deadline or an unchecked request of its own, a request waiting there under a
        policy that checks every round): no step of a later stage but its gate can change it."""
        return super().round_enabled(rank) or self._ahead(rank)

    def _ahead(self, rank: Rank) -> bool:
        first = self.first_stage()
        if rank not in first or any(r.rounds != rank.rounds or not self._at_gate(r) for r in first):
            return False
        if any(r.rounds != rank.rounds for r in self.ranks if r not in first):
            return False  # a later stage a round behind: the first stage waits for it (one round ahead at most)
        for q in self.DRAINED:
            if min(getattr(r.cc, q).peek_size() for r in first) > 0:
                return True
        if self.deadlines is not None:
            clock, d = self.deadlines.clock, self.deadlines
            return any(clock.epoch.get(r.index, 0) != d.seen[r.index]
                       or any((q, d._issue(r, q)) not in d.checked[r.index] for q in r.waiting) for r in first)
        return self.config.policy != "wait_complete" and any(r.waiting for r in first)

    def _gate_may_open(self, rank: Rank) -> bool:
        """Another rank's steps may open any gate here (a later stage's gate step lets the first
        stage run ahead; the first stage's queues open a later stage's gate): the persistent set
        never takes a rank parked at a closed gate."""
        return True
