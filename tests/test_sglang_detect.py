"""Shape detection on small upstream-shaped fixtures: every feature, every family, the unknown case."""

import pytest

from prefetch_check.model.source.detect import FAMILIES, UNKNOWN, classify, detect_shape
from sglang_fixtures import FAMILIES as FIXTURES, ROOT, files_of


def shape_of(family: str):
    layers, cls = FIXTURES[family]
    return detect_shape(files_of(*layers), cls)


def values(family: str) -> dict:
    return {name: feat.value for name, feat in shape_of(family).features().items()}


@pytest.mark.parametrize("family", [f for f, _ in FAMILIES] + [UNKNOWN])
def test_each_family_fixture_is_classified_as_its_family(family):
    assert classify(shape_of(family)) == family


def test_seed_features():
    v = values("seed")
    assert v["cache_class"] == "HiRadixCache"  # built by the scheduler: there is no registry.py
    assert v["predicate"] == "mem_cache/hiradix_cache.py:HiRadixCache.can_terminate_prefetch"
    assert (v["host_alloc"], v["hit_queue"], v["revoke_queue"], v["acks"]) == ("issue", "no", "yes", "none")
    assert v["check_collective"] == "min-can-terminate"
    assert v["threshold"] == "prefetch-thread-clamped"
    assert v["io_short_batch"] == "stop"
    assert v["tail_release"] == "io-thread-direct"
    assert v["timeout"] == "fixed"
    assert v["write_order"] == "count-then-write"
    assert v["abort_barrier"] == "no-abort-path"
    assert v["storage_exceptions"] == "queue-empty-only"
    assert v["ack_match"] == "n/a"


def test_late2025_features():
    v = values("late2025")
    assert v["check_collective"] == "max-not-can-terminate-terminated"
    assert v["io_short_batch"] == "mark-terminate"
    assert v["tail_release"] == "io-thread-release-queue-twice"  # queued in _page_transfer and again after it
    assert v["timeout"] == "linear"
    assert v["write_order"] == "write-then-count"
    assert v["abort_barrier"] == "yes"


def test_staged_features():
    v = values("staged")
    assert (v["host_alloc"], v["hit_queue"], v["revoke_queue"]) == ("hit", "yes", "yes")
    assert v["threshold"] == "prefetch-thread-clamped"
    assert v["tail_release"] == "io-thread-release-queue"
    assert v["timeout"] == "linear-capped"
    v = values("staged-drain-threshold")
    assert (v["revoke_queue"], v["threshold"]) == ("no", "drain-raw")


def test_ack_drain_hiradix_features():
    v = values("ack-drain-hiradix")
    assert v["cache_class"] == "UnifiedRadixCache" and v["judged_class"] == "HiRadixCache"
    assert v["acks"] == "ack+sync-thread"
    assert v["check_collective"] == "max-vote-pp0"
    assert v["io_short_batch"] == "keep-acking"
    assert v["ack_match"] == "rid"
    assert v["tail_release"] == "drain-direct"  # through a local name: `tail = ...; free(tail)`
    assert v["write_order"] == "write-then-ack"
    assert v["storage_exceptions"] == "caught"
    assert v["abort_barrier"] == "no"


def test_unified_features():
    v = values("unified")
    assert v["judged_class"] == "UnifiedRadixCache"
    assert v["predicate"] == "mem_cache/unified_radix_cache.py:UnifiedRadixCache._can_terminate_prefetch"
    assert v["host_alloc"] == "hit"  # through the controller's allocate_storage_hit
    assert v["check_collective"] == "vote-only-under-timeout"
    assert v["ack_match"] == "operation"
    assert v["tail_release"] == "drain-release-queue"
    assert v["threshold"] == "drain-raw"
    assert v["timeout"] == "linear"
    assert values("unified-deadline")["timeout"] == "admission-deadline"


def test_every_feature_carries_evidence_with_file_and_line():
    shape = shape_of("late2025")
    ev = shape.check_collective.evidence[0]
    lines = (ROOT / "late2025/sglang/srt" / ev.file).read_text().splitlines()
    assert ev.file == "mem_cache/hiradix_cache.py" and "ReduceOp.MAX" in lines[ev.line - 1]
    for name, feat in shape.features().items():
        if feat.value not in ("no", "none", "n/a", "no-abort-path", "queue-empty-only"):
            assert feat.evidence, name


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
