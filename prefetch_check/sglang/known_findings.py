"""The code engine's findings in released SGLang that have a unit-level reproduction
(docs/findings.md, docs/repro/): a violation of an unmodified release in the case and property of
one of them says where the script is, so a maintainer can see the fault without this tool.

Only for a release checked by its version whose prefetch path no followed release lacks: an
edited tree, or a path, is not the release the script was checked against (tests/test_unit_repro.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

DOC = "docs/findings.md"


@dataclass(frozen=True)
class KnownFinding:
    case: str  # the code engine's case (mappings/*/mapping.py)
    prop: str
    releases: tuple[str, ...]
    anchor: str  # its section of docs/findings.md
    script: str  # below docs/repro/

    def text(self) -> str:
        return f"docs/repro/{self.script} in prefetch-check's repository ({DOC}#{self.anchor})"


_STALE_HIT = ("a-stale-hit-revokes-a-readmitted-requests-new-prefetch", "stale_hit_revokes_new_prefetch.py")
_STALE_ACK = ("a-stale-completion-ack-is-applied-to-a-readmitted-requests-new-prefetch",
              "stale_ack_handles_new_prefetch.py")
_STALE_ACK_INSERT = (_STALE_ACK[0], "stale_ack_inserts_unwritten_slot.py")
_QUERY_RAISES = ("a-storage-query-that-raises-ends-the-prefetch-thread", "storage_query_raises_ends_prefetch_thread.py")
_ABORT_KEEPS = ("an-aborted-requests-loaded-token-records-outlive-it", "abort_keeps_loaded_tokens.py")
_THRESHOLD_ZERO = ("at-a-prefetch-threshold-of-0-a-request-storage-does-not-hold-is-never-admitted",
                   "threshold_zero_never_admits.py")
_RESET = ("a-cache-reset-right-after-an-abort-strands-a-sync-thread-at-tp-2", "reset_strands_sync_thread.py")
_STRANDED = "2 ranks, aborted by its client in round 1, then flush_cache"
_TIMED, _WAITS = f"{_STRANDED} (the reset's join times out)", f"{_STRANDED} (the reset's join waits)"

KNOWN: tuple[KnownFinding, ...] = (
    KnownFinding("1 rank, prefetched again, best_effort", "operation_identity",
                 ("0.5.19", "0.5.20", "0.5.21", "0.5.22", "0.5.23"),
                 *_STALE_HIT),
    KnownFinding("1 rank, prefetched again, best_effort", "no_crash", ("0.5.19",), *_STALE_ACK),
    # the crash's consequences in the same schedule: the scheduler thread dead (unified_radix_cache.py:1932)
    KnownFinding("1 rank, prefetched again, best_effort", "deadlock_freedom", ("0.5.19",), *_STALE_ACK),
    KnownFinding("1 rank, prefetched again, best_effort", "progress", ("0.5.19",), *_STALE_ACK),
    KnownFinding("1 rank, prefetched again, best_effort", "data_integrity", ("0.5.19",), *_STALE_ACK_INSERT),
    KnownFinding("1 rank, prefetched again, best_effort", "host_memory", ("0.5.19",), *_STALE_ACK_INSERT),
    KnownFinding("2 ranks, rank 0's storage query raises", "no_crash", ("0.5.19", "0.5.20", "0.5.21"), *_QUERY_RAISES),
    KnownFinding("2 ranks, rank 0's storage query raises", "progress", ("0.5.19", "0.5.20", "0.5.21"), *_QUERY_RAISES),
    KnownFinding("1 rank, no hits, threshold 0", "progress", ("0.5.18",), *_THRESHOLD_ZERO),
    KnownFinding("1 rank, aborted by its client in round 2 (pages fetched)", "request_release", ("0.5.20",),
                 *_ABORT_KEEPS),
    # the reset raises on the stranded rank (0.5.21 on: its join's timeout), or never returns (before)
    KnownFinding(_TIMED, "no_crash", ("0.5.21", "0.5.22", "0.5.23"), *_RESET),
    KnownFinding(_TIMED, "progress", ("0.5.21", "0.5.22", "0.5.23"), *_RESET),
    KnownFinding(_WAITS, "deadlock_freedom", ("0.5.19", "0.5.20"), *_RESET),
    KnownFinding(_WAITS, "progress", ("0.5.19", "0.5.20"), *_RESET),
)


def reproduction(label: str, path_differs: bool, prop: str, case: str) -> Optional[KnownFinding]:
    """The known finding a violation of tree `label` is, if the tree is that release unmodified."""
    if path_differs:
        return None
    return next((k for k in KNOWN if k.prop == prop and k.case == case and label in k.releases), None)
