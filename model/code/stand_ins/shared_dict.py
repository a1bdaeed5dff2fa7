"""A dict the code shares between its threads without a lock around every access (the PP tickets'
`pp_prefetch_decisions`, read by the scheduler and popped by the ticket thread): each access
enters the running step's footprint under the dict's name, a read or a write, so the search's
sleep sets see the race, and what a read found enters the reading thread's digest (the state key
holds a thread's position only through what it saw: two reads of the same dict at different
places must differ). No scheduling point: the dict is as atomic as CPython's."""

from __future__ import annotations

import dataclasses
import enum


class SharedDict(dict):
    def __init__(self, world, name: str):
        super().__init__()
        self._pc_world, self._pc_name = world, name
        world.register(self)

    def _touch(self, write: bool) -> None:
        self._pc_world.baton.touch(self._pc_name, write)

    def _seen(self, what: str, value):
        self._pc_world.baton.observe(f"{self._pc_name} {what} {self._describe(value)}")
        return value

    def get(self, key, default=None):
        self._touch(False)
        return self._seen(f"get {key}", super().get(key, default))

    def __getitem__(self, key):
        self._touch(False)
        return self._seen(f"[{key}]", super().__getitem__(key))

    def __contains__(self, key) -> bool:
        self._touch(False)
        return self._seen(f"has {key}", super().__contains__(key))

    def __setitem__(self, key, value) -> None:
        self._touch(True)
        super().__setitem__(key, value)

    def __delitem__(self, key) -> None:
        self._touch(True)
        super().__delitem__(key)

    def pop(self, key, *default):
        self._touch(True)
        return self._seen(f"pop {key}", super().pop(key, *default))

    def setdefault(self, key, default=None):
        self._touch(True)
        return super().setdefault(key, default)

    def clear(self) -> None:
        self._touch(True)
        super().clear()

    def snapshot(self) -> tuple:
        """Its content in the state key: each key with what its value holds."""
        return (self._pc_name, tuple(sorted((str(k), self._describe(v)) for k, v in dict.items(self))))

    def _describe(self, value):
        """An enum member by name, a dataclass by its fields' labels (a ticket state: its flags),
        anything else by the world's label."""
        if isinstance(value, enum.Enum):
            return value.name
        if dataclasses.is_dataclass(value):
            return tuple(self._pc_world.label(getattr(value, f.name)) for f in dataclasses.fields(value))
        return self._pc_world.label(value)
