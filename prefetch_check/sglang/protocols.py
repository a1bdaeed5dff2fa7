"""A release's detected shape -> the protocol whose steps it runs, and that protocol's options.

The protocol is read from the source like every other feature: a release with PrefetchAck and
the sync thread runs the ack-drain protocol, one without them the predicate-poll protocol.
Each protocol's own mapping then settles its options (model/protocols/ack_drain/releases.py,
prefetch_check/sglang/poll_releases.py). A shape the detector does not place in a known
family is "not modelled", with what was not recognised, whatever the mappings would say.
"""

from __future__ import annotations

from prefetch_check.model.protocols.ack_drain import releases as ack_drain_releases
from prefetch_check.model.source.detect import UNKNOWN, Shape
from prefetch_check.model.source.release_options import ReleaseOptions
from prefetch_check.sglang import poll_releases

BY_ACKS = {"ack+sync-thread": ack_drain_releases, "none": poll_releases}


def release_protocol(shape: Shape, family: str) -> ReleaseOptions:
    """The protocol and options of this shape (family: `detect.classify(shape)`)."""
    mapping = BY_ACKS.get(shape.acks.value)
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
