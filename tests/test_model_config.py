"""The configuration: one immutable value, checked when built, with the derived facts the model uses."""

from __future__ import annotations

import dataclasses

import pytest

from prefetch_check.model.protocols.poll.config import Config, RequestSpec, uniform_config

NONE = frozenset()


@pytest.mark.parametrize(
    "build, words",
    [
        (lambda: RequestSpec(pages=0, hits=(0,), failing=(NONE,)), "at least one page"),
        (lambda: RequestSpec(pages=2, hits=(3,), failing=(NONE,)), "hits 3 outside 0..2"),
        (lambda: RequestSpec(pages=2, hits=(1, 1), failing=(NONE,)), "same ranks"),
        (lambda: RequestSpec(pages=2, hits=(2,), failing=(frozenset({2}),)), "outside 0..1"),
        (lambda: uniform_config(ranks=0), "ranks must be at least 1"),
        (lambda: Config(ranks=1, requests=()), "at least one request"),
        (lambda: uniform_config(page_size=0), "page_size"),
        (lambda: uniform_config(storage_batch_size=0), "storage_batch_size"),
        (lambda: uniform_config(prefetch_threshold=-1), "prefetch_threshold"),
        (lambda: uniform_config(policy="eager"), "policy must be one of"),
        (lambda: uniform_config(shape="2024"), "shape must be one of"),
        (lambda: Config(ranks=2, requests=(RequestSpec(1, (1,), (NONE,)),)), "hits name 1 ranks, config has 2"),
        (lambda: uniform_config(ranks=2, alloc_may_fail=(True,)), "alloc_may_fail names every rank"),
    ],
)
def test_bad_parameters_are_refused_with_a_reason(build, words):
    with pytest.raises(ValueError, match=words):
        build()


def test_a_configuration_is_immutable_and_hashable():
    config = uniform_config(ranks=2, failing={1: {0}})
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.ranks = 3
    assert hash(config) == hash(uniform_config(ranks=2, failing={1: {0}}))
    changed = config.with_(page_size=2)
    assert changed.page_size == 2 and config.page_size == 1
    assert config.alloc_may_fail == (False, False)


def test_uniform_config_gives_every_rank_and_request_the_same_storage():
    config = uniform_config(ranks=2, requests=3, pages=3, hits=2, failing={1: {2}})
    assert config.num_requests == 3
    for spec in config.requests:
        assert spec == RequestSpec(pages=3, hits=(2, 2), failing=(NONE, frozenset({2})))


@pytest.mark.parametrize(
    "threshold, page_size, clamp, effective",
    [(0, 1, True, 1), (0, 1, False, 0), (1, 2, True, 2), (1, 2, False, 1), (5, 2, True, 5)],
)
def test_the_clamp_raises_the_threshold_to_one_page(threshold, page_size, clamp, effective):
    config = uniform_config(prefetch_threshold=threshold, page_size=page_size, clamp_threshold=clamp)
    assert config.effective_threshold == effective


def test_derived_facts_of_a_request():
    spec = RequestSpec(pages=3, hits=(3, 1), failing=(NONE, NONE))
    config = Config(ranks=2, requests=(spec,), page_size=2, prefetch_threshold=3)
    assert config.prefetch_tokens(0) == 6
    assert config.is_issued_by_threshold(0)
    assert config.agreed_hit_pages(0) == 1
    assert config.is_revoked(0)  # 2 agreed hit tokens < 3
    assert not config.with_(prefetch_threshold=2).is_revoked(0)
    assert not config.with_(prefetch_threshold=7).is_issued_by_threshold(0)
