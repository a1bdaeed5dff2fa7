"""The cache's reset while requests wait (CodeConfig.reset_round). SGLang's flush_cache with the
engine paused (pause_generation, as RL frameworks do around a weight update) ignores the waiting
requests that hold no KV (Scheduler.is_fully_idle(ignore_waiting=True)), so a waiting request's
prefetch may be anywhere in the storage threads when the scheduler calls tree_cache.reset().

The tree's code runs as written from there: UnifiedRadixCache.reset -> _reset_full -> the
controller's reset (_stop_storage_threads: the stop event set, a None put on each thread's queue,
each thread joined with a 10 s timeout and a RuntimeError if one still runs; the queues cleared;
the threads started again, stand_ins/threads.py) -> mem_pool_host.clear(). Per rank one more
thread, B, the backup thread the reset stops and starts too. The engine then resumes: the
scheduler checks its waiting requests again, and nothing of their prefetches is left (each is
admitted with what the emptied tree holds, so wait_complete_delivers is not judged for it). With
CodeConfig.reset_arrival the last request arrives as the engine resumes: the scheduler issues it after
the reset, and the threads the reset started serve it (a restart that leaves them stopped or fed
stale queue items fails it; its delivery is judged). The reset is a mixin (`Resets`): in cache mode's
world (ResetRun, also in the scheduler's retry path, readmission.py), in buffer_only's
(BufferResetRun, where it runs the pipeline's own reset and the device pool is cleared) and in
buffer_only's write path (BackupResetRun: a D2H copy whose ack the reset drops lands later,
late_copies.py) and cache mode's (WriteThroughResetRun: every D2H copy on the write stream)."""

from __future__ import annotations

from prefetch_check.model.code.rt.baton import slot
from prefetch_check.model.code.stand_ins.context import Strict
from prefetch_check.model.code.stand_ins.threads import ROLES, Thread
from prefetch_check.model.code.worlds.ack_drain.buffer.backup_run import BackupRun
from prefetch_check.model.code.worlds.ack_drain.buffer.harness import BufferRun
from prefetch_check.model.code.worlds.ack_drain.flush_gate import FlushGate
from prefetch_check.model.code.worlds.ack_drain.harness import Run
from prefetch_check.model.code.worlds.ack_drain.late_copies import LateCopies, StreamedWrites
from prefetch_check.model.code.worlds.ack_drain.write_through.run import WriteThroughRun
from prefetch_check.model.code.worlds.common import Rank

THREAD_FIELDS = {"P": "prefetch_thread", "IO": "prefetch_io_aux_thread", "Y": "prefetch_sync_thread",
                 "B": "backup_thread"}  # the controller's attribute holding each role's thread object
assert set(THREAD_FIELDS) == set(ROLES.values())  # every role a Thread may start has its field


class _SessionRefs(Strict):
    """The cache's session reference tracker: no session holds anything in this world."""

    _pc_what = "session_refs"

    def __init__(self, world):
        self.world = world

    def reset(self) -> None:
        return None


class _Session(Strict):
    """The cache's streaming-session state: its slots, which no request of this world holds."""

    _pc_what = "session"

    def __init__(self, world):
        self.world, self.slots = world, {}


class Resets:
    """Mixed into a world's run (ResetRun, BufferResetRun): the backup thread B per rank, and the
    scheduler's flush_cache in round CodeConfig.reset_round, after its drain (0: right after it
    issued every request)."""

    PER_RANK = 5  # S, P, IO, Y, B

    def __init__(self, modules: dict, config, holder, roots: tuple[str, ...]):
        super().__init__(modules, config, holder, roots)
        self.world.starts_threads = True
        self.flush_gate = FlushGate(self)
        self.flushed: set[int] = set()  # the ranks whose flush_cache reset the cache

    def _build(self, i: int) -> Rank:
        rank = super()._build(i)
        cc, cache = rank.cc, rank.cache
        cc.load_queue = []  # what the reset clears beside the write queues (the device transfers: none here)
        cc.pp_prefetch_command_thread = None  # no PP ticket thread (pp_size 1)
        cache.session_refs = _SessionRefs(self.world)
        if "session" not in vars(cache):  # buffer_only's world has its own (buffer/harness.py)
            cache.session = _Session(self.world)
        self.world.stop_events[i] = cc.storage_stop_event  # its threads' timed gets end once it is set
        if self.config.reset_arrival:  # the last request is not issued with the others: it arrives later
            rank.waiting.remove(self.config.requests - 1)
        return rank

    def _spawn(self, rank: Rank) -> None:
        super()._spawn(rank)
        i, cc = rank.index, rank.cc
        if not any(m.name == f"B{i}" for m in self.baton.threads):  # the write path's world spawns its own
            self.baton.spawn(f"B{i}", i, "backup", cc.backup_thread_func)
        for m in self.baton.threads:  # a storage thread's end is what a join waits on
            role = m.name[:-len(str(i))]
            if m.rank == i and role in THREAD_FIELDS:
                m.edge_touches = (slot(m.name),)
                setattr(cc, THREAD_FIELDS[role], Thread.adopt(self.world, m))

    def scripted_rounds(self) -> tuple:
        """The flush's round is unlike the rounds before it (stutter.py)."""
        return super().scripted_rounds() + (self.config.reset_round,)

    def abort_at_issue(self, rank: Rank) -> None:
        """reset_round 0: the flush is asked right after the scheduler issued every request."""
        super().abort_at_issue(rank)
        if self.config.reset_round == 0:
            self._ask(rank)

    def after_events(self, rank: Rank) -> None:
        """reset_round n > 0: the flush is asked after round n's check_hicache_events, whose drain
        may have handed a fetch to IO (so it may be in flight on one rank and not yet on another);
        refused, it is asked again after each later round's drain and admissions, as a client that
        retries flush_cache until it succeeds (an RL loop around a weight update)."""
        super().after_events(rank)
        self._ask(rank)

    def round_ends(self, rank: Rank) -> None:
        super().round_ends(rank)
        self._ask(rank)

    def _ask(self, rank: Rank) -> None:
        if rank.index not in self.flushed and rank.rounds >= self.config.reset_round and self._flush(rank):
            self.flushed.add(rank.index)

    def key(self) -> tuple:
        """The run's key, and which ranks' flush_cache reset their cache."""
        return super().key() + ((("flushed",) + tuple(sorted(self.flushed)),) if self.flushed else ())

    def _flush(self, rank: Rank) -> bool:
        """SCH's flush_cache with the engine paused: where the tree's own is_fully_idle lets it
        (flush_gate.py), tree_cache.reset() (the tree's own), then the engine resumes; else it
        returns False and nothing is reset."""
        if not self.flush_gate.idle(rank.cache, len(rank.waiting)):
            self.baton.observe("flush_cache refused: not is_fully_idle")
            return False
        self.world.draining.pop(rank.index, None)
        self.baton.observe("flush_cache: tree_cache.reset()")
        rank.cache.reset()
        self.happened("reset_round")
        self.baton.observe("reset done")
        if self.config.reset_arrival:  # SCH's _add_request_to_queue -> _prefetch_kvcache for the new request
            q = self.config.requests - 1
            self.issue(rank, q, device_tokens=0)  # nothing of it on the emptied device (buffer_only)
            rank.waiting.append(q)
            self.baton.observe(f"req{q} arrives after the reset")
        return True


class ResetRun(Resets, Run):
    """The cache's reset in cache mode (harness.py's world)."""


class DeviceResets(Resets):
    """The reset in a world with a device pool: flush_cache clears it after the tree
    (token_to_kv_pool_allocator.clear())."""

    def _flush(self, rank: Rank) -> bool:
        if not super()._flush(rank):
            return False
        rank.tree.device.clear()
        return True


class BufferResets(DeviceResets):
    """The cache's reset under host_memory_mode buffer_only (buffer/harness.py's world): the cache's
    _reset_full also runs the pipeline's own reset and clears the storage beliefs' in-flight
    entries, and the device pool is cleared after the tree. The gate reads the pipeline's
    `is_idle()` too (flush_gate.py)."""


class BufferResetRun(BufferResets, BufferRun):
    """The reset in buffer_only's world."""


class BackupResetRun(LateCopies, BufferResets, BackupRun):
    """The reset in buffer_only's write path (CodeConfig.backup, buffer/backup_run.py): flush_cache
    asked while the computed request's write is queued, in its D2H copy or in the backup thread's
    storage write; the gate refuses while the pipeline holds it (`is_idle()`), and a D2H copy whose
    ack a reset clears would land later (late_copies.py)."""


class WriteThroughResetRun(StreamedWrites, DeviceResets, WriteThroughRun):
    """The reset in cache mode's write path (write_through/run.py): flush_cache asked while the
    computed request's D2H copy may still run; the gate refuses while `ongoing_write_through` or
    `ongoing_backup` holds the write; the device pool is cleared after the tree."""
