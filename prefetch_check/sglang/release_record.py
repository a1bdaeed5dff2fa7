"""What a release the model follows does not have, recorded once when its fingerprints are built.

Why: some steps of a release are the absence of something: no `prefetch_hit_queue`, no
PrefetchAck and sync thread, only `queue.Empty` caught in the storage threads (any other
error ends the thread), no counter of completed tokens in the page getter (the ACKs carry
the count), hence no ACK to match, no barrier (or no `release_aborted_request` at all) on the abort path. Read off
a user's tree such an absence would be a guess: the thing may live where the pattern does not
look. Read off a whole release tree that the release table was checked against, it is a fact
about that release. So it is read here, only by `followed.build` (`python -m
prefetch_check.sglang.followed CACHE` and the tests' fixture releases), and stored with the
release's fingerprints; a tree is given these values only where its whole prefetch path is
that release's code (followed.py `Followed.recorded_shape`).
"""

from __future__ import annotations

from typing import Mapping, Optional

from prefetch_check.sglang.detect import Reader, detect_shape
from prefetch_check.sglang.locate import CACHE_FILES
from prefetch_check.sglang.shape import Shape
from prefetch_check.sglang.source_ast import calls, parse_file

# the features whose value may be an absence: recorded per followed release
RECORDED = ("acks", "ack_match", "hit_queue", "revoke_queue", "storage_exceptions", "write_order", "abort_barrier",
            "round_collectives")

# where each recorded feature is read (detect.py): the methods whose code has it or lacks it.
# An edited tree given a release's recorded value (the model configured as that release, vouch.py)
# keeps it only where the conformance check ran one of them on the tree's code.
_DRAINS = ("drain_storage_control_queues", "_drain_storage_control_queues_impl", "check_revoked_prefetch")
DESCRIBED_BY: dict[str, tuple[str, ...]] = {
    "acks": ("prefetch_sync_thread_func",) + _DRAINS,
    "ack_match": _DRAINS,
    "hit_queue": _DRAINS,
    "revoke_queue": _DRAINS,
    "storage_exceptions": ("prefetch_thread_func", "prefetch_io_aux_func", "_page_transfer"),
    "write_order": ("_generic_page_get", "generic_page_transfer", "_page_transfer"),
    "abort_barrier": ("release_aborted_request",),
    "round_collectives": ("check_hicache_events",),
}


def _absent(r: Reader, feature: str) -> Optional[str]:
    """The value of a feature the positive reading did not see, in a whole release tree."""
    if r.ctl is None:
        return None
    if feature in ("hit_queue", "revoke_queue"):
        return "no"  # no `prefetch_<x>_queue` anywhere in the controller
    if feature == "acks":
        has_ack = "PrefetchAck" in r.ctl.classes
        has_sync = "prefetch_sync_thread_func" in r.ctl_methods
        return "none" if not has_ack and not has_sync else None
    if feature == "ack_match":  # nothing to match where there are no ACKs
        return "n/a" if _absent(r, "acks") == "none" else None
    if feature == "storage_exceptions":
        names = ("prefetch_thread_func", "prefetch_io_aux_func", "_page_transfer")
        return "queue-empty-only" if any(n in r.ctl_methods for n in names) else None
    if feature == "write_order":
        getter = r.ctl_methods.get("_generic_page_get") or r.ctl_methods.get("generic_page_transfer")
        writes = calls(getter, "set_from_flat_data_page") if getter is not None else []
        return "write-then-ack" if writes else None  # pages written, counted by what is returned
    if feature == "round_collectives":  # no all_reduce reached every round before the drain
        return "none"
    if feature == "abort_barrier":
        return "no-abort-path" if "release_aborted_request" not in r.methods else "no"
    return None


def record(files: Mapping[str, str], cache_class: Optional[str] = None) -> dict[str, str]:
    """feature -> value of every RECORDED feature of this release tree that can be told (present
    ones as the detector reads them, absent ones as above)."""
    shape: Shape = detect_shape(files, cache_class)
    judged = shape.judged_class.value
    if judged not in CACHE_FILES or parse_file(files, CACHE_FILES[judged]) is None:
        return {}
    reader = Reader(files, judged)
    out = {}
    for feature in RECORDED:
        value = getattr(shape, feature).value
        value = value if value is not None else _absent(reader, feature)
        if value is not None:
            out[feature] = value
    return out
