"""Footprints of the sidecar pools' transfer descriptors (the tree's own `PoolTransfer`, a dataclass
of hicache_storage.py). With sidecar pools the scheduler and IO share these objects without a
lock or a queue between some of their accesses: the scheduler binds the staging at hit time and
reads the window's slots on a release through its ongoing entry (`info.comp_xfers`), IO re-keys
the window and shrinks it in `_sync_trailing_keys` through the operation (`op.pool_transfers`).
The operation's hooks (rt/hooks.py) see only the second path, so every transfer gets a label at
construction (per rank, like an operation) and each access of a mutable field by a managed thread
enters the step's footprint as `<label>.<field>` and, when read, the reader's observations; each
transfer is a part of the state key. Installed on the tree's class after import (the class body
stays as written); only a run with sidecar pools labels them (`holder.transfer_parts`), so
the KV transfer every issue builds leaves other runs' footprints and keys as they were."""

from __future__ import annotations

FIELDS = frozenset({"keys", "host_indices", "device_indices"})


class RankTransfers:
    """One rank's transfers, in the order they were built: a part of the state key registered
    before any step, so a transfer built later enters the key without touching the world's part
    list (which every rank shares: the ranks' steps would all depend on one another)."""

    def __init__(self, world, rank: int):
        self.world, self.rank, self.xfers = world, rank, []
        self._pc_name = f"r{rank}.xfers"
        world.register(self)

    def add(self, xfer) -> None:
        self.world.baton.touch(self._pc_name)
        self.xfers.append(xfer)

    def snapshot(self) -> tuple:
        label = self.world.label
        return tuple((x.__dict__.get("_pc_label"), str(x.__dict__.get("name")), tuple(x.__dict__.get("keys") or ()),
                      label(x.__dict__.get("host_indices"))) for x in self.xfers)


def install(xfer_cls, holder) -> None:
    if xfer_cls is None or getattr(xfer_cls, "_pc_hooked", False):
        return
    base_get, base_set, base_init = xfer_cls.__getattribute__, xfer_cls.__setattr__, xfer_cls.__init__

    def __init__(self, *args, **kwargs):
        base_init(self, *args, **kwargs)
        world = holder.world
        parts = getattr(holder, "transfer_parts", None)  # rank -> RankTransfers: only runs with sidecar pools
        if world is None or not parts:
            return
        me = world.baton.current()
        if me is None:  # built by the harness or a stand-in outside a step: no thread shares it yet
            return
        object.__setattr__(self, "_pc_label", world.name_object(self, f"r{me.rank}.xfer"))
        parts[me.rank].add(self)

    def __getattribute__(self, name):
        if name in FIELDS:
            d = object.__getattribute__(self, "__dict__")
            label = d.get("_pc_label")
            world = holder.world
            if label is not None and world is not None and world.baton.current() is not None:
                value = d.get(name)
                world.baton.touch(f"{label}.{name}", write=False)
                world.baton.observe(f"{label}.{name}={world.label(value)}")
        return base_get(self, name)

    def __setattr__(self, name, value):
        if name in FIELDS:
            label = object.__getattribute__(self, "__dict__").get("_pc_label")
            world = holder.world
            if label is not None and world is not None:
                world.baton.touch(f"{label}.{name}")
        base_set(self, name, value)

    xfer_cls.__init__, xfer_cls.__getattribute__, xfer_cls.__setattr__ = __init__, __getattribute__, __setattr__
    xfer_cls._pc_hooked = True
    xfer_cls._pc_describe = classmethod(lambda cls, x, world: x.__dict__.get("_pc_label", f"xfer:{x.__dict__.get('name')}"))
