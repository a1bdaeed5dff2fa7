"""A release's detected shape -> the protocol whose steps it runs, and that protocol's options.

The protocol is read from the source like every other feature: a release with PrefetchAck and
the sync thread runs the ack-drain protocol, one without them the predicate-poll protocol.
Each protocol's own mapping (its descriptor's `releases`: model/protocols/ack_drain/releases.py,
model/protocols/poll/release_mapping.py) then settles its options. A shape the detector does not place in a known
family is "not modelled", with what was not recognised, whatever the mappings would say.
"""

from __future__ import annotations

from prefetch_check.model.protocols.registry import descriptors
from prefetch_check.model.source.detect import UNKNOWN, Shape
from prefetch_check.model.source.release_options import ReleaseOptions


def release_protocol(shape: Shape, family: str) -> ReleaseOptions:
    """The protocol and options of this shape (family: `detect.classify(shape)`)."""
    mapping = next((d for d in descriptors() if d.releases and d.release_acks == shape.acks.value), None)
    if mapping is None:
        reasons = tuple(shape.unrecognised()) or (f"acks={shape.acks.value}: neither ACKs with a sync thread nor none",)
        return ReleaseOptions(None, not_modelled=reasons)
    found = mapping.release_options(shape)
    if family == UNKNOWN and found.modelled:
        return ReleaseOptions(found.protocol, not_modelled=(
            "the features match no known release family (model/source/detect.py FAMILIES): "
            + ", ".join(f"{n}={f.value}" for n, f in shape.features().items() if n not in ("predicate", "cache_class")),
        ), left_out=found.left_out)
    return found
