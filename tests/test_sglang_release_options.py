"""A detected release shape -> its protocol and options, each with its evidence; "not modelled" and no
options for anything the protocol cannot represent (fixtures of each release family)."""

from __future__ import annotations

import dataclasses

import pytest

from prefetch_check.model.protocols.ack_drain.config import AckConfig
from prefetch_check.sglang.mappings.predicate_poll import options as poll_releases
from prefetch_check.sglang.mappings.ack_drain.options import release_options as ack_options
from prefetch_check.sglang.families import classify
from prefetch_check.sglang.shape import Feature
from prefetch_check.sglang.protocols import release_protocol
from prefetch_check.sglang.tree_shape import tree_shape
from sglang_fixtures import LATE_ONCE, files_of, fixture_follows
from test_sglang_detect import shape_of


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
    shape = tree_shape(files_of(*LATE_ONCE), None, fixture_follows()).shape
    found = release_protocol(shape, classify(shape))
    assert found.protocol == "predicate-poll" and found.modelled
    assert found.options == {"shape": "late2025", "clamp_threshold": True}
    assert next(s for s in found.settings if s.name == "shape").features == ("check_collective", "io_short_batch")


@pytest.mark.parametrize("family, options", [
    ("seed", {"shape": "seed", "clamp_threshold": True, "count_before_write": True, "count_whole_batch": True,
              "direct_release": True,
              "completed_min": "except_wait_complete", "queue_unallocated": True}),
    # the fixture releases its tail twice, as 0.5.2-0.5.5 did
    ("late2025", {"shape": "late2025", "clamp_threshold": True, "tail_releases": 2}),
    ("staged", {"shape": "late2025", "clamp_threshold": True, "alloc_at": "hit"}),
    ("staged-drain-threshold", {"shape": "late2025", "threshold_test": "drain", "alloc_at": "hit"}),
])
def test_every_poll_release_family_maps_to_the_options_its_code_settles(family, options):
    """0.5.1.x, 0.5.2-0.5.5 and the staged 0.5.16-0.5.18 shapes are options of the predicate-poll
    protocol: each detected difference sets its option, nothing is left 'not modelled'."""
    found = options_of(family)
    assert found.protocol == "predicate-poll" and found.modelled and not found.not_modelled
    assert found.options == options


def test_a_poll_option_the_protocol_lacks_is_not_modelled_yet(monkeypatch):
    """The rule that keeps verdicts honest: a detected difference whose option the configuration
    does not have (as before the staged shapes were modelled) makes the row 'not modelled yet',
    naming the missing option, with no options at all."""
    fields = {k: v for k, v in poll_releases.CONFIG_FIELDS.items() if k not in ("alloc_at", "threshold_test")}
    monkeypatch.setattr(poll_releases, "CONFIG_FIELDS", fields)
    staged = options_of("staged-drain-threshold")
    assert staged.status == "not modelled yet" and staged.options == {}
    assert {p.split("`")[1] for p in staged.not_modelled} == {"alloc_at", "threshold_test"}
    assert options_of("late2025").modelled  # a family that needs neither is unaffected


def test_a_release_with_acks_is_never_mapped_to_predicate_poll():
    found = poll_releases.release_options(shape_of("unified"))
    assert not found.modelled and any(p.startswith("acks=ack+sync-thread") for p in found.not_modelled)

