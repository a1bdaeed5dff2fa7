"""What a scenario file may say depends on its protocol: each protocol's parameters and how they
become its configuration, in one value the loader reads (`schema_for`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from prefetch_check.model.protocols import family
from prefetch_check.model.protocols.registry import descriptor, descriptors
from prefetch_check.scenario.schema import META, TABLES, Param


@dataclass(frozen=True)
class ProtocolSchema:
    """global_params: keys that hold for the whole scenario (`ranks` first);
    request_params: the keys of a request ([[request]] tables, or top-level shorthand);
    requests: the `requests` count key; build(values, request_tables, where) -> configuration;
    properties: the property names an [expect] table may name."""

    protocol: str
    global_params: tuple[Param, ...]
    request_params: tuple[Param, ...]
    requests: Param
    build: Callable
    properties: tuple[str, ...]

    @property
    def parameters(self) -> dict:
        return {p.name: p for p in self.global_params + (self.requests,) + self.request_params}

    @property
    def shorthand(self) -> tuple[str, ...]:
        """Keys excluded when [[request]] tables describe the requests."""
        return (self.requests.name,) + tuple(p.name for p in self.request_params)

    @property
    def top_level(self) -> tuple[str, ...]:
        return tuple(META) + tuple(self.parameters) + tuple(TABLES)


def schema_for(protocol_class) -> ProtocolSchema:
    """The schema of a protocol class: its registered protocol's parameters (a variant takes its base's,
    from the base's descriptor), and the class's own property names (a variant may add properties,
    and scenarios may expect them)."""
    name = family(protocol_class)
    found = descriptor(name)
    if found is None:
        raise ValueError(f"{name} is not a registered protocol nor a variant of one")
    params = found.scenario_params()
    return ProtocolSchema(name, params.GLOBAL, params.REQUEST, params.REQUESTS, params.build_config, protocol_class.property_names)


def every_parameter() -> set:
    """The scenario parameters of every registered protocol (to say a key belongs to another one)."""
    out = set()
    for d in descriptors():
        params = d.scenario_params()
        out |= {p.name for p in params.GLOBAL + (params.REQUESTS,) + params.REQUEST}
    return out
