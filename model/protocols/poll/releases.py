"""Which configuration options model which SGLang releases: a release family -> its shape.

The family names are those `prefetch_check/sglang/families.py:classify` gives a release's source
(`seed`, `late2025`, `staged`, `staged-drain-threshold`), plus two the detector's family
does not separate but the code does (its `tail_release` feature tells them apart, see
`refine`): `seed-guarded` (0.5.1.post3) and `late2025-tail-twice` (0.5.2-0.5.5.post3).
The facts are those of the release sources (research notes RELEASES.md); docs/model.md
says what each option does and what the model leaves out.

A family fixes the protocol's steps, not the completion predicate: `predicate` names the
built-in predicate that transcribes the release's own (`--predicate-source` loads the
release's function itself).
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class ReleaseFamily:
    name: str
    releases: str  # the releases whose protocol steps these options model
    options: dict = field(default_factory=dict)  # Config fields that differ from the defaults (late2025)
    predicate: str = "fixed"  # the built-in predicate that transcribes the release's own
    left_out: str = ""  # what these releases do that the model leaves out


_SEED = dict(
    shape="seed",
    count_before_write=True,
    count_whole_batch=True,
    direct_release=True,
    completed_min="except_wait_complete",
    queue_unallocated=True,
)
_STAGED = dict(alloc_at="hit")

FAMILIES: dict[str, ReleaseFamily] = {
    f.name: f
    for f in (
        ReleaseFamily(
            "seed", "0.5.1, 0.5.1.post1, 0.5.1.post2", _SEED, "buggy",
            "the IO thread's barrier after each operation (TP > 1): every rank's IO thread loads the same "
            "operations in the same order and never waits on anything else, so the barrier always completes; "
            "it only delays the tail's free, which no verdict depends on. A page that fails to load in a batch "
            "of several: 0.5.1 tests only that batch_get returned None, so it counts the page and writes None "
            "into its slot; the model fails the whole batch before counting (count_whole_batch).",
        ),
        ReleaseFamily(
            "seed-guarded", "0.5.1.post3", {**_SEED, "count_whole_batch": False, "tail_releases": 2}, "fixed",
            "as seed; also the prefetch thread's query of an operation without host slots (allocation failed "
            "at issue), which reads a variable no longer initialised (a NameError ends the thread, or the "
            "previous operation's hits are reused): the model counts 0 hits for it, as 0.5.1 does.",
        ),
        ReleaseFamily(
            "late2025-tail-twice", "0.5.2 .. 0.5.5.post3", {"tail_releases": 2}, "fixed",
            "aborts (release_aborted_request, with its barrier); the timeout's length (the clock may fire any "
            "time after issue).",
        ),
        ReleaseFamily(
            "late2025", "0.5.6 .. 0.5.15.post1", {}, "fixed",
            "aborts (release_aborted_request, with its barrier) and preemption (terminate_prefetch of a "
            "waiting request, 0.5.8+); storage attach/detach (0.5.9+); sidecar pool transfers (0.5.14+).",
        ),
        ReleaseFamily(
            "staged", "0.5.16, 0.5.17", _STAGED, "fixed",
            "as late2025; 0.5.17's MIN packed with per-pool hits (no sidecar pools for a dense model).",
        ),
        ReleaseFamily(
            "staged-drain-threshold", "0.5.18", {**_STAGED, "threshold_test": "drain"}, "fixed",
            "as staged.",
        ),
    )
}

# The detector's tail_release values that tell a family's releases apart (prefetch_check/sglang/detect.py).
_REFINED = {
    ("seed", "io-thread-direct-twice"): "seed-guarded",
    ("late2025", "io-thread-release-queue-twice"): "late2025-tail-twice",
}


class UnknownFamily(ValueError):
    """A family name this protocol has no shape for (another protocol's, or unknown)."""


def family(name: str) -> ReleaseFamily:
    found = FAMILIES.get(name)
    if found is None:
        raise UnknownFamily(
            f"no predicate-poll shape for the release family {name!r}: the families of 0.5.1 to 0.5.18 are "
            f"{', '.join(FAMILIES)} (from 0.5.19 the releases run the ack-drain protocol)"
        )
    return found


def options(name: str) -> dict:
    """The Config fields (beyond the defaults) that model the releases of family `name`."""
    return dict(family(name).options)


def predicate(name: str) -> str:
    """The built-in predicate that transcribes the completion predicate of family `name`."""
    return family(name).predicate


def refine(detected: str, tail_release: str | None) -> str:
    """The family of this module for the detector's family and its `tail_release` feature value."""
    return _REFINED.get((detected, tail_release), detected)
