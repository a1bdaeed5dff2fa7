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
        return (self.name, tuple(sorted(self.calls.items())),
                tuple((n, tuple(sorted((r, e[:4]) for r, e in a.items()))) for n, a in sorted(self.arrived.items())))


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
        arrives, and each leaves with the list the rank `src` brought (the PP tickets' relay,
        0.5.21+). An arrival is a scheduling point; the leave is enabled once all arrived."""
        me = self.rank_of()
        baton = self.world.baton
        baton.point(f"broadcast arrive {group.name}")
        baton.touch(arrival(group, me))
        baton.touch(left(group, me), write=False)
        n = group.calls[me]
        site = baton.current().point.site if baton.current() else "?"
        brought = tuple(objects) if me == src else ()
        group.arrived.setdefault(n, {})[me] = (site, "BROADCAST", src, tuple(self._describe(o) for o in brought), brought)
        baton.observe(f"arrive {group.name}#{n}")
        baton.point(f"broadcast leave {group.name}", lambda: len(group.arrived.get(n, {})) == len(group.ranks),
                    arrivals(group))
        baton.touch(left(group, me))
        sent = group.arrived[n].get(src)
        if sent is None or sent[1] != "BROADCAST":
            self.world.fault("tp_agreement", f"{group.name} call {n}: rank {me} broadcasts from {src} while that rank "
                             f"is in another collective", "ranks disagree on which collective they are in: a hang or "
                             "mixed-up data on a real cluster", site)
            received: list = []
        else:
            received = list(sent[4])
        group.calls[me] = n + 1
        if all(group.calls[r] > n for r in group.ranks):
            del group.arrived[n]
        baton.observe(f"received {[self._describe(o) for o in received]}")
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
        rank = self.rank_of()
        baton = self.world.baton
        baton.point(f"all_reduce({op}) arrive {group.name}")
        baton.touch(arrival(group, rank))
        baton.touch(left(group, rank), write=False)  # its call number (a rebase may move it: RelativeGroup)
        n = group.calls[rank]
        site = baton.current().point.site if baton.current() else "?"
        entry = (site, str(op), len(tensor.data))
        arrived = group.arrived.setdefault(n, {})
        arrived[rank] = entry + (tuple(tensor.data),)
        mates = [a for r, a in arrived.items() if r != rank]
        if any(m[:3] != entry for m in mates):
            other = next(m for m in mates if m[:3] != entry)
            for r in arrived:  # the fault depends on which peer came first: the arrivals race here
                baton.touch(arrival(group, r), write=False)
            self.world.fault("tp_agreement", f"{group.name} call {n}: rank {rank} arrives from {site} ({op}, "
                             f"{len(tensor.data)} values) while a peer is in {other[0]} ({other[1]}, {other[2]} values)",
                             "ranks disagree on which collective they are in: a hang or mixed-up data on a real cluster", site)
        baton.observe(f"arrive {group.name}#{n}")
        baton.point(f"all_reduce({op}) leave {group.name}", lambda: len(group.arrived.get(n, {})) == len(group.ranks),
                    arrivals(group))
        baton.touch(left(group, rank))
        values = [a[3] for a in group.arrived[n].values()]
        reduce = {"MIN": min, "MAX": max, "SUM": sum, "BARRIER": min}[str(op)]
        width = min(len(v) for v in values)
        tensor.data = [reduce(v[i] for v in values) for i in range(width)]
        group.calls[rank] = n + 1
        if all(group.calls[r] > n for r in group.ranks):
            del group.arrived[n]
        baton.observe(f"reduced {tensor.data}")
        return None


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
