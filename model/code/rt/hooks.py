"""Scheduling points on the PrefetchOperation fields threads share without a lock (CODE-PATH.md
section 2): a read or write of one of them, once the operation is built, parks the thread first;
the terminated flag (read under the op's lock, whose acquire is already a point) is observed only.
Installed on the tree's own class after import, so the class body stays as written.

Every access to an operation's own field (hooked or not) also enters the running step's footprint
(rt/baton.py `touch`) as `<op label>.<field>`: a write when assigned, a read when read, and a write
when the value read is a mutable object other than a stand-in (the reader may change it in place:
`pool_storage_result`, `pool_transfers`). What a thread does later to such an object it kept
in a local across a scheduling point is not seen (the search's reduction states that limit).

`watch` does the same for the code's other objects the threads share, without points: the
predicate-poll world's cache and controller, buffer_only's pipeline (`<label>.<field>`)."""

from __future__ import annotations

import types

from prefetch_check.model.code.stand_ins.queues import Queue
from prefetch_check.model.code.stand_ins.sync import Event, Lock

SHARED = frozenset({"hash_value", "storage_hit_count", "host_indices", "completed_tokens"})
OBSERVED = frozenset({"_terminated_flag"})
# values whose reading changes nothing a reader could write through: immutable ones, functions,
# and stand-ins (their own calls enter the footprint; a class that records its own says so with
# `_pc_footprint = True`)
_SHARED_AS_VALUE = (int, float, str, bytes, bool, type(None), tuple, frozenset, Queue, Lock, Event,
                    types.FunctionType, types.MethodType, types.BuiltinFunctionType)


def as_value(value) -> bool:
    """Reading `value` out of a field is a read of the field (else a write: the reader may change it)."""
    return (isinstance(value, _SHARED_AS_VALUE) or getattr(type(value), "_pc_footprint", False)
            or "_pc_label" in getattr(value, "__dict__", ()))


def touch_field(baton, d: dict, name: str, write: bool) -> None:
    """A running step read or wrote field `name` of the watched object whose `__dict__` is `d`."""
    label = d.get("_pc_label")
    if label is not None:
        baton.touch(f"{label}.{name}", write)


def watch(cls, holder) -> None:
    """Every read and write of an instance attribute of `cls` enters the running step's footprint
    as `<label>.<name>` (the instance's `_pc_label`, set when the world builds it; unlabelled
    instances are not watched): a write when assigned or deleted, a read when read, a write when
    the value read is a mutable object other than a stand-in (`as_value`). No scheduling point:
    these are the objects the code keeps across its threads (the cache, the controller), whose
    plain fields a step may share with another thread's step without a lock."""
    if cls.__dict__.get("_pc_watched"):
        return
    base_get, base_set, base_del = cls.__getattribute__, cls.__setattr__, cls.__delattr__

    def __getattribute__(self, name):
        world = holder.world
        if world is not None and world.baton.stepping and not name.startswith(("_pc", "__")):
            d = object.__getattribute__(self, "__dict__")
            if name in d:
                touch_field(world.baton, d, name, not as_value(d[name]))
        return base_get(self, name)

    def __setattr__(self, name, value):
        world = holder.world
        if world is not None and world.baton.stepping:
            touch_field(world.baton, object.__getattribute__(self, "__dict__"), name, True)
        base_set(self, name, value)

    def __delattr__(self, name):
        world = holder.world
        if world is not None and world.baton.stepping:
            touch_field(world.baton, object.__getattribute__(self, "__dict__"), name, True)
        base_del(self, name)

    cls.__getattribute__, cls.__setattr__, cls.__delattr__ = __getattribute__, __setattr__, __delattr__
    cls._pc_watched = True


class OpPart:
    """An operation's shared fields, for the state key."""

    def __init__(self, op, world, fields=tuple(sorted(SHARED | OBSERVED))):
        self.op, self.world, self.fields = op, world, fields

    def snapshot(self) -> tuple:
        d = self.op.__dict__
        return (d.get("_pc_label"),) + tuple(self.world.label(d.get(f)) for f in self.fields)


def install(op_cls, ack_cls, holder, observed=OBSERVED) -> None:
    """Wrap `op_cls` (PrefetchOperation) and describe `ack_cls` (PrefetchAck, None where the tree
    has none) for queue labels. `observed`: the op's lock-guarded flags (0.5.1 calls it `_done_flag`)."""
    if getattr(op_cls, "_pc_hooked", False):
        return
    fields = tuple(sorted(SHARED | observed))
    base_get, base_set, base_init = op_cls.__getattribute__, op_cls.__setattr__, op_cls.__init__

    def __init__(self, *args, **kwargs):
        base_init(self, *args, **kwargs)
        world = holder.world
        me = world.baton.current()
        label = world.name_object(self, f"r{me.rank if me else 0}.op")
        object.__setattr__(self, "_pc_label", label)
        world.register(OpPart(self, world, fields))

    def __getattribute__(self, name):
        if name in SHARED or name in observed:
            d = object.__getattribute__(self, "__dict__")
            if "_pc_label" in d:
                world = holder.world
                if name in SHARED:
                    world.baton.point(f"read {d['_pc_label']}.{name}")
                value = base_get(self, name)
                world.baton.touch(f"{d['_pc_label']}.{name}", write=False)
                world.baton.observe(f"{d['_pc_label']}.{name}={world.label(value)}")
                return value
        elif holder.world is not None and holder.world.baton.stepping and not name.startswith(("_pc", "__")):
            d = object.__getattribute__(self, "__dict__")
            if name in d:
                touch_field(holder.world.baton, d, name, not as_value(d[name]))
        return base_get(self, name)

    def __setattr__(self, name, value):
        if name in SHARED:
            d = object.__getattribute__(self, "__dict__")
            if "_pc_label" in d:
                holder.world.baton.point(f"write {d['_pc_label']}.{name} = {holder.world.label(value)}")
                holder.world.baton.touch(f"{d['_pc_label']}.{name}")
        elif holder.world is not None and holder.world.baton.stepping:
            touch_field(holder.world.baton, object.__getattribute__(self, "__dict__"), name, True)
        base_set(self, name, value)

    op_cls.__init__, op_cls.__getattribute__, op_cls.__setattr__ = __init__, __getattribute__, __setattr__
    op_cls._pc_hooked = True
    op_cls._pc_describe = classmethod(lambda cls, op, world: op.__dict__.get("_pc_label", "op"))

    def describe_ack(cls, ack, world) -> str:
        d = ack.__dict__
        op = d.get("operation")
        parts = [op.__dict__.get("_pc_label", "op") if op is not None else "?"]
        for f in ("completed_tokens", "pool_hits", "completed_req"):
            if d.get(f) is not None:
                parts.append(f"{f}={d[f]}")
        return "ack(" + ",".join(parts) + ")"

    if ack_cls is not None:
        ack_cls._pc_describe = classmethod(describe_ack)
