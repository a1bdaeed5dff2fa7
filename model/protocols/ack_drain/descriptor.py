"""The ack-drain protocol as every command sees it (model/protocols/registry.py)."""

from __future__ import annotations

from prefetch_check.model.protocols.registry import Descriptor

_HERE = "prefetch_check.model.protocols.ack_drain"


def source_membership(kinds: set, max_reading, wait_accepts: bool):
    """(shape, why) of a source predicate of this protocol: a vote any rank may win, or no
    collective and completion only through the ACK drain (model/source/predicate.py's table).
    Asked after the predicate-poll protocol's rules, which claim the agreeing collectives."""
    if ("MAX", 1) in kinds:
        return "unified", (
            "votes int(should_terminate) into a MAX collective and reads tensor[0] == 1: any rank may end the "
            "wait (UnifiedRadixCache 0.5.19+, under the timeout policy)")
    if not kinds and not wait_accepts:
        return "hiradix", (
            "reaches no collective and never accepts under wait_complete: completion comes through the ACK drain "
            "and the check around it votes (HiRadixCache 0.5.19-0.5.20)")
    return None


DESCRIPTOR = Descriptor(
    name="ack-drain",
    protocol=f"{_HERE}.protocol:AckDrainProtocol",
    covers="SGLang 0.5.19 and later",
    scenario="prefetch_check.scenario.ack_drain_params",
    predicates=f"{_HERE}.predicates",
    mutants=f"{_HERE}.mutants",
    source_rules=f"{_HERE}.descriptor:source_membership",
    world="prefetch_check.model.code.worlds.ack_drain.pack:PACK",
    uniform=f"{_HERE}.config:uniform_ack_config",
    short="ack",
)
