"""msgspec as far as the loaded files use it: `Struct` subclasses with defaults and
`field(default_factory=...)`, built like dataclasses."""

from __future__ import annotations

import types

_MISSING = object()


class _Field:
    def __init__(self, default=_MISSING, default_factory=None, name=None):
        self.default, self.default_factory = default, default_factory


def field(*, default=_MISSING, default_factory=None, name=None):
    return _Field(default, default_factory)


class Struct:
    __pc_fields__: tuple = ()

    def __init_subclass__(cls, **kwargs):
        names = list(getattr(cls, "__pc_fields__", ()))
        for name in cls.__dict__.get("__annotations__", {}):
            if name not in names:
                names.append(name)
        cls.__pc_fields__ = tuple(names)
        cls.__pc_defaults__ = {**getattr(cls, "__pc_defaults__", {}),
                               **{n: cls.__dict__[n] for n in names if n in cls.__dict__}}

    def __init__(self, *args, **kwargs):
        for name, value in zip(self.__pc_fields__, args):
            kwargs[name] = value
        for name in self.__pc_fields__:
            if name in kwargs:
                value = kwargs[name]
            else:
                default = self.__pc_defaults__.get(name, _MISSING)
                if isinstance(default, _Field):
                    value = default.default_factory() if default.default_factory else default.default
                elif default is _MISSING:
                    raise TypeError(f"missing field {name}")
                else:
                    value = default
            object.__setattr__(self, name, value)


def make_msgspec() -> types.ModuleType:
    mod = types.ModuleType("msgspec")
    mod.Struct, mod.field = Struct, field
    return mod
