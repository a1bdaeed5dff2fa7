"""The predicate-poll protocol as every command sees it (model/protocols/registry.py)."""

from __future__ import annotations

from prefetch_check.model.protocols.registry import Descriptor

_HERE = "prefetch_check.model.protocols.poll"


def source_membership(kinds: set, max_reading, wait_accepts: bool):
    """(shape, why) of a source predicate of this protocol: it performs the termination
    collective itself (model/source/predicate.py's table)."""
    from prefetch_check.model.source.predicate import NEGATED

    if ("MAX", 2) in kinds:
        return "late2025", "performs the MAX collective of [1 - can_terminate, is_terminated()] (0.5.2-0.5.18)"
    if ("MIN", 1) in kinds:
        return "seed", "performs the MIN collective of can_terminate (0.5.1.x)"
    if ("MAX", 1) in kinds and max_reading == NEGATED:
        return "seed", "performs a MAX collective of [1 - can_terminate] and reads tensor[0] == 0: all ranks must agree"
    return None


DESCRIPTOR = Descriptor(
    name="predicate-poll",
    protocol=f"{_HERE}.protocol:PollProtocol",
    covers="SGLang 0.5.1 to 0.5.18",
    scenario="prefetch_check.scenario.poll_params",
    predicates=f"{_HERE}.predicates",
    mutants=f"{_HERE}.mutants",
    source_rules=f"{_HERE}.descriptor:source_membership",
    source_shape_option="shape",
    world="prefetch_check.model.code.worlds.predicate_poll.pack:PACK",
    uniform=f"{_HERE}.config:uniform_config",
)
