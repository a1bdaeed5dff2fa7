"""torch.distributed for the code under test: a group is a rendezvous of its ranks. Arriving is
a scheduling point; leaving is enabled once every rank of the group arrived at the same call,
and then each leaves with the reduced value. Ranks that meet in one call from different call
sites or with different shapes break collective participation (tp_agreement)."""

from __future__ import annotations

from typing import Optional


class Group:
    """One process group (a channel: the scheduler's, P's hit sync or Y's completion sync)."""

    _pc_footprint = True  # its calls enter a step's footprint (rt/hooks.py as_value)

    def __init__(self, world, name: str, ranks: tuple[int, ...]):
        self.world, self.name, self.ranks = world, name, ranks
        self.calls: dict[int, int] = {r: 0 for r in ranks}  # calls completed per rank
        self.arrived: dict[int, dict[int, tuple]] = {}  # call number -> rank -> (site, op, values)
        world.register(self)

    def snapshot(self) -> tuple:
        return self._snapshot(0)

    def _pc_stutter_snapshot(self) -> tuple:
        """The calls counted from the rank behind: the ack-drain scheduler's collectives run every
        round, so two rounds alike differ in their absolute numbers only (worlds/ack_drain/stutter.py)."""
        return self._snapshot(min(self.calls.values()))

    def _snapshot(self, base: int) -> tuple:
        return (self.name, tuple(sorted((r, c - base) for r, c in self.calls.items())),
                tuple((n - base, tuple(sorted((r, e[:4]) for r, e in a.items()))) for n, a in sorted(self.arrived.items())))


class Collectives:
    """The functions `torch.distributed` forwards to."""

    def __init__(self, world, rank_of):
        self.world, self.rank_of = world, rank_of  # rank_of(): the calling thread's rank

    def get_world_size(self, group=None) -> int:
        return len(group.ranks) if group is not None else 1

    def get_rank(self, group=None) -> int:
        rank = self.rank_of()
        return group.ranks.index(rank) if group is not None else rank

    def get_process_group_ranks(self, group: Group) -> list[int]:
        return list(group.ranks)

    def broadcast_pyobj(self, objects: list, rank: int, group: Group, src: int = 0) -> list:
        """sglang.srt.utils.broadcast_pyobj over `group` (global ranks): every rank of the group
        arrives, and each leaves with the list the rank `src` brought (the PP tickets' relay)."""
        me = self.rank_of()
        brought = tuple(objects) if me == src else ()
        n = self._meet(group, "broadcast", ("BROADCAST", f"from {src}"),
                       (tuple(self._describe(o) for o in brought), brought))
        sent = group.arrived[n].get(src)
        received = list(sent[4]) if sent is not None else []  # a src outside the group: nothing comes
        self._leave(group, n)
        self.world.baton.observe(f"received {[self._describe(o) for o in received]}")
        return received

    def _describe(self, obj) -> str:
        """A broadcast object in the state key: a ticket by its request, else the world's label."""
        rid = getattr(getattr(obj, "handle", None), "rid", None)
        return f"ticket({rid})" if rid is not None else self.world.label(obj)

    def barrier(self, group: Optional[Group] = None, **kwargs):
        """A barrier is a rendezvous without values (0.5.1's IO thread waits in one per operation)."""
        from prefetch_check.model.code.stand_ins.torch_stub import Tensor

        return self.all_reduce(Tensor([0]), op="BARRIER", group=group)

    def all_reduce(self, tensor, op=None, group: Optional[Group] = None, async_op: bool = False):
        if group is None:
            raise self.world.not_modelled("torch.distributed.all_reduce on the default group")
        n = self._meet(group, f"all_reduce({op})", (str(op), len(tensor.data)), (tuple(tensor.data),))
        values = [a[3] for a in group.arrived[n].values()]
        reduce = {"MIN": min, "MAX": max, "SUM": sum, "BARRIER": min}[str(op)]
        width = min(len(v) for v in values)
        tensor.data = [reduce(v[i] for v in values) for i in range(width)]
        self._leave(group, n)
        self.world.baton.observe(f"reduced {tensor.data}")
        return None

    def _meet(self, group: Group, what: str, call: tuple, carried: tuple) -> int:
        """The calling rank's next call on `group`: arrive (a scheduling point), then wait until
        every rank of the group arrived (the leave's point); its call number. `call` (the op and
        what the ranks must agree on) is compared with the peers' (site, *call): a rank meeting a
        peer in another collective is tp_agreement; `carried` rides along (the values, the objects)."""
        rank = self.rank_of()
        baton = self.world.baton
        baton.point(f"{what} arrive {group.name}")
        baton.touch(arrival(group, rank))
        baton.touch(left(group, rank), write=False)  # its call number (a rebase may move it: RelativeGroup)
        n = group.calls[rank]
        site = baton.current().point.site if baton.current() else "?"
        entry = (site,) + call
        arrived = group.arrived.setdefault(n, {})
        arrived[rank] = entry + carried
        mates = [a for r, a in arrived.items() if r != rank]
        if any(m[:3] != entry for m in mates):
            other = next(m for m in mates if m[:3] != entry)
            for r in arrived:  # the fault depends on which peer came first: the arrivals race here
                baton.touch(arrival(group, r), write=False)
            self.world.fault("tp_agreement", f"{group.name} call {n}: rank {rank} arrives from {site} ({call[0]}, "
                             f"{_shown(call[1])}) while a peer is in {other[0]} ({other[1]}, {_shown(other[2])})",
                             "ranks disagree on which collective they are in: a hang or mixed-up data on a real cluster", site)
        baton.observe(f"arrive {group.name}#{n}")
        baton.point(f"{what} leave {group.name}", lambda: len(group.arrived.get(n, {})) == len(group.ranks),
                    arrivals(group))
        baton.touch(left(group, rank))
        return n

    def _leave(self, group: Group, n: int) -> None:
        """The calling rank is done with call n; the last one out drops it."""
        group.calls[self.rank_of()] = n + 1
        if all(group.calls[r] > n for r in group.ranks):
            del group.arrived[n]


def _shown(agreed) -> str:
    """What a call's ranks agree on, in a tp_agreement message: an all_reduce's value count."""
    return f"{agreed} values" if isinstance(agreed, int) else str(agreed)

def arrival(group: Group, rank: int) -> str:
    """Rank `rank`'s arrivals at `group` in a step's footprint. Each rank's arrival and leave are
    its own: two ranks' arrivals commute, and so do their leaves (the last one out drops the call
    nobody waits on any more); a leave reads every arrival (what enables it, what it reduces)."""
    return f"{group.name}.arrived{rank}"


def left(group: Group, rank: int) -> str:
    """Rank `rank`'s completed calls of `group` (what its leave writes) in a step's footprint."""
    return f"{group.name}.left{rank}"


def arrivals(group: Group) -> tuple:
    names = group.__dict__.get("_pc_arrivals")
    if names is None:
        names = group._pc_arrivals = tuple(arrival(group, r) for r in group.ranks)
    return names
