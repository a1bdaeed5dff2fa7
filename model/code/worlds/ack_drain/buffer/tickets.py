"""The PP tickets (host_memory_mode buffer_only with pp_size > 1; 0.5.23's shape, where each stage's
ticket thread queries its own storage view): the buffer world's
ranks as pipeline stages (stages.py), the tree's own ticket path as written. PP0's
`prefetch_from_storage` submits a ticket (`submit_prefetch`: the operation is PP0's state, not
`ongoing_prefetch`); each stage's ticket thread (`pp_prefetch_command_thread_func`, the thread T)
takes it through `broadcast_pyobj` over the PP group, queries storage, agrees the hit count (the
hit MIN over the pipeline), allocates and hands the operation to its IO thread; the sync thread
sets the state's `ready_event` at the last ACK; a stage's admission asks `check_prefetch_progress`,
which under a ticket takes the ready state (`_check_pp_prefetch_progress`: PP0's readiness MAX'ed
along the pipeline) and stages it in the buffer pipeline. A scheduler that waits on a ticket's
ready event before the first stage's ticket is ready blocks for the fetch (ReadyEvent.wait).

Stood in: `broadcast_pyobj` (a rendezvous of the PP group, stand_ins/collectives.py), the ticket
thread's liveness, the relay of PP0's decision to the later stages (every request PP0 tickets is
bound TICKETED there once PP0 issued it: the request relay). The scheduler's loop polls a waiting
request at every step; the round gate starts the polls that can see something new, one round each
(`_polls_due`): just after PP0 submitted the ticket (every stage finds it not ready), and when PP0's
ticket is ready and a later stage's is not (that stage's scheduler waits for its own fetch in
`take_ready_pp_prefetch`). Otherwise it waits for every stage's ticket to be ready: readiness
changes only at the sync thread's ACK, so another poll would find what an earlier one found."""

from __future__ import annotations

from types import SimpleNamespace

from prefetch_check.model.code.stand_ins.errors import caller_site
from prefetch_check.model.code.stand_ins.p2p import LABEL as P2P
from prefetch_check.model.code.stand_ins.shared_dict import SharedDict
from prefetch_check.model.code.stand_ins.sync import Event
from prefetch_check.model.code.worlds.ack_drain.buffer.harness import BufferRun
from prefetch_check.model.code.worlds.ack_drain.harness import HYBRID
from prefetch_check.model.code.worlds.ack_drain.stages import StagesRun
from prefetch_check.model.code.worlds.common import Rank


TICKET_WAITS = ("the scheduler blocks until the storage fetch lands instead of polling: no batch runs on the "
                "stage meanwhile, every request on it, running ones included, waits on storage IO, and a fetch "
                "that never lands hangs the pipeline")


class ReadyEvent(Event):
    """A ticket state's ready event. A scheduler waits on it in `take_ready_pp_prefetch` once the
    first stage voted the ticket ready: a later stage then waits only for its own fetch of the
    same pages to finish (upstream's design, its IO ran beside the first stage's). A scheduler
    that waits while no first-stage ticket of the request is ready waits for the fetch itself:
    that is a progress fault, as the drain's blocking get is (stand_ins/queues.py)."""

    def __init__(self, world, name: str, rid: str, first_stage_ready):
        super().__init__(world, name)
        self.rid, self.first_stage_ready = rid, first_stage_ready

    def wait(self, timeout=None) -> bool:
        me = self.world.baton.current()
        if not self.flag and me is not None and me.role == "scheduler" and not self.first_stage_ready(self.rid):
            self.world.fault("progress", f"rank {me.rank}: the scheduler waits on {self.name} while the first "
                             f"stage's ticket for {self.rid} is not ready", TICKET_WAITS,
                             caller_site(self.world.baton.roots))
        return super().wait(timeout)


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
        holder.ready_event = self.ready_event  # how this run's ticket states get their event
        self.ready_events: dict = {}  # ready_name -> the run's ReadyEvent
        self.relayed: set = set()  # the requests PP0 has issued (their tickets travel with the relay)
        self.polled: set = set()  # (request, moment): the polls of a pending ticket made (_polls_due)
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
        """The buffer world's, and what `_idle` and the poll read of the tickets: each rank's ticket
        states and their ready events (named by rank and request: `_events_of_this_run`), the first
        stage's command queues."""
        guard = self.__dict__.get("_ticket_gate_guard")
        if guard is None:
            guard = self._ticket_gate_guard = super().gate_guard() + tuple(
                name for r in self.ranks for name in (f"r{r.index}.pp_prefetch_states", f"r{r.index}.pp_state_lock")
            ) + tuple(ready_name(r.index, h.rid) for r in self.ranks for h in r.handles) + tuple(
                f"r{r.index}.pp_prefetch_command_queue" for r in self.first_stage())  # the poll's (_just_submitted)
        return guard

    def round_enabled(self, rank: Rank) -> bool:
        """The buffer world's gate, and the polling rounds of a pending ticket (`_polls_due`)."""
        if super().round_enabled(rank):
            return True
        if not self._all_at_round_start():
            return False
        return bool(self._polls_due())

    def enter_round(self, rank: Rank) -> None:
        """The first stage-rank to start a round marks the polls it makes (`polled`)."""
        super().enter_round(rank)
        if sum(r.rounds == rank.rounds for r in self.ranks) == 1:
            self.polled.update(self._polls_due())

    def _polls_due(self) -> list:
        """(request, moment) for each request waiting on every rank whose ticket is at a moment a
        poll is due and no round has polled it there yet. Two moments: just submitted (every stage
        finds it not ready) and behind (PP0's ticket ready, a later stage's not: that stage's
        scheduler waits in `take_ready_pp_prefetch` for its own fetch)."""
        first = self.ranks[0]
        due = []
        for q in range(self.config.requests):
            if not all(q in r.waiting for r in self.ranks):
                continue
            rid = first.handles[q].rid
            for moment, at in (("submitted", self._just_submitted), ("behind", self._later_stage_behind)):
                if (rid, moment) not in self.polled and at(q):
                    due.append((rid, moment))
        return due

    def _just_submitted(self, q: int) -> bool:
        """PP0's ticket of the request is pending in its command queue, and no later stage holds one.
        (A poll at any point of the fetch took 17 times the runs of no poll; this one, 7.)"""
        first = self.first_stage()
        return (all(self._ticket_pending(r, q) and r.cc.pp_prefetch_command_queue.peek_size() for r in first)
                and all(r.cc.pp_prefetch_states.get(r.handles[q].rid) is None for r in self.ranks if r not in first))

    def _later_stage_behind(self, q: int) -> bool:
        """The first stage votes the request's ticket ready, and a later stage's has not had its last ACK."""
        first = self.first_stage()
        return (self.first_stage_ready(self.ranks[0].handles[q].rid)
                and any(self._ticket_pending(r, q) for r in self.ranks if r not in first))

    def _gate_key(self) -> tuple:
        """The gate's memory: the polls made."""
        return super()._gate_key() + (tuple(sorted(self.polled)),)

    def ready_event(self, rank: int, rid: str) -> ReadyEvent:
        """A ticket state's ready event, built in this run's world and kept by name."""
        event = self.ready_events[ready_name(rank, rid)] = ReadyEvent(
            self.world, ready_name(rank, rid), rid, self.first_stage_ready)
        return event

    def first_stage_ready(self, rid: str) -> bool:
        """Whether a first-stage rank's ticket of the request has had its last ACK (a consumed or
        released ticket keeps its event set)."""
        events = (self.ready_events.get(ready_name(r.index, rid)) for r in self.first_stage())
        return any(e is not None and e.flag for e in events)

    def _idle(self, rank: Rank, q: int) -> bool:
        """Not only no `ongoing_prefetch` entry: no ticket of the request waiting for its last ACK
        either (a round would only find it not ready)."""
        return super()._idle(rank, q) and not self._ticket_pending(rank, q)

    @staticmethod
    def _ticket_pending(rank: Rank, q: int) -> bool:
        """The rank holds a ticket of the request that has not had its last ACK."""
        state = rank.cc.pp_prefetch_states.get(rank.handles[q].rid)
        return state is not None and not state.consumed and not state.ready_event.flag


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
            self.ready_event = holder.ready_event(me.rank if me else 0, self.ticket.handle.rid)

    state_cls.__init__ = __init__
    state_cls._pc_events = True


def ready_name(rank: int, rid: str) -> str:
    """A ticket state's ready event: by rank and request, so the round gate can name what it reads."""
    return f"r{rank}.ready.{rid}"
