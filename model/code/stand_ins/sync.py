"""threading for the code under test: Lock and Event are scheduling points (an acquire is
enabled only while the lock is free). The executor starts the threads itself, as
`_start_storage_threads` would; a world where the code stops and starts them again (the cache's
reset) sets `World.starts_threads`, and `threading.Thread` is then stand_ins/threads.py's, else
not modelled."""

from __future__ import annotations

import types

from prefetch_check.model.code.stand_ins.threads import Thread


class Lock:
    def __init__(self, world, name: str):
        self.world, self.name, self.holder = world, name, None
        world.register(self)

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        baton = self.world.baton
        baton.point(f"acquire {self.name}", lambda: self.holder is None, (self.name,))
        baton.touch(self.name)
        self.holder = baton.current()
        return True

    def release(self) -> None:
        self.world.baton.touch(self.name)
        self.holder = None

    def locked(self) -> bool:
        self.world.baton.touch(self.name, write=False)
        return self.holder is not None

    __enter__ = acquire

    def __exit__(self, *exc) -> None:
        self.release()

    def snapshot(self) -> tuple:
        return (self.name, self.holder.name if self.holder is not None else "")


class Event:
    def __init__(self, world, name: str):
        self.world, self.name, self.flag = world, name, False
        world.register(self)

    def is_set(self) -> bool:
        self.world.baton.touch(self.name, write=False)
        return self.flag

    def set(self) -> None:
        self.world.baton.point(f"set {self.name}")
        self.world.baton.touch(self.name)
        self.flag = True

    def clear(self) -> None:
        self.world.baton.touch(self.name)
        self.flag = False

    def wait(self, timeout=None) -> bool:
        self.world.baton.point(f"wait {self.name}", lambda: self.flag, (self.name,))
        self.world.baton.touch(self.name, write=False)
        return True

    def snapshot(self) -> tuple:
        return (self.name, self.flag)


def make_threading(world, not_modelled) -> types.ModuleType:
    """The `threading` the loaded files see: cooperative Lock/RLock/Event, the rest not modelled."""
    import threading as real

    mod = types.ModuleType("threading")
    mod.Lock = lambda: Lock(world, world.name_object(object(), "lock"))
    mod.RLock = mod.Lock
    mod.Event = lambda: Event(world, world.name_object(object(), "event"))
    mod.Thread = lambda *a, **k: (Thread(world, *a, **k) if world.starts_threads
                                  else not_modelled("threading.Thread")(*a, **k))
    mod.get_ident = real.get_ident
    mod.current_thread = real.current_thread
    mod.__getattr__ = lambda name: not_modelled(f"threading.{name}")
    return mod
