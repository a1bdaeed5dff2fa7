"""The device KV pool of one rank (`token_to_kv_pool_allocator`, its kvcache and the controller's
`load`, the H2D copy): slots free or owned, what page each slot holds. The copy of a load-back
happens when its ack's event is synchronised (loading_check), as the H2D stream's work is done by
then: it reads the host bounce slots, and judges data_integrity on what it reads (a host slot
freed or rewritten before the copy read it: a use after free of a staged page). Every call enters
a step's footprint as the pool's (`r<rank>.device`); a load also writes the controller's load ack
list (`r<rank>.ack_load_queue`, which the round gate reads) and its copy reads the host pool. In
cache mode's write path it is also the allocator the controller's own `load` takes rows from, and
the L2 transfer engine of its load-back's H2D (copied by the device's thread G when the search
chooses); its `start_writing` stands in for the controller's D2H."""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace

from prefetch_check.model.code.stand_ins.host_pool import HELD, TREE
from prefetch_check.model.code.stand_ins.torch_stub import Tensor


LANDS_LATE = ("wrong KV data served: the cache's reset does not wait for a write's D2H copy, which overwrites "
              "host memory the pool handed out again after the reset")


class _KVCache:
    def __init__(self, size: int):
        self.size = size


@dataclass
class _Event:
    copy: object  # the pending copy to run at synchronize
    late: object = None  # the same copy landing after the cache's reset dropped its ack (D2H only)
    done: bool = False  # synchronised: the copy ran

    def query(self) -> bool:
        return True  # the H2D of this model is done by the next poll

    def synchronize(self) -> None:
        if not self.done:
            self.done = True
            self.copy()

    def land_late(self) -> None:
        """The copy lands with nobody waiting for it (its ack dropped), unless it was synchronised."""
        if not self.done:
            self.done = True
            self.late()


class _Stream:
    """A copy stream's event: cache mode's load-back H2D (start_loading) and, in its write path under
    the cache's reset, the D2H (`DevicePool.d2h_on_stream`). The copy runs on the device's own
    thread G at a moment the search chooses (`copy_loop`, late_copies.py's `StreamedWrites`), so
    `query` says False until then and `synchronize` waits for it, as the CPU waits for the GPU."""

    def __init__(self, world, rank: int, copy, what: str = "H2D", late=None):
        self.world, self.rank, self.copy, self.what, self.late, self.done = world, rank, copy, what, late, False
        self.acks = ack_queue_name(rank) if what == "H2D" else write_ack_queue_name(rank)

    def query(self) -> bool:
        """What the caller found enters its digest: it acts on it later (the ready count)."""
        self.world.baton.touch(self.acks, write=False)
        self.world.baton.observe(f"{self.what} {'done' if self.done else 'not done'}")
        return self.done

    def synchronize(self) -> None:
        self.world.baton.point(f"synchronize the {self.what} (rank {self.rank})", lambda: self.done, (self.acks,))

    def run(self) -> None:
        self.copy()
        self.done = True

    def land_late(self) -> None:
        """The copy runs with nobody waiting for it (the cache's reset dropped its ack), unless it ran."""
        if not self.done:
            self.done = True
            self.late()


@dataclass
class LoadAck:
    """cache_controller's ack of a load or a write (what loading_check and writing_check read of it)."""

    node_ids: list
    finish_event: _Event
    num_tokens_by_pool: dict = field(default_factory=dict)
    num_bytes: int = 0
    timing_enabled: bool = False


class DevicePool:
    _pc_footprint = True  # its calls enter a step's footprint (rt/hooks.py as_value)

    def __init__(self, world, rank: int, size: int, host_pool, expected):
        self.world, self.rank, self.host = world, rank, host_pool
        self._pc_name = f"r{rank}.device"  # its name in a step's footprint (rt/baton.py)
        self.owner: list = [None] * size  # None free, else who owns the slot
        self.data: dict[int, str] = {}  # slot -> the page it holds
        self.copies_done = 0  # H2D copies thread G made (the gate "any" opens a round for each: write_gate.py)
        self.expected = expected  # (request, position) -> the page hash a token's KV is
        self.d2h_on_stream = False  # the D2H runs on thread G, not at its synchronize (late_copies.py)
        self._kv = _KVCache(size)
        world.register(self)

    # ---- the allocator API the pipeline reads
    def get_kvcache(self):
        return self._kv

    def available_size(self) -> int:
        self.world.baton.touch(self._pc_name, write=False)
        return self.owner.count(None)

    def full_available_size(self) -> int:
        return self.available_size()

    def free_segment(self, indices, start_pos: int = 0) -> None:
        """A page-exact segment of a tree value freed (the FULL component's device free)."""
        self.give_back(indices.data)

    def mamba_full_cache_donor(self):
        return None  # no Mamba pool borrows FULL's bytes (upstream: only a hybrid allocator's does)

    # ---- what the device tree does with slots
    def take(self, n: int, owner: str, data=None) -> list[int]:
        self.world.baton.touch(self._pc_name)
        slots = [i for i, o in enumerate(self.owner) if o is None][:n]
        if len(slots) < n:
            return []
        for k, i in enumerate(slots):
            self.owner[i] = owner
            if data is not None:
                self.data[i] = data[k]
        return slots

    def give_back(self, slots) -> None:
        self.world.baton.touch(self._pc_name)
        for i in slots:
            self.owner[i] = None
            self.data.pop(i, None)

    def clear(self) -> None:
        """flush_cache's token_to_kv_pool_allocator.clear() after the tree's reset: every slot free."""
        self.world.baton.touch(self._pc_name)
        self.owner = [None] * len(self.owner)
        self.data.clear()

    def own(self, slots, owner: str) -> None:
        self.world.baton.touch(self._pc_name)
        for i in slots:
            self.owner[i] = owner

    # ---- the controller's load (HCC.load: allocate FULL rows, queue the H2D; the ack carries node_id)
    def load(self, host_indices, priority=None, node_id: int = -1, extra_pools=None, **kwargs):
        baton = self.world.baton
        baton.point(f"load {len(host_indices)} host slots to device (rank {self.rank})")
        baton.touch(self._pc_name)
        baton.touch(ack_queue_name(self.rank))
        site = baton.current().point.site if baton.current() else "?"
        slots = self.take(len(host_indices), f"load{node_id}")
        if len(slots) < len(host_indices):
            return None
        pairs = list(zip(host_indices.data, slots))

        def copy() -> None:
            baton.touch(self._pc_name)
            baton.touch(self.host._pc_name, write=False)
            for h, d in pairs:
                got = self.host.written.get(h) if self.host.status[h] == HELD else None
                if got is None:
                    state = self.host.status[h]
                    self.world.fault("data_integrity",
                                     f"rank {self.rank}: the H2D copy of load-back {node_id} reads host slot {h}, "
                                     f"which is {state} and holds {'nothing written' if got is None else got}",
                                     "wrong KV data served: the device copy of a staged page read a slot freed or "
                                     "never written (use after free of the bounce)", site)
                self.data[d] = got

        self.cc_ack_queue.append(LoadAck([node_id], _Event(copy)))
        return Tensor(slots)

    # ---- the allocator's alloc and free, as the controller's own load takes its rows (cache mode's
    # load-back, CodeConfig.load_back: HybridCacheController.load runs as written)
    def alloc(self, need_size: int):
        slots = self.take(need_size, "load")
        return Tensor(slots) if len(slots) == need_size else None

    def free(self, indices) -> None:
        self.give_back(indices.data)

    # ---- the L2 transfer engine's H2D (cache mode's load-back: the controller's own start_loading
    # merges the queued loads, moves their indices, builds the L2 transfers and hands them here, then
    # queues its ack with the completion's event); the copy runs on the device's thread G when the
    # search chooses (`copy_loop`), before loading_check counts the ack ready: in between, the host
    # slots are read by the stream (the load's host lock keeps them)
    def submit_host_to_device(self, transfers, start_event=None, on_layer_done=None, **layers):
        baton = self.world.baton
        pairs, site, what = self._submitted(transfers, "H2D of {} host slots", ack_queue_name(self.rank))

        def copy() -> None:
            baton.touch(self._pc_name)
            baton.touch(self.host._pc_name, write=False)
            for h, d in pairs:
                state = self.host.status[h]
                got = self.host.written.get(h) if state in (HELD, TREE) else None
                if got is None:
                    self.world.fault("data_integrity", f"rank {self.rank}: the H2D copy of {what} "
                                     f"reads host slot {h}, which is {state} and holds nothing written",
                                     "wrong KV data served: the device copy of a host hit read a slot freed or never "
                                     "written (host eviction under the load)", site)
                if self.owner[d] is None:
                    self.world.fault("data_integrity", f"rank {self.rank}: the H2D copy of {what} "
                                     f"lands in device slot {d}, which is free", "the copy overwrites a row the "
                                     "allocator hands out again: another request's KV corrupted", site)
                if got is None:
                    self.data.pop(d, None)
                else:
                    self.data[d] = got

        return SimpleNamespace(start_event=start_event, finish_event=_Stream(self.world, self.rank, copy),
                               timing_enabled=False)

    def set_hicache_transfer_done_event(self, key, event) -> None:
        """The allocator's fence before it hands out rows a transfer still writes (no stream here)."""

    def copy_loop(self, cc) -> None:
        """The device's thread G: each queued H2D's copy, at a moment the search chooses."""
        def pending() -> list:
            return [a for a in cc.ack_load_queue if not a.finish_event.done]
        while True:
            self.world.baton.point(f"H2D copy (rank {self.rank})", lambda: bool(pending()), (ack_queue_name(self.rank),))
            self.world.baton.touch(ack_queue_name(self.rank))
            ack = pending()[0]
            ack.finish_event.run()
            self.copies_done += 1
            self.world.baton.observe(f"H2D of nodes {list(ack.node_ids)} done")

    # ---- the L2 transfer engine's D2H (the write path, CodeConfig.backup: the controller's own
    # start_writing merges the ops queued with cc.write, moves their indices, builds the transfers and
    # hands them here, then queues its ack on cc.ack_write_queue with the completion's event); the
    # copy happens when writing_check synchronises that event, the latest the D2H stream may read the
    # device rows (the write's lock keeps them until then)
    def submit_device_to_host(self, transfers, **kwargs):
        baton = self.world.baton
        pairs, site, what = self._submitted(transfers, "D2H of {} device slots", write_ack_queue_name(self.rank))

        def copy() -> None:
            baton.touch(self._pc_name, write=False)
            baton.touch(self.host._pc_name)
            for h, d in pairs:
                got = self.data.get(d) if self.owner[d] is not None else None
                if got is None:
                    self.world.fault("data_integrity", f"rank {self.rank}: the D2H copy of {what} reads "
                                     f"device slot {d}, which is free", "wrong KV data written back: the D2H copy "
                                     "read a device row freed under it (use after free of the source)", site)
                if self.host.status[h] not in (HELD, TREE):  # staging (buffer_only), a node's host value (cache)
                    self.world.fault("host_memory", f"rank {self.rank}: the D2H copy of {what} lands "
                                     f"in host slot {h}, which is {self.host.status[h]}", "the copy overwrites a "
                                     "slot the pool handed out again: another request's KV corrupted", site)
                self.host.written[h] = got

        def late() -> None:
            """The copy landing after the cache's reset dropped its ack (cache_reset.py): nobody
            waits for it any more. It harms a host slot the pool handed out again after the reset
            and its new owner already wrote (one not yet written is written after it)."""
            baton.touch(self.host._pc_name)
            for h, d in pairs:
                if self.host.status[h] in (HELD, TREE) and h in self.host.written:
                    self.world.fault("data_integrity", f"rank {self.rank}: the D2H copy of {what}, left in flight by "
                                     f"the cache's reset, lands in host slot {h} after it was handed out again and "
                                     f"written ({self.host.written[h]})", LANDS_LATE, site)
                    self.host.written[h] = f"stale D2H of device row {d}"

        event = _Stream(self.world, self.rank, copy, "D2H", late) if self.d2h_on_stream else _Event(copy, late)
        return SimpleNamespace(start_event=None, finish_event=event, timing_enabled=False)

    def _submitted(self, transfers, label: str, ack_list: str) -> tuple:
        """An L2 submission, at a point of its own that writes the pool and the ack list: its
        (host slot, device row) pairs, the point's site, and its rows as a message names them."""
        baton = self.world.baton
        pairs = [(h, d) for t in transfers for h, d in zip(t.host_indices.data, t.device_indices.data)]
        baton.point(f"{label.format(len(pairs))} (rank {self.rank})")
        baton.touch(self._pc_name)
        baton.touch(ack_list)
        return pairs, (baton.current().point.site if baton.current() else "?"), f"rows {[d for _, d in pairs]}"

    def check_resident(self, request: int, slots) -> list[str]:
        """The resident slots of request whose page is not the one its position holds."""
        bad = []
        for pos, s in enumerate(slots):
            want = self.expected(request, pos)
            if self.data.get(s) != want:
                bad.append(f"slot {s} (token {pos}) holds {self.data.get(s) or 'nothing'}, not {want}")
        return bad

    def snapshot(self) -> tuple:
        return ("device", self.rank, tuple(self.owner), tuple(sorted(self.data.items())))


def write_ack_queue_name(rank: int) -> str:
    """The controller's write ack list of rank `rank` in a step's footprint (start_writing appends,
    the round gate reads its length, writing_check pops it)."""
    return f"r{rank}.ack_write_queue"


def ack_queue_name(rank: int) -> str:
    """The controller's load ack list of rank `rank` in a step's footprint (a load appends to it,
    the round gate reads its length, loading_check pops it)."""
    return f"r{rank}.ack_load_queue"
