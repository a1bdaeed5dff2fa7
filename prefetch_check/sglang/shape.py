"""The shape of one SGLang tree's prefetch protocol: one feature per named step, each with where
it was read (file:line below sglang/srt/ and what was seen there).

Why a module of its own: the detector (detect.py) fills it, the family table (families.py),
the protocols' mappings (mappings/<protocol>/options.py), the fingerprinted release
records (followed.py) and the reports all read it; none of them needs the detector's `ast`.
Field docs: docs/sglang.md.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Optional


@dataclass(frozen=True)
class Evidence:
    """Where a feature was read: file below sglang/srt/, line, and what was seen there."""

    file: str
    line: int
    seen: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line} {self.seen}"


@dataclass(frozen=True)
class Feature:
    """One step of the protocol as the source has it; `value is None` means not recognised."""

    value: Optional[str]
    evidence: tuple[Evidence, ...] = ()
    note: str = ""

    @property
    def recognised(self) -> bool:
        return self.value is not None


def unrecognised(looked_for: str) -> Feature:
    return Feature(None, (), looked_for)


@dataclass(frozen=True)
class Shape:
    """The protocol shape of one cache class of one SGLang tree (field docs: docs/sglang.md)."""

    cache_class: Feature  # the class the factory builds for a dense hierarchical cache
    judged_class: Feature  # the class whose steps the other features describe
    predicate: Feature  # file:Class.method of the completion predicate to load
    host_alloc: Feature  # "issue" | "hit"
    hit_queue: Feature  # "yes" | "no" (recorded)
    revoke_queue: Feature  # "yes" | "no" (recorded)
    acks: Feature  # "ack+sync-thread" | "none" (recorded)
    check_collective: Feature  # "min-can-terminate" | "max-not-can-terminate-terminated" | "max-vote-pp0" | "vote-only-under-timeout"
    threshold: Feature  # "prefetch-thread-clamped" | "prefetch-thread-raw" | "drain-raw" | "drain-clamped"
    io_short_batch: Feature  # "stop" | "mark-terminate" | "keep-acking"
    ack_match: Feature  # "rid" | "operation" | "n/a" (recorded)
    tail_release: Feature  # "<who>-<how>[-twice]": io-thread|drain x direct|release-queue
    timeout: Feature  # "fixed" | "linear" | "linear-capped" | "admission-deadline"
    storage_exceptions: Feature  # "caught" | "finally-only" | "queue-empty-only" (recorded)
    write_order: Feature  # "count-then-write" | "count-batch-then-write" | "write-then-count" | "write-then-ack" (recorded)
    abort_barrier: Feature  # "yes" | "no" | "no-abort-path" (recorded)
    round_collectives: Feature  # "loading-check" | "writing-check+loading-check" | "merged-with-drain" | "none" (recorded)
    # (recorded): a value that is an absence ("no", "none", ...) is known only for a followed
    # release (release_record.py) and reaches a tree only through its whole path (followed.py)

    def features(self) -> dict[str, Feature]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    def unrecognised(self) -> list[str]:
        """'name: what was looked for' for every feature the source did not show."""
        return [f"{name}: {feat.note}" for name, feat in self.features().items() if not feat.recognised]
