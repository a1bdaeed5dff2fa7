"""A detected release shape -> its protocol and options, each with its evidence; "not modelled" and no
options for anything the protocol cannot represent (fixtures of each release family)."""

from __future__ import annotations

import dataclasses

import pytest

from prefetch_check.model.protocols.ack_drain.config import AckConfig
from prefetch_check.model.protocols.ack_drain.releases import release_options as ack_options
from prefetch_check.model.source.detect import Feature, classify, detect_shape
from prefetch_check.sglang import poll_releases
from prefetch_check.sglang.protocols import release_protocol
from test_sglang_detect import files_of, shape_of

LATE_ONCE = ("late2025", "late2025-tail-once")


def options_of(family: str):
    shape = shape_of(family)
    return release_protocol(shape, classify(shape))


def test_unified_maps_to_its_options_with_evidence():
    found = options_of("unified")
    assert found.protocol == "ack-drain" and found.modelled
    assert found.options == {"cache": "unified", "ack_match": "operation", "deadline": "issue", "exceptions": "caught"}
    cache = next(s for s in found.settings if s.name == "cache")
    assert cache.features == ("judged_class", "check_collective", "tail_release")
    files = {e.file for e in cache.evidence}
    assert files == {"mem_cache/unified_radix_cache.py"}
    assert all(e.line > 0 for s in found.settings for e in s.evidence)


def test_hiradix_of_the_ack_drain_releases_when_asked():
    found = options_of("ack-drain-hiradix")
    assert found.options["cache"] == "hiradix" and found.options["ack_match"] == "rid"
    cache = next(s for s in found.settings if s.name == "cache")
    assert "asked for; the factory builds UnifiedRadixCache" in cache.why


def test_the_admission_deadline():
    assert options_of("unified-deadline").options["deadline"] == "admission"


def test_every_ack_drain_option_is_a_field_of_the_configuration():
    fields = {f.name for f in dataclasses.fields(AckConfig)}
    for family in ("unified", "ack-drain-hiradix", "unified-deadline"):
        assert set(options_of(family).options) <= fields


def test_a_step_the_protocol_does_not_have_is_not_modelled_and_gives_no_options():
    shape = shape_of("unified")
    odd = dataclasses.replace(shape, tail_release=Feature("drain-direct"), io_short_batch=Feature("mark-terminate"))
    found = ack_options(odd)
    assert not found.modelled and found.options == {} and found.status == "not modelled"
    assert any(p.startswith("tail_release=drain-direct: with UnifiedRadixCache") for p in found.not_modelled)
    assert any(p.startswith("io_short_batch=mark-terminate") for p in found.not_modelled)


def test_an_unrecognised_feature_is_not_modelled_with_what_was_looked_for():
    shape = shape_of("unified")
    found = ack_options(dataclasses.replace(shape, ack_match=Feature(None, (), "the ACK drain's test")))
    assert not found.modelled and found.options == {}
    assert "ack_match: not recognised (the ACK drain's test)" in found.not_modelled


def test_an_unknown_shape_is_not_modelled():
    shape = shape_of("unknown")
    found = release_protocol(shape, classify(shape))
    assert not found.modelled and found.options == {}
    assert found.not_modelled


def test_late2025_of_0_5_6_on_maps_to_the_predicate_poll_shape():
    shape = detect_shape(files_of(*LATE_ONCE))
    found = release_protocol(shape, classify(shape))
    assert found.protocol == "predicate-poll" and found.modelled
    assert found.options == {"shape": "late2025", "clamp_threshold": True}
    assert next(s for s in found.settings if s.name == "shape").features == ("check_collective", "io_short_batch")


@pytest.mark.parametrize("family, needs", [
    ("seed", {"count_before_write", "direct_release"}),
    ("late2025", {"tail_releases"}),  # the fixture releases its tail twice, as 0.5.2-0.5.5 did
    ("staged", {"alloc_at"}),
    ("staged-drain-threshold", {"alloc_at", "threshold_test"}),
])
def test_release_shapes_without_an_option_yet_are_not_modelled_yet(family, needs):
    found = options_of(family)
    assert found.protocol == "predicate-poll" and found.status == "not modelled yet" and found.options == {}
    named = {p.split("`")[1] for p in found.not_modelled}
    assert named == needs


def test_the_options_of_the_release_shapes_apply_once_the_protocol_has_them(monkeypatch):
    """The extension point: with the options of the release shapes in the configuration, the same
    rules map 0.5.1.x and the staged releases without a change here."""
    fields = dict(poll_releases.CONFIG_FIELDS, count_before_write=False, direct_release=False, tail_releases=1,
                  completed_min="always", queue_unallocated=False, alloc_at="issue", threshold_test="prefetch_thread")
    monkeypatch.setattr(poll_releases, "CONFIG_FIELDS", fields)
    seed = options_of("seed")
    assert seed.modelled
    assert seed.options == {"shape": "seed", "clamp_threshold": True, "count_before_write": True,
                            "direct_release": True, "completed_min": "except_wait_complete", "queue_unallocated": True}
    staged = options_of("staged-drain-threshold")
    assert staged.modelled and staged.options["alloc_at"] == "hit" and staged.options["threshold_test"] == "drain"


def test_a_release_with_acks_is_never_mapped_to_predicate_poll():
    found = poll_releases.release_options(shape_of("unified"))
    assert not found.modelled and any(p.startswith("acks=ack+sync-thread") for p in found.not_modelled)

