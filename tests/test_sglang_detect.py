"""Shape detection on small upstream-shaped fixtures: every feature, every family, the unknown case;
an absence is a value only as recorded for a followed release whose whole path a tree is."""

import pytest

from prefetch_check.sglang.detect import detect_shape
from prefetch_check.sglang.families import FAMILIES, UNKNOWN, classify
from prefetch_check.sglang.release_record import RECORDED
from prefetch_check.sglang.tree_shape import tree_shape
from sglang_fixtures import FAMILIES as FIXTURES, files_of, fixture_follows

# the values that say something is not there: never read off a tree, only recorded for a release
ABSENCES = ("no", "none", "n/a", "no-abort-path", "queue-empty-only", "write-then-ack")


def follows():
    return fixture_follows()


def shape_of(family: str):
    """The shape the model takes for a fixture tree (the fixture families stand for releases)."""
    layers, cls = FIXTURES[family]
    return tree_shape(files_of(*layers), cls, follows()).shape


def values(family: str) -> dict:
    return {name: feat.value for name, feat in shape_of(family).features().items()}


@pytest.mark.parametrize("family", [f for f, _ in FAMILIES] + [UNKNOWN])
def test_each_family_fixture_is_classified_as_its_family(family):
    assert classify(shape_of(family)) == family


# family -> the features its fixture must show (what each release family looks like)
FEATURES = {
    "seed": {
        "cache_class": "HiRadixCache",  # built by the scheduler: there is no registry.py
        "predicate": "mem_cache/hiradix_cache.py:HiRadixCache.can_terminate_prefetch",
        "host_alloc": "issue",
        "hit_queue": "no",
        "revoke_queue": "yes",
        "acks": "none",
        "check_collective": "min-can-terminate",
        "threshold": "prefetch-thread-clamped",
        "io_short_batch": "stop",
        "tail_release": "io-thread-direct",
        "timeout": "fixed",
        "write_order": "count-batch-then-write",  # increment(page_size * len(page_data)), then a loop of writes
        "abort_barrier": "no-abort-path",
        "storage_exceptions": "queue-empty-only",
        "ack_match": "n/a",
    },
    "late2025": {
        "check_collective": "max-not-can-terminate-terminated",
        "io_short_batch": "mark-terminate",
        "tail_release": "io-thread-release-queue-twice",  # queued in _page_transfer and again after it
        "timeout": "linear",
        "write_order": "write-then-count",
        "abort_barrier": "yes",
    },
    "staged": {
        "host_alloc": "hit",
        "hit_queue": "yes",
        "revoke_queue": "yes",
        "threshold": "prefetch-thread-clamped",
        "tail_release": "io-thread-release-queue",
        "timeout": "linear-capped",
    },
    "staged-drain-threshold": {"revoke_queue": "no", "threshold": "drain-raw"},
    "ack-drain-hiradix": {
        "cache_class": "UnifiedRadixCache",
        "judged_class": "HiRadixCache",
        "acks": "ack+sync-thread",
        "check_collective": "max-vote-pp0",
        "io_short_batch": "keep-acking",
        "ack_match": "rid",
        "tail_release": "drain-direct",  # through a local name: `tail = ...; free(tail)`
        "write_order": "write-then-ack",
        "storage_exceptions": "caught",
        "abort_barrier": "no",
    },
    "unified": {
        "judged_class": "UnifiedRadixCache",
        "predicate": "mem_cache/unified_radix_cache.py:UnifiedRadixCache._can_terminate_prefetch",
        "host_alloc": "hit",  # through the controller's allocate_storage_hit
        "check_collective": "vote-only-under-timeout",
        "ack_match": "operation",
        "tail_release": "drain-release-queue",
        "threshold": "drain-raw",
        "timeout": "linear",
    },
    "unified-deadline": {"timeout": "admission-deadline"},
}


@pytest.mark.parametrize("family", FEATURES)
def test_each_family_shows_its_features(family):
    v = values(family)
    assert {name: v[name] for name in FEATURES[family]} == FEATURES[family]


def test_every_feature_carries_evidence_with_file_and_line():
    shape = shape_of("late2025")
    ev = shape.check_collective.evidence[0]
    lines = files_of(*FIXTURES["late2025"][0])[ev.file].splitlines()
    assert ev.file == "mem_cache/hiradix_cache.py" and "ReduceOp.MAX" in lines[ev.line - 1]
    for name, feat in shape.features().items():
        if feat.value not in ABSENCES:
            assert feat.evidence, name


@pytest.mark.parametrize("family", [f for f, _ in FAMILIES])
def test_the_detector_reads_no_absence_as_a_value(family):
    layers, cls = FIXTURES[family]
    read = detect_shape(files_of(*layers), cls)
    taken = shape_of(family)
    for name in RECORDED:
        if getattr(taken, name).value in ABSENCES:  # the release lacks it: the tree alone says nothing
            feat = getattr(read, name)
            assert not feat.recognised and "an absence is not read as a value" in feat.note, name
            assert getattr(taken, name).note.startswith(f"as recorded for fixture {family}"), name
        else:
            assert getattr(read, name).value == getattr(taken, name).value and getattr(read, name).evidence, name


def test_a_tree_mixing_two_followed_releases_is_no_family_and_says_which():
    """Each file of the tree is a followed fixture's, but no followed release has the two together."""
    seed, late = files_of(*FIXTURES["seed"][0]), files_of(*FIXTURES["late2025"][0])
    mixed = {**seed, "managers/cache_controller.py": late["managers/cache_controller.py"]}
    taken = tree_shape(mixed, None, follows())
    assert not taken.differing  # every piece is code the model follows ...
    assert "mixes releases" in taken.unmatched and "fixture late2025" in taken.unmatched  # ... but not as one release
    assert classify(taken.shape) == UNKNOWN and not taken.shape.acks.recognised


def test_a_tree_lacking_a_piece_of_a_followed_release_is_refused_by_that_piece():
    """Every piece is the late2025 fixture's, but its abort path is gone: not that release's path."""
    layers, cls = FIXTURES["late2025"]
    files = files_of(*layers)
    text = files["mem_cache/hiradix_cache.py"]
    start = text.index("    def release_aborted_request")
    end = text.find("\n    def ", start + 1)
    files["mem_cache/hiradix_cache.py"] = text[:start] + (text[end + 1:] if end >= 0 else "")
    taken = tree_shape(files, cls, follows())
    assert not taken.differing and "release_aborted_request" in taken.unmatched, taken.unmatched
    assert not taken.shape.abort_barrier.recognised  # "no abort path" is not read off the tree


def test_unknown_shape_names_what_was_not_recognised():
    shape = shape_of("unknown")
    missing = shape.unrecognised()
    assert any(m.startswith("check_collective:") for m in missing)
    assert any(m.startswith("host_alloc:") for m in missing)
    assert shape.check_collective.value is None and shape.host_alloc.value is None


def test_missing_files_are_reported_not_guessed():
    shape = detect_shape({})
    assert classify(shape) == UNKNOWN
    assert shape.cache_class.value is None and "registry.py" in shape.cache_class.note
    assert all(not f.recognised for f in shape.features().values())


def test_syntax_error_in_a_protocol_file_is_unknown():
    files = files_of("late2025")
    files["mem_cache/hiradix_cache.py"] = "def broken(:\n"
    assert classify(detect_shape(files)) == UNKNOWN
