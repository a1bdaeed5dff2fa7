"""The protocol versions the checker models, by name, and a user's own protocol variants.

A protocol is a `model.interface.RankProtocol` subclass. The registered ones are named by
their descriptors (`registry.py`: one per protocol, beside its folder); a user's variant (a
subclass that overrides one step or hook) is named `package.module:ClassName` and imported
like any Python code the user asks us to run.
"""

from __future__ import annotations

import importlib

from prefetch_check.model.protocols.registry import DEFAULT, descriptor, descriptor_of, names


class ProtocolError(ValueError):
    """A protocol name or `package.module:Class` that does not give a protocol."""


def load_protocol(spec):
    """A protocol class from a built-in name, `package.module:ClassName`, or a class (returned as is)."""
    from prefetch_check.model.interface import RankProtocol

    if spec is None:
        spec = DEFAULT
    if isinstance(spec, type):
        cls = spec
    elif descriptor(spec) is not None:
        return descriptor(spec).protocol_class()
    elif ":" not in spec:
        raise ProtocolError(
            f"unknown protocol {spec!r}: use one of {', '.join(names())} or package.module:ClassName "
            "(a subclass of one of them)"
        )
    else:
        module_name, _, attr = spec.partition(":")
        try:
            module = importlib.import_module(module_name)
        except Exception as exc:  # the user's code: report it as bad input
            raise ProtocolError(f"protocol {spec!r}: cannot import module {module_name!r}: {type(exc).__name__}: {exc}") from None
        cls = getattr(module, attr, None)
        if cls is None:
            raise ProtocolError(f"protocol {spec!r}: module {module_name!r} has no {attr!r}")
    if not (isinstance(cls, type) and issubclass(cls, RankProtocol)):
        raise ProtocolError(
            f"protocol {spec!r} is not a protocol class: it must subclass one of the built-in protocols "
            f"({', '.join(names())}), e.g. prefetch_check.model.protocols.poll.protocol.PollProtocol"
        )
    return cls


def builtin_ancestor(cls):
    """The registered protocol class a class is (or is a variant of), or None."""
    found = descriptor_of(cls)
    return None if found is None else next(k for k in cls.__mro__ if found.is_class(k))


def family(cls) -> str:
    """The registered protocol's name a class is, or is a variant of (its own label otherwise)."""
    found = descriptor_of(cls)
    return found.name if found is not None else protocol_label(cls)


def protocol_label(cls) -> str:
    """How reports name a protocol class: its registered name, or module:Class for a variant."""
    found = descriptor_of(cls)
    if found is not None and found.is_class(cls):
        return found.name
    return f"{cls.__module__}:{cls.__qualname__}"
