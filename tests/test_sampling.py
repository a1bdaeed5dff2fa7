"""The protocol as the sampling strategies see it (prefetch_check/sampling.py): `settled` changes no
census figure, and `with_ranks` rescales a scenario past the scenario files' 16 ranks."""

from __future__ import annotations

from pathlib import Path

import pytest

from prefetch_check.api import search_model
from prefetch_check.explorer.census import TooLarge, exact_census
from prefetch_check.explorer.random_walk import RandomWalk
from prefetch_check.explorer.simulate import run_rng
from prefetch_check.explorer.walk import SETTLED, run_once
from prefetch_check.model.protocols.poll.config import RequestSpec, uniform_config
from prefetch_check.sampling import sampling_model, with_ranks
from prefetch_check.scenario import InputError, load_scenario

SCENARIOS = Path(__file__).resolve().parent.parent / "scenarios"
SMALL = 5000  # states: the shipped cases up to this size take a fraction of a second each


def small_cases() -> list:
    return [
        pytest.param(case.config, case.protocol, id=case.name)
        for path in sorted(SCENARIOS.glob("*.toml"))
        for case in load_scenario(path).cases
    ]


@pytest.mark.parametrize("predicate", ["buggy", "fixed"])
@pytest.mark.parametrize("config, protocol", small_cases())
def test_stopping_at_settled_states_changes_no_census_figure(config, protocol, predicate):
    """`settled` lets a run stop where only the schedulers' empty drain rounds are left; the
    exact census of the full chain (which goes round those loops forever) must agree exactly."""
    full = search_model(config, predicate, protocol)
    stopping = sampling_model(config, predicate, protocol)
    try:
        a = exact_census(full, full.canonicalizer(), SMALL)
        b = exact_census(stopping, stopping.canonicalizer(), SMALL)
    except TooLarge:
        pytest.skip(f"more than {SMALL} states: too slow for this check")
    assert b.states <= a.states
    assert {n: e.probability for n, e in a.estimates.items()} == pytest.approx(
        {n: e.probability for n, e in b.estimates.items()}, abs=1e-12
    )


def test_settled_means_every_thread_idle_and_nothing_queued():
    model = sampling_model(uniform_config(ranks=2, requests=1, pages=1), "fixed")
    assert not model.settled(model.initial_states()[0])
    run = run_once(model, RandomWalk(), run_rng(0, 0), 1000, [])
    assert run.end == SETTLED
    state = run.path[-1][1]
    assert all(not model.settled(s) for _, s in run.path[:-1])
    ranks = model.decode(state)
    assert all(r.p_pc < 0 and not r.i_pc and not r.revoke_queue and not r.release_queue for r in ranks)
    assert all(op.ready for r in ranks for op in r.ops)


def test_with_ranks_rescales_a_uniform_configuration():
    base = uniform_config(ranks=1, requests=2, pages=3, failing={0: {2}}, policy="timeout")
    assert with_ranks(base, 32) == uniform_config(ranks=32, requests=2, pages=3,
                                                  failing={r: {2} for r in range(32)}, policy="timeout")
    assert with_ranks(base, 1) is base


def test_with_ranks_refuses_ranks_that_differ():
    config = uniform_config(ranks=2, requests=1, pages=2).with_(
        requests=(RequestSpec(pages=2, hits=(2, 1), failing=(frozenset(), frozenset())),)
    )
    with pytest.raises(InputError, match="request 0 hits vary by rank"):
        with_ranks(config, 4, "x.toml")


def test_the_model_reaches_tp32():
    model = sampling_model(with_ranks(uniform_config(ranks=1, pages=2), 32), "buggy")
    state = model.initial_states()[0]
    assert len(state) == 32
    assert len(model.successors(state)) == 32  # every scheduler may issue first


def test_with_ranks_rescales_an_ack_drain_configuration_with_every_per_rank_field():
    from prefetch_check.model.protocols.ack_drain.config import AckConfig, Request

    one = Request(pages=2, hits=(2,), failing=(frozenset({1}),), query_raises=(True,), batch_raises=(frozenset({0}),))
    base = AckConfig(ranks=1, requests=(one,), host_pages=(1,), policy="timeout")
    wide = with_ranks(base, 3)
    assert wide.ranks == 3 and wide.host_pages == (1, 1, 1) and wide.policy == "timeout"
    (q,) = wide.requests
    assert (q.hits, q.failing, q.query_raises, q.batch_raises) == (
        (2,) * 3, (frozenset({1}),) * 3, (True,) * 3, (frozenset({0}),) * 3)


def test_with_ranks_keeps_an_alloc_pages_alike_on_every_rank():
    spec = RequestSpec(pages=2, hits=(2,), failing=(frozenset(),), alloc_pages=(1,))
    config = uniform_config(ranks=1, pages=2, alloc_at="hit").with_(requests=(spec,))
    assert with_ranks(config, 4).requests[0].alloc_pages == (1,) * 4  # it was reset to all pages


def test_with_ranks_names_an_ack_drain_value_that_differs_by_rank():
    from prefetch_check.model.protocols.ack_drain.config import AckConfig, Request

    one = Request(pages=1, hits=(1, 1), failing=(frozenset(), frozenset()), query_raises=(True, False))
    with pytest.raises(InputError, match="request 0 query_raises vary by rank"):
        with_ranks(AckConfig(ranks=2, requests=(one,)), 4, "x.toml")
