"""What every world's run is made of: the ranks, the baton and the stand-ins of one run, the
scheduler round's gate, and the rank-level persistent set a reduction asks for (`ample`). A
world's harness (worlds/<protocol>/harness.py) subclasses `WorldRun` with how it builds a rank
(`_build`), the threads it spawns (`_spawn`), its round gate (`round_enabled`) and its state key."""

from __future__ import annotations

import functools
import shutil
import tempfile
from dataclasses import dataclass, field

from prefetch_check.model.code.config import CodeConfig
from prefetch_check.model.code.rt import loader, stubs
from prefetch_check.model.code.rt.baton import Baton
from prefetch_check.model.code.rt.scratch import run_files_root
from prefetch_check.model.code.stand_ins import clock as clocks
from prefetch_check.model.code.stand_ins.clock import Clock, make_time
from prefetch_check.model.code.stand_ins.collectives import Collectives, Group
from prefetch_check.model.code.stand_ins.context import World
from prefetch_check.model.code.stand_ins.file_storage import file_storage
from prefetch_check.model.code.stand_ins.host_held import HostHeldPages
from prefetch_check.model.code.stand_ins.host_pool import HostPool
from prefetch_check.model.code.stand_ins.p2p import LABEL as P2P
from prefetch_check.model.code.stand_ins.queues import Empty, Queue, QueueFactory
from prefetch_check.model.code.stand_ins.storage import StorageBackend
from prefetch_check.model.code.stand_ins.sync import make_threading
from prefetch_check.model.code.stand_ins.tree import TreeCore

ROOT_NODE = 0
GATE = "scheduler round"
GATE_INPUTS = "gate"  # in a step's footprint: what the schedulers' loops keep (rounds, waiting, positions)


def gate_side(rank: int) -> str:
    """What the round gate reads of rank `rank`'s scheduler (its round count, whether it waits at
    the gate) in a step's footprint: written where that scheduler reaches or leaves its gate."""
    return f"r{rank}.gate"


def scheduler_state(rank: int) -> str:
    """Rank `rank`'s scheduler loop state (its waiting requests, positions) in a step's footprint:
    what a deadline's guard reads of it (worlds/deadlines.py)."""
    return f"r{rank}.scheduler"


@dataclass
class Rank:
    """The objects of one rank, and what its scheduler loop saw."""

    index: int
    cache: object
    cc: object
    pool: HostPool
    tree: TreeCore
    handles: list
    waiting: list
    resolved: dict = field(default_factory=dict)  # request -> tokens its tree held when it was admitted
    admitted_round: dict = field(default_factory=dict)  # request -> the round check_prefetch_progress said True
    aborted: list = field(default_factory=list)  # the requests its client aborted (release_aborted_request)
    rounds: int = 0


class WorldRun:
    """One run's world and ranks; a world's harness says how a rank is built and what it runs."""

    PER_RANK = 4  # threads per rank, spawned in this order (the scheduler first)
    DRAINED: tuple[str, ...] = ()  # the queues the scheduler's drain pops
    GROUP = Group  # the collective group stand-in
    # Every object this world's threads share enters a step's footprint (rt/baton.py `touch`), so the
    # search may skip schedules that only reorder independent steps (strategies/sleep.py); a world
    # whose stand-ins do not all record their footprint leaves it False (its search is unreduced).
    FOOTPRINTS = False

    def __init__(self, modules: dict, config: CodeConfig, holder, roots: tuple[str, ...]):
        self.config, self.modules = config, modules
        self.reached: set[str] = set()  # the scripted events this run took (`happened`)
        self.baton = Baton(roots)
        self.baton.recording = self.FOOTPRINTS  # nobody reads the footprints of a world that has none
        self.world = World(self.baton)
        holder.world = self.world
        holder.collectives = Collectives(self.world, lambda: self.baton.current().rank)
        holder.p2p = self._point_to_point()
        not_modelled = stubs.not_modelled_factory(roots)
        # under the timeout policy the clock moves where the conformance check fires it, or where the
        # search chooses a deadline to fire (worlds/deadlines.py: the world's harness spawns the choices)
        self.clock = Clock(self.baton, explored=config.explores_clock())
        loader.bind_world(modules, QueueFactory(self.world), Empty, make_threading(self.world, not_modelled),
                          make_time(not_modelled, clock=self.clock))
        r = config.ranks
        everyone = tuple(range(r))
        self.groups = {name: self.GROUP(self.world, name, everyone) for name in ("S-tp", "P-hits", "Y-completion")}
        self.ranks = [self._build(i) for i in range(r)]
        for rank in self.ranks:
            self._spawn(rank)
        for rank in self.ranks if config.file_lost else ():  # after every rank's own threads
            storage = rank.cc.storage_backend
            self.baton.spawn(f"X{rank.index}", rank.index, "external", lambda s=storage: s._pc_lose(
                config.file_lost, range(config.requests)), starts=False)

    def happened(self, event: str) -> None:
        """A scripted event of the configuration (a CodeConfig.scripted_events name) took place."""
        self.reached.add(event)

    # ---- building (a world's own: _build(i) -> Rank, and these helpers)
    def _point_to_point(self):
        """torch.distributed.isend/recv's stand-in (stand_ins/p2p.py), or None: not modelled."""
        return None

    def _rank_world(self, i: int, pool_cls=HostPool) -> tuple:
        """Rank i's host pool, host tree and storage backend, as the configuration says (the
        earlier request whose pages the tree holds is numbered after this run's requests, unless
        the request continues them)."""
        cfg, page = self.config, self.config.page_size
        pool = pool_cls(self.world, i, cfg.pool_pages() * page, page)
        storage = self.storage_backend(i, pool, StorageBackend)
        earlier = 0 if cfg.host_anchored else cfg.requests  # anchored: request 0's own leading pages
        held = (HostHeldPages(self.world, i, pool, page, cfg.host_held_pages, cfg.host_locked_pages, earlier)
                if cfg.host_held_pages else None)
        return pool, TreeCore(self.world, i, pool, page, held), storage

    def storage_backend(self, i: int, pool, stand_in=StorageBackend):
        """Rank i's storage backend: the stand-in (`stand_in`, what the configuration says is stored
        and fails), or with `storage="file"` the tree's own HiCacheFile on this run's directory,
        holding the same pages before the run (stand_ins/file_storage.py)."""
        cfg = self.config
        hits = cfg.first_page() + cfg.hits_of(i)
        if cfg.storage != "file":
            return stand_in(self.world, i, hits, cfg.failing_of(i), cfg.raises_of(i), cfg.page_size,
                            cfg.raising_reads_of(i))
        module = self.modules.get("mem_cache/hicache_storage.py")
        if not hasattr(module, "HiCacheFile"):
            raise self.world.not_modelled("storage file: the tree has no HiCacheFile")
        directory = self.__dict__.get("_file_storage_dir")
        if directory is None:  # one per run, shared by its ranks; gone with the run
            directory = self._file_storage_dir = tempfile.mkdtemp(prefix="prefetch-check-hicache-file-", dir=run_files_root())
            self.baton.at_end(functools.partial(shutil.rmtree, directory, ignore_errors=True))  # the run's end
        pool.flat_pages = True
        stored = [f"q{q}p{p}" for q in range(cfg.requests) for p in range(hits)]
        return file_storage(self.world, module, i, cfg.ranks, directory, stored, cfg.file_pages,
                            cfg.file_metadata_cache)

    def _queues(self, cc, i: int, names: tuple[str, ...]) -> None:
        for q in names:
            setattr(cc, q, Queue(self.world, f"r{i}.{q}"))

    def tokens(self, q: int) -> list[int]:
        """Request q's tokens the prefetch asks for (after the held pages it continues, if anchored)."""
        first = self.config.first_page() * self.config.page_size
        return [q * 1000 + t for t in range(first, first + self.config.pages * self.config.page_size)]

    def anchor(self, rank: Rank) -> int:
        """The node the prefetch anchors at: the root, or the deepest held page it continues."""
        return rank.tree.host_only.deepest() if self.config.host_anchored else ROOT_NODE

    # ---- the round gate and the reduction's hook (a world's own: round_enabled(rank), key())
    def gate_guard(self) -> tuple:
        """What `round_enabled` reads, as footprint names: the schedulers' own state (GATE_INPUTS,
        which every step of a predicate-poll scheduler and every deadline firing writes; each
        ack-drain scheduler's `gate_side`, written where it reaches or leaves the gate), every
        rank's drained queues and clock."""
        guard = self.__dict__.get("_gate_guard")
        if guard is None:
            guard = self._gate_guard = (GATE_INPUTS,) + tuple(gate_side(r.index) for r in self.ranks) + tuple(
                f"r{r.index}.{q}" for r in self.ranks for q in self.DRAINED) + tuple(clocks.name(r.index) for r in self.ranks)
        return guard

    def _at_gate(self, rank: Rank) -> bool:
        m = self.baton.threads[self.PER_RANK * rank.index]
        return m.status == "parked" and m.point.label == GATE

    def _all_at_round_start(self) -> bool:
        """Every scheduler waits at its round gate, all in the latest round (what every gate's
        opening condition but lockstep asks first)."""
        most = max(r.rounds for r in self.ranks)
        return all(r.rounds == most and self._at_gate(r) for r in self.ranks)

    def ample(self) -> list[str]:
        """A persistent set: the enabled threads of the first rank whose next steps no other rank
        can interfere with. Ranks share only collectives, point-to-point channels and the round gate;
        a step of another rank can reach this rank only by enabling one of its threads parked at a
        collective's leave or a point-to-point recv or wait, or its scheduler parked at the round
        gate while it may open (`_gate_may_open`). A rank with
        neither qualifies; when none does, every enabled thread is explored."""
        enabled = self.baton.enabled()
        for rank in self.ranks:
            mine = [m for m in enabled if m.rank == rank.index]
            if not mine:
                continue
            ok = True
            for m in self.baton.threads[self.PER_RANK * rank.index: self.PER_RANK * (rank.index + 1)]:
                if m.status != "parked" or m in mine:
                    continue
                if "leave" in m.point.label or m.point.label.startswith(P2P):
                    ok = False
                elif m.point.label == GATE and self._gate_may_open(rank):
                    ok = False
            if ok:
                return [m.name for m in mine]
        return [m.name for m in enabled]

    def _gate_may_open(self, rank: Rank) -> bool:
        """Whether another rank's steps can open this rank's closed round gate (round_enabled):
        only with something queued here for the drain's MIN."""
        return any(getattr(rank.cc, q).peek_size() for q in self.DRAINED)
