"""The release families of 0.5.1 to 0.5.18 and the configuration options that model them
(model/protocols/poll/releases.py), held against what the detector reads from the source."""

from __future__ import annotations

import pytest

from prefetch_check.model.protocols.poll.config import Config, uniform_config
from prefetch_check.model.protocols.poll.protocol import PollProtocol
from prefetch_check.model.protocols.poll.releases import FAMILIES, UnknownFamily, family, options, predicate, refine
from prefetch_check.sglang.families import FAMILIES as DETECTED, classify
from sglang_fixtures import FAMILIES as FIXTURES
from test_sglang_detect import shape_of

POLL_FAMILIES = ("seed", "late2025", "staged", "staged-drain-threshold")


def test_every_release_from_0_5_1_to_0_5_18_has_a_family():
    covered = " ".join(f.releases for f in FAMILIES.values())
    for release in ("0.5.1,", "0.5.1.post3", "0.5.2 ..", "0.5.6 ..", "0.5.16", "0.5.17", "0.5.18"):
        assert release in covered
    assert set(POLL_FAMILIES) <= set(FAMILIES)
    assert {"seed-guarded", "late2025-tail-twice"} <= set(FAMILIES)


@pytest.mark.parametrize("name", list(FAMILIES))
def test_every_family_is_a_valid_configuration_at_every_size(name):
    for ranks in (1, 2, 8):
        config = uniform_config(ranks=ranks, pages=2, **options(name))
        assert PollProtocol(config).possible_kinds()
    assert predicate(name) in PollProtocol.builtin_predicates
    assert family(name).left_out


def test_late2025_is_the_default_and_seed_the_unguarded_one():
    assert options("late2025") == {}
    assert predicate("seed") == "buggy"
    assert all(predicate(n) == "fixed" for n in FAMILIES if n != "seed")
    seed = Config(ranks=1, requests=uniform_config().requests, **options("seed"))
    assert (seed.shape, seed.count_before_write, seed.direct_release, seed.queue_unallocated) == ("seed", True, True, True)
    assert seed.completed_min == "except_wait_complete" and seed.tail_releases == 1
    assert options("seed-guarded")["tail_releases"] == 2 and options("late2025-tail-twice") == {"tail_releases": 2}
    assert options("staged") == {"alloc_at": "hit"}
    assert options("staged-drain-threshold") == {"alloc_at": "hit", "threshold_test": "drain"}


def test_options_are_a_copy():
    options("seed")["shape"] = "late2025"
    assert options("seed")["shape"] == "seed"


@pytest.mark.parametrize("name", ["ack-drain-hiradix", "unified", "unified-deadline", "unknown", "0.5.2"])
def test_a_family_of_another_protocol_is_refused_clearly(name):
    with pytest.raises(UnknownFamily, match="no predicate-poll shape .* ack-drain"):
        options(name)


def test_refine_tells_the_releases_the_detector_groups_together_apart():
    assert refine("seed", "io-thread-direct") == "seed"
    assert refine("seed", "io-thread-direct-twice") == "seed-guarded"
    assert refine("late2025", "io-thread-release-queue-twice") == "late2025-tail-twice"
    assert refine("late2025", "io-thread-release-queue") == "late2025"
    assert refine("staged", None) == "staged"


def expected_options(features: dict) -> dict:
    """What each detected feature says about the options (the facts of RELEASES.md, section 11)."""
    tail = features["tail_release"] or ""
    return {
        "count_before_write": features["write_order"] in ("count-then-write", "count-batch-then-write"),
        "count_whole_batch": features["write_order"] == "count-batch-then-write",
        "direct_release": "direct" in tail,
        "tail_releases": 2 if tail.endswith("twice") else 1,
        "alloc_at": features["host_alloc"],
        "threshold_test": "drain" if features["threshold"].startswith("drain") else "prefetch_thread",
        "shape": "seed" if features["check_collective"] == "min-can-terminate" else "late2025",
    }


@pytest.mark.parametrize("detected", POLL_FAMILIES)
def test_the_options_of_a_detected_family_agree_with_its_features(detected):
    assert detected in dict(DETECTED) and detected in FIXTURES
    shape = shape_of(detected)
    assert classify(shape) == detected
    features = {name: feat.value for name, feat in shape.features().items()}
    name = refine(detected, features["tail_release"])
    config = uniform_config(pages=1, **options(name))
    assert {k: getattr(config, k) for k in expected_options(features)} == expected_options(features)


def test_every_family_has_a_shipped_scenario_and_the_staged_ones_run_at_tp_1_2_and_8():
    from pathlib import Path

    from prefetch_check.scenario import load_scenarios

    scenarios = load_scenarios([Path(__file__).parent.parent / "scenarios"])
    shipped: dict = {}
    for scenario in scenarios:
        for case in scenario.cases:
            if not isinstance(case.config, Config):  # another protocol's scenario
                continue
            for name in FAMILIES:
                config = uniform_config(ranks=case.config.ranks, pages=1, **options(name))
                if all(getattr(case.config, k) == getattr(config, k) for k in options(name)) and options(name):
                    shipped.setdefault(name, set()).add(case.config.ranks)
    assert set(shipped) == set(FAMILIES) - {"late2025"}  # late2025, the defaults, is every other scenario
    for name in ("staged", "staged-drain-threshold"):
        assert {1, 2, 8} <= shipped[name], name
