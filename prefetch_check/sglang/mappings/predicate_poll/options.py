"""Which predicate-poll options a release's own source settles (SGLang 0.5.1 to 0.5.18).

The counterpart of mappings/ack_drain/options.py for the predicate-poll protocol.
Each rule below maps a detected feature value to options of `poll.config.Config`. A rule
whose option the Config does not have (yet) makes the row "not modelled yet" instead of a
verdict on late2025's steps; the rules already name the options of the release shapes the
predicate-poll protocol is gaining (`count_before_write`, `direct_release`, `tail_releases`,
`alloc_at`, `threshold_test`), so they apply as soon as the Config has those fields.

EXTENSION POINT (for the release shapes of 0.5.1-0.5.18 as predicate-poll options):
  - FEATURE_RULES: feature value -> options (a value missing here is "not modelled");
  - FAMILY_OPTIONS: options of a whole family that no detector feature reads yet (applied
    only when the Config has them; their evidence is the features that make the family);
  - the protocol's descriptor (descriptor.py) names this module as its release mapping.
"""

from __future__ import annotations

import dataclasses

from prefetch_check.model.protocols.poll.config import Config
from prefetch_check.sglang.release_options import Reading, ReleaseOptions
from prefetch_check.sglang.shape import Shape

PROTOCOL = "predicate-poll"
CONFIG_FIELDS = {f.name: f.default for f in dataclasses.fields(Config)}

# (check_collective, io_short_batch) -> shape: the two go together in the protocol's `shape` option
SHAPES = {
    ("min-can-terminate", "stop"): "seed",
    ("max-not-can-terminate-terminated", "mark-terminate"): "late2025",
}
# feature -> value -> options it settles (an empty dict: the protocol's own behaviour, nothing to set)
FEATURE_RULES: dict[str, dict[str, dict]] = {
    "threshold": {
        "prefetch-thread-clamped": {"clamp_threshold": True},
        "prefetch-thread-raw": {"clamp_threshold": False},
        "drain-raw": {"threshold_test": "drain"},
    },
    "host_alloc": {"issue": {}, "hit": {"alloc_at": "hit"}},
    "write_order": {"write-then-count": {}, "count-then-write": {"count_before_write": True},
                    "count-batch-then-write": {"count_before_write": True, "count_whole_batch": True}},
    # the scheduler's all_reduce calls every round before the drain (writing_check, loading_check);
    # from 0.5.17 one collective carries them with the drain's sizes: the model's drain collective
    "round_collectives": {
        "none": {}, "merged-with-drain": {},
        "writing-check": {"round_collectives": 1}, "loading-check": {"round_collectives": 1},
        "writing-check+loading-check": {"round_collectives": 2},
    },
    "tail_release": {
        "io-thread-release-queue": {},
        "io-thread-release-queue-twice": {"tail_releases": 2},
        "io-thread-direct": {"direct_release": True},
        "io-thread-direct-twice": {"direct_release": True, "tail_releases": 2},
    },
}
# what the queues must be, given where the slots are allocated and where the threshold is tested
QUEUES = {"hit_queue": ("host_alloc", {"issue": "no", "hit": "yes"}),
          "revoke_queue": ("threshold", {"prefetch-thread-clamped": "yes", "prefetch-thread-raw": "yes", "drain-raw": "no"})}
FAMILY_OPTIONS: dict[str, dict] = {
    # 0.5.1.x: no MIN of completed_tokens before insert under wait_complete; a failed allocation
    # at issue still queues the operation (research notes RELEASES.md, section 2)
    "seed": {"completed_min": "except_wait_complete", "queue_unallocated": True},
}
FAMILY_FEATURES = ("check_collective", "io_short_batch")
LEFT_OUT = (
    "the timeout's length (the clock may fire at any time after issue)",
    "aborts (release_aborted_request and its barrier), storage exceptions, sidecar pools",
)


def release_options(shape: Shape) -> ReleaseOptions:
    """The predicate-poll options of this release shape, each with its evidence, or why there are none."""
    r = Reading(shape)
    r.unrecognised()
    r.require("acks", {"none": "no ACKs"}, PROTOCOL)
    r.require("ack_match", {"n/a": "no ACKs"}, PROTOCOL)
    r.require("storage_exceptions", {"queue-empty-only": "exceptions left out"}, PROTOCOL)
    family = _shape(r)
    for feature, rules in FEATURE_RULES.items():
        value = r.require(feature, {v: ", ".join(f"{k}={o}" for k, o in opts.items()) or "as modelled"
                                    for v, opts in rules.items()}, PROTOCOL)
        if value is not None:
            _apply(r, feature, rules[value], (feature,))
    for queue, (feature, expected) in QUEUES.items():
        value, by = r.value(queue), r.value(feature)
        if value is not None and by in expected and value != expected[by]:
            r.problems.append(f"{queue}={value}: with {feature}={by} the predicate-poll protocol has {expected[by]}")
    if family in FAMILY_OPTIONS:
        _apply(r, FAMILY_FEATURES[0], FAMILY_OPTIONS[family], FAMILY_FEATURES, only_if_present=True)
    r.left_out.extend(LEFT_OUT)
    return r.result(PROTOCOL)


def _shape(r: Reading):
    collective, short = r.value("check_collective"), r.value("io_short_batch")
    shape = SHAPES.get((collective, short))
    if shape is None:
        if collective is not None and short is not None:
            r.problems.append(f"check_collective={collective} with io_short_batch={short}: the predicate-poll shapes "
                              "are seed (min-can-terminate, stop) and late2025 (max-not-can-terminate-terminated, "
                              "mark-terminate)")
        return None
    r.set("shape", shape, FAMILY_FEATURES, f"{collective}; a short batch: {short}")
    return shape


def _apply(r: Reading, feature: str, options: dict, features: tuple, only_if_present: bool = False) -> None:
    """Set each option the Config has; one it lacks is 'not modelled yet' (or skipped, for a
    family's options no detector reads: those are applied where the protocol already has them)."""
    for name, value in options.items():
        if name in CONFIG_FIELDS:
            r.set(name, value, features, getattr(r.shape, feature).note)
        elif not only_if_present:
            r.needs_option(feature, name, PROTOCOL)
