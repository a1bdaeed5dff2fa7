"""A release's detected shape -> the protocol whose steps it runs, and that protocol's options.

The protocol is read from the source like every other feature: a release with PrefetchAck and
the sync thread runs the ack-drain protocol, one without them (as recorded for the followed
release it is: release_record.py) the predicate-poll protocol: each protocol's SGLang mapping
(mappings/) names the `acks` value of its releases, and its options.py settles its options. A shape the detector does
not place in a known family is "not modelled", with what was not recognised, whatever the
mappings would say.
"""

from __future__ import annotations

from prefetch_check.sglang.families import UNKNOWN
from prefetch_check.sglang.mappings import by_acks
from prefetch_check.sglang.release_options import ReleaseOptions
from prefetch_check.sglang.shape import Shape


def release_protocol(shape: Shape, family: str) -> ReleaseOptions:
    """The protocol and options of this shape (family: `families.classify(shape)`)."""
    mapping = by_acks(shape.acks.value)
    if mapping is None:
        reasons = tuple(shape.unrecognised()) or (f"acks={shape.acks.value}: neither ACKs with a sync thread nor none",)
        return ReleaseOptions(None, not_modelled=reasons)
    found = mapping.release_options(shape)
    if family == UNKNOWN and found.modelled:
        return ReleaseOptions(found.protocol, not_modelled=(
            "the features match no known release family (prefetch_check/sglang/families.py FAMILIES): "
            + ", ".join(f"{n}={f.value}" for n, f in shape.features().items() if n not in ("predicate", "cache_class")),
        ), left_out=found.left_out)
    return found
