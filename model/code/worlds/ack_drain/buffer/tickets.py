"""The PP tickets (host_memory_mode buffer_only with pp_size > 1; 0.5.23's shape, where each stage's
ticket thread queries its own storage view): the buffer world's
ranks as pipeline stages (stages.py), the tree's own ticket path as written. PP0's
`prefetch_from_storage` submits a ticket (`submit_prefetch`: the operation is PP0's state, not
`ongoing_prefetch`); each stage's ticket thread (`pp_prefetch_command_thread_func`, the thread T)
takes it through `broadcast_pyobj` over the PP group, queries storage, agrees the hit count (the
hit MIN over the pipeline), allocates and hands the operation to its IO thread; the sync thread
sets the state's `ready_event` at the last ACK; a stage's admission asks `check_prefetch_progress`,
which under a ticket takes the ready state (`_check_pp_prefetch_progress`: PP0's readiness MAX'ed
along the pipeline) and stages it in the buffer pipeline.

Stood in: `broadcast_pyobj` (a rendezvous of the PP group, stand_ins/collectives.py), the ticket
thread's liveness, the relay of PP0's decision to the later stages (every request PP0 tickets is
bound TICKETED there once PP0 issued it: the request relay). The round gate does not start a round
for a request whose ticket is not ready yet (its readiness changes only at the sync thread's ACK):
that is the loop's waiting, not a round of its own."""

from __future__ import annotations

from types import SimpleNamespace

from prefetch_check.model.code.stand_ins.p2p import LABEL as P2P
from prefetch_check.model.code.stand_ins.shared_dict import SharedDict
from prefetch_check.model.code.stand_ins.sync import Event
from prefetch_check.model.code.worlds.ack_drain.buffer.harness import BufferRun
from prefetch_check.model.code.worlds.ack_drain.harness import HYBRID
from prefetch_check.model.code.worlds.ack_drain.stages import StagesRun
from prefetch_check.model.code.worlds.common import Rank


class _Alive:
    """The ticket thread as `is_pp_prefetch_ready` asks after it: the world runs it as T."""

    def is_alive(self) -> bool:
        return True


class TicketStagesRun(BufferRun, StagesRun):
    """buffer_only ranks as PP stages with the release's PP tickets."""

    PER_RANK = 5  # S, P, IO, Y and the ticket thread T
    RELAY = "pp.relay"  # in a step's footprint: PP0's issue, which the relay to the later stages reads

    def __init__(self, modules: dict, config, holder, roots: tuple[str, ...]):
        hybrid = modules[HYBRID]
        hybrid.broadcast_pyobj = lambda objects, rank, group, src=0: holder.collectives.broadcast_pyobj(
            objects, rank, group, src)
        _events_of_this_run(hybrid.PPPrefetchState, holder)
        self.relayed: set = set()  # the requests PP0 has issued (their tickets travel with the relay)
        super().__init__(modules, config, holder, roots)

    def _build(self, i: int) -> Rank:
        rank = super()._build(i)
        stage, _ = self.stage_of(i)
        cc = rank.cc
        cc.pp_prefetch_command_group = cc.pp_group = rank.cache.pp_group
        cc.storage_config = SimpleNamespace(pp_rank=stage)
        cc.pp_prefetch_command_thread = _Alive()
        cc.prefetch_threshold = rank.cache.prefetch_threshold
        # the scheduler reads the decisions without the state lock the ticket thread takes
        cc.pp_prefetch_decisions = SharedDict(self.world, f"r{i}.pp_prefetch_decisions")
        cc.pp_prefetch_states = SharedDict(self.world, f"r{i}.pp_prefetch_states")
        return rank

    def _spawn(self, rank: Rank) -> None:
        super()._spawn(rank)
        self.baton.spawn(f"T{rank.index}", rank.index, "tickets", rank.cc.pp_prefetch_command_thread_func)

    def issued(self, rank: Rank, q: int, decision) -> None:
        """PP0 binds its decision; a later stage waits for the relay and binds PP0's ticket."""
        cache, rid = rank.cache, rank.handles[q].rid
        if cache.pp_rank == 0:
            cache.bind_prefetch_ticket(rid, bool(decision))
            if decision:
                self.baton.touch(self.RELAY)
                self.relayed.add(rid)
            return
        self.baton.point(f"{P2P}relay {rid}", lambda: rid in self.relayed, (self.RELAY,))  # as a message from PP0
        cache.bind_prefetch_ticket(rid)

    def gate_guard(self) -> tuple:
        """The buffer world's, and what `_idle` reads of the tickets: each rank's ticket states and
        their ready events (named by rank and request: `_events_of_this_run`)."""
        guard = self.__dict__.get("_ticket_gate_guard")
        if guard is None:
            guard = self._ticket_gate_guard = super().gate_guard() + tuple(
                name for r in self.ranks for name in (f"r{r.index}.pp_prefetch_states", f"r{r.index}.pp_state_lock")
            ) + tuple(ready_name(r.index, h.rid) for r in self.ranks for h in r.handles)
        return guard

    def _idle(self, rank: Rank, q: int) -> bool:
        """Not only no `ongoing_prefetch` entry: no ticket of the request waiting for its last ACK
        either (a round would only find it not ready)."""
        state = rank.cc.pp_prefetch_states.get(rank.handles[q].rid)
        pending = state is not None and not state.consumed and not state.ready_event.flag
        return super()._idle(rank, q) and not pending


def _events_of_this_run(state_cls, holder) -> None:
    """PPPrefetchState's `ready_event` comes from a dataclass default_factory taken when the module
    was imported (the real threading.Event); each state built in a run gets the run's Event instead."""
    if state_cls.__dict__.get("_pc_events"):
        return
    base = state_cls.__init__

    def __init__(self, *args, **kwargs):
        base(self, *args, **kwargs)
        world = holder.world
        if world is not None:
            me = world.baton.current()
            self.ready_event = Event(world, ready_name(me.rank if me else 0, self.ticket.handle.rid))

    state_cls.__init__ = __init__
    state_cls._pc_events = True


def ready_name(rank: int, rid: str) -> str:
    """A ticket state's ready event: by rank and request, so the round gate can name what it reads."""
    return f"r{rank}.ready.{rid}"
