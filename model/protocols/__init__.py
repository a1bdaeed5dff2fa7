"""The protocol versions the checker models, by name, and a user's own protocol variants.

A protocol is a `model.interface.RankProtocol` subclass. The built-in ones are named
here; a user's variant (a subclass that overrides one step or hook) is named
`package.module:ClassName` and imported like any Python code the user asks us to run.
"""

from __future__ import annotations

import importlib

BUILTIN = {
    "predicate-poll": ("prefetch_check.model.protocols.poll.protocol", "PollProtocol"),
    "ack-drain": ("prefetch_check.model.protocols.ack_drain.protocol", "AckDrainProtocol"),
}
DEFAULT = "predicate-poll"


class ProtocolError(ValueError):
    """A protocol name or `package.module:Class` that does not give a protocol."""


def load_protocol(spec):
    """A protocol class from a built-in name, `package.module:ClassName`, or a class (returned as is)."""
    from prefetch_check.model.interface import RankProtocol

    if spec is None:
        spec = DEFAULT
    if isinstance(spec, type):
        cls = spec
    elif spec in BUILTIN:
        module, name = BUILTIN[spec]
        return getattr(importlib.import_module(module), name)
    elif ":" not in spec:
        raise ProtocolError(
            f"unknown protocol {spec!r}: use one of {', '.join(BUILTIN)} or package.module:ClassName "
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
            f"({', '.join(BUILTIN)}), e.g. prefetch_check.model.protocols.poll.protocol.PollProtocol"
        )
    return cls


def builtin_ancestor(cls):
    """The built-in protocol a class is (or is a variant of), or None."""
    builtin = {(module, attr) for module, attr in BUILTIN.values()}
    return next((k for k in cls.__mro__ if (k.__module__, k.__name__) in builtin), None)


def protocol_label(cls) -> str:
    """How reports name a protocol class: its built-in name, or module:Class for a variant."""
    for name, (module, attr) in BUILTIN.items():
        if cls.__module__ == module and cls.__name__ == attr:
            return name
    return f"{cls.__module__}:{cls.__qualname__}"
