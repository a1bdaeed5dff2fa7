"""The release families: which feature values each family of SGLang releases has.

Why: a verdict names the family a tree's shape belongs to; a shape no family has is "unknown"
and gets no model options (protocols.py), whatever the protocols' mappings would say. The
families and the releases in each are listed in docs/sglang.md.
"""

from __future__ import annotations

from typing import Iterable

from prefetch_check.sglang.shape import Shape

# What each release family requires; features not named here may vary inside a family.
FAMILIES: tuple[tuple[str, dict[str, Iterable[str]]], ...] = (
    ("seed", dict(judged_class={"HiRadixCache"}, host_alloc={"issue"}, acks={"none"}, revoke_queue={"yes"},
                  hit_queue={"no"}, check_collective={"min-can-terminate"}, io_short_batch={"stop"},
                  threshold={"prefetch-thread-clamped"})),
    ("late2025", dict(judged_class={"HiRadixCache"}, host_alloc={"issue"}, acks={"none"}, revoke_queue={"yes"},
                      hit_queue={"no"}, check_collective={"max-not-can-terminate-terminated"},
                      io_short_batch={"mark-terminate"}, threshold={"prefetch-thread-clamped"})),
    ("staged", dict(judged_class={"HiRadixCache"}, host_alloc={"hit"}, acks={"none"}, revoke_queue={"yes"},
                    hit_queue={"yes"}, check_collective={"max-not-can-terminate-terminated"},
                    io_short_batch={"mark-terminate"}, threshold={"prefetch-thread-clamped"})),
    ("staged-drain-threshold", dict(judged_class={"HiRadixCache"}, host_alloc={"hit"}, acks={"none"},
                                    revoke_queue={"no"}, hit_queue={"yes"},
                                    check_collective={"max-not-can-terminate-terminated"},
                                    io_short_batch={"mark-terminate"}, threshold={"drain-raw"})),
    ("ack-drain-hiradix", dict(judged_class={"HiRadixCache"}, host_alloc={"hit"}, acks={"ack+sync-thread"},
                               revoke_queue={"no"}, hit_queue={"yes"}, check_collective={"max-vote-pp0"},
                               io_short_batch={"keep-acking"}, threshold={"drain-raw"},
                               tail_release={"drain-direct"})),
    ("unified", dict(judged_class={"UnifiedRadixCache"}, host_alloc={"hit"}, acks={"ack+sync-thread"},
                     revoke_queue={"no"}, hit_queue={"yes"}, check_collective={"vote-only-under-timeout"},
                     io_short_batch={"keep-acking"}, threshold={"drain-raw"}, tail_release={"drain-release-queue"},
                     timeout={"linear"})),
    ("unified-deadline", dict(judged_class={"UnifiedRadixCache"}, host_alloc={"hit"}, acks={"ack+sync-thread"},
                              revoke_queue={"no"}, hit_queue={"yes"}, check_collective={"vote-only-under-timeout"},
                              io_short_batch={"keep-acking"}, threshold={"drain-raw"},
                              tail_release={"drain-release-queue"}, timeout={"admission-deadline"})),
)
UNKNOWN = "unknown"


def classify(shape: Shape) -> str:
    """The release family whose every required feature the shape has, else "unknown"."""
    feats = shape.features()
    for family, required in FAMILIES:
        if all(feats[name].value in set(values) for name, values in required.items()):
            return family
    return UNKNOWN
