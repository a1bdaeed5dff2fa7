"""Reads of fields the world never set, on the objects it builds with `__new__` (the cache, its
controller, the buffer pipeline): "not modelled", not an AttributeError the path may swallow.

A world builds these objects as SGLang's own unit tests do, `__new__` and the fields the path
reads. A field it forgot raises AttributeError where the path reads it, and where the path
catches `Exception` (0.5.22's backup thread: `_page_backup_or_log`) the run goes on down a path
that is not the release's, and its verdicts are about code that did not run as written (0.5.22's
buffer_only write cases stored nothing that way, clean). With the guard such a read ends the run
as not modelled (a BaseException: no `except Exception` takes it), naming the field and the line.

What stays an AttributeError: the path's own probes, `getattr(obj, name, default)` and
`hasattr(obj, name)` (the reading frame is in a call, not an attribute load: told apart by the
opcode it executes), dunder lookups, reads from outside the tree (the worlds' own code), and any
read on an object the world built through its class's own `__init__` (`constructed`: the buffer
pipeline): a field that constructor did not set is the tree's own AttributeError (an edit of the
pipeline's `reset`, which its `__init__` calls, dropping a field is no_crash, not "not modelled")."""

from __future__ import annotations

import dis
import sys

from prefetch_check.model.code.stand_ins.errors import NotModelled, _below

_LOADS = frozenset(op for op in ("LOAD_ATTR", "LOAD_METHOD", "LOAD_SUPER_ATTR") if op in dis.opmap)
_LOAD_CODES = frozenset(dis.opmap[op] for op in _LOADS)


def guard(cls, roots: tuple[str, ...]) -> None:
    """Make a read of a field `cls`'s objects lack, by the tree's code (below `roots`), not modelled.
    A class that answers missing names itself (its own `__getattr__`) is left alone."""
    if cls is None or cls.__dict__.get("_pc_unset_guarded"):
        return
    if any("__getattr__" in k.__dict__ for k in cls.__mro__ if k is not object):
        return

    def __getattr__(self, name: str):
        if name.startswith("__") or name.startswith("_pc"):
            raise AttributeError(name)
        if self.__dict__.get("_pc_constructed"):
            error = AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
            error._pc_tree_own = True  # the tree's own, though raised here (rt/baton.py _raised_in_stand_in)
            raise error
        frame = sys._getframe(1)
        relative = _below(frame.f_code.co_filename, roots)
        if relative is None or frame.f_code.co_code[frame.f_lasti] not in _LOAD_CODES:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        raise NotModelled(f"{type(self).__name__}.{name}, a field the world never set on the object it built",
                          f"{relative}:{frame.f_lineno}")

    type.__setattr__(cls, "__getattr__", __getattr__)
    type.__setattr__(cls, "_pc_unset_guarded", True)


def constructed(obj) -> None:
    """`obj`'s fields are what its class's own `__init__` set: a field missing is the tree's own."""
    object.__setattr__(obj, "_pc_constructed", True)
