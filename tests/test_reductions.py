"""The reductions are sound on what we ship (issue 4): a reduction that changes a verdict is a bug.

For every shipped scenario case small enough to search in full without reductions, and
for random small configurations (Hypothesis), under both predicates: every property's
verdict with reductions (rank symmetry + partial-order reduction) equals the verdict of
the plain search, and every counterexample found with reductions replays through the
readable specification to the same final state. The partial-order reduction may make a
counterexample longer than the shortest one, never shorter; symmetry alone keeps it
shortest.
"""

from __future__ import annotations

from prefetch_check.explorer.options import SearchOptions

import functools
from pathlib import Path

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from prefetch_check.explorer.check import check as check_model
from prefetch_check.explorer.limits import Limits
from prefetch_check.explorer.replay import replay
from prefetch_check.explorer.result import VERIFIED
from strategies import SETTINGS, configs, release_configs
from prefetch_check import build_model, check
from prefetch_check.scenario import load_scenarios
from prefetch_check.model.engine.vouch import hidden_steps

SCENARIO_DIR = Path(__file__).parent.parent / "scenarios"
PREDICATES = ("buggy", "fixed")
SHIPPED_STATE_BUDGET = 150_000  # distinct states of the plain search; above it a case is not compared
# (the largest compared: 144,299 states; the ranks=8 cases are far past it and skipped, named, without
# the search: each spent 7-8.5 s of the suite reaching the budget only to be skipped)
UNCOMPARED_RANKS = 8
RANDOM_STATE_BUDGET = 20_000

SCENARIOS = load_scenarios([SCENARIO_DIR])
PAIRS = [(s.path, case, p) for s in SCENARIOS for case in s.cases for p in PREDICATES]  # every protocol


@functools.lru_cache(maxsize=None)
def plain(index: int):
    _, case, predicate = PAIRS[index]
    return check(case.config, predicate, Limits(max_states=SHIPPED_STATE_BUDGET), reductions=False, protocol=case.protocol)


def verdicts(result) -> dict:
    return {name: r.verdict for name, r in result.results.items()}


def assert_same_verdicts(config, predicate, reduced, reference, where: str, protocol=None) -> None:
    assert reduced.stats.complete, f"{where}: the reduced search did not finish"
    assert verdicts(reduced) == verdicts(reference), f"{where}: a reduction changed a verdict"
    assert not hidden_steps(reduced, reference), f"{where}: the reductions never take {hidden_steps(reduced, reference)}"
    assert set(reduced.violated) == set(reference.violated), where
    model = build_model(config, predicate, protocol)
    for name in reduced.violated:
        trace = reduced.trace(name)
        again = replay(model, trace.schedule)
        assert again.final_state == trace.final_state, f"{where}: {name}'s counterexample does not replay"
        shortest = reference.trace(name)
        if trace.cycle_start is None and shortest.cycle_start is None:
            assert len(trace) >= len(shortest), f"{where}: {name}'s counterexample beats the shortest one"


# ---- every shipped scenario small enough for the plain search ----


@pytest.mark.parametrize("index", range(len(PAIRS)), ids=[f"{c.name}-{p}" for _, c, p in PAIRS])
def test_a_shipped_scenario_has_the_same_verdicts_with_and_without_reductions(index):
    _, case, predicate = PAIRS[index]
    if case.config.ranks >= UNCOMPARED_RANKS:
        pytest.skip(f"{case.name} / {predicate}: {case.config.ranks} ranks, past {SHIPPED_STATE_BUDGET:,} states "
                    "without reductions in every shipped scenario (measured), too large to search in full")
    reference = plain(index)
    if not reference.stats.complete:
        pytest.skip(f"{case.name} / {predicate}: more than {SHIPPED_STATE_BUDGET:,} states without reductions, "
                    "too large to search in full for the comparison")
    reduced = check(case.config, predicate, reductions=True, protocol=case.protocol)
    assert_same_verdicts(case.config, predicate, reduced, reference, f"{case.name} / {predicate}", case.protocol)
    assert reduced.stats.states <= reference.stats.states


def test_every_shipped_scenario_file_takes_part_in_the_comparison(capsys):
    """Each file has a case small enough to compare: its cases tried smallest first, up to the first
    the plain search finishes (the comparisons themselves run above, one test per pair; trying every
    pair here again would search each too-large one to its budget a second time)."""
    compared = []
    for scenario in SCENARIOS:
        pairs = sorted((i for i, (path, _, _) in enumerate(PAIRS) if path == scenario.path),
                       key=lambda i: (PAIRS[i][1].config.ranks, i))
        first = next((i for i in pairs if plain(i).stats.complete), None)
        assert first is not None, f"{scenario.path}: no case is small enough for the plain search"
        _, case, predicate = PAIRS[first]
        compared.append(f"{Path(scenario.path).name}: {case.name} / {predicate}, {plain(first).stats.states:,} states")
    with capsys.disabled():
        print(f"\nevery shipped file has a case compared without reductions; the smallest each:")
        for line in compared:
            print("  " + line)


# ---- random small configurations ----


def assert_reductions_keep_verdicts(config, compared) -> None:
    """For each predicate: the plain search within the state budget (else the configuration is
    left out, as a hypothesis event) and the reduced search give the same verdicts; `compared(reference)`
    records what was compared."""
    for predicate in PREDICATES:
        reference = check(config, predicate, Limits(max_states=RANDOM_STATE_BUDGET), reductions=False)
        if not reference.stats.complete:
            event("too large for the plain search")
            continue
        compared(reference)
        reduced = check(config, predicate, reductions=True)
        assert_same_verdicts(config, predicate, reduced, reference, f"{config} / {predicate}")


@settings(max_examples=60, **SETTINGS)
@given(configs(max_ranks=3))
def test_random_configurations_have_the_same_verdicts_with_and_without_reductions(config):
    def compared(reference):
        event(f"compared, ranks={config.ranks}")
        event(f"compared, {'some VIOLATED' if reference.violated else 'all ' + VERIFIED}")

    assert_reductions_keep_verdicts(config, compared)


@settings(max_examples=60, **SETTINGS)
@given(release_configs(max_ranks=3))
def test_random_release_shapes_have_the_same_verdicts_with_and_without_reductions(config):
    """The partial-order reduction's facts per shape (e.g. I.write is no persistent set on its own
    when counting comes first) hold on random configurations of every release family."""
    assert_reductions_keep_verdicts(
        config, lambda reference: event(f"compared, alloc_at={config.alloc_at}, count_before_write={config.count_before_write}"))


@settings(max_examples=40, **SETTINGS)
@given(configs(min_ranks=2, max_ranks=3), st.sampled_from(PREDICATES))
def test_symmetry_alone_keeps_counterexamples_shortest(config, predicate):
    """Symmetry merges states of equal depth, so BFS still reaches each violation first at
    its minimal depth (the partial-order reduction gives no such promise)."""
    limits = Limits(max_states=RANDOM_STATE_BUDGET)
    reference = check(config, predicate, limits, reductions=False)
    if not reference.stats.complete:
        return
    symmetric = check(config, predicate, limits, reductions="symmetry")
    assert verdicts(symmetric) == verdicts(reference)
    for name in reference.violated:
        a, b = reference.trace(name), symmetric.trace(name)
        if a.cycle_start is None:
            assert len(b) == len(a), name


# ---- the compiled model's sort key for symmetry ----


@pytest.mark.parametrize("gap", [1 << 32, 2])  # a gap of 2 renumbers on almost every new rank
def test_the_symmetry_sort_key_orders_ranks_like_their_contents(monkeypatch, gap):
    """The canonical representative sorts ranks by content; the compiled model sorts by an int
    kept in content order, renumbered when its gaps run out: both orders must agree, and so
    must the searches (the same representatives, so the same counts)."""
    from models import compiled
    from prefetch_check.model.engine.symmetry import ContentOrder
    from prefetch_check.model.protocols.poll.config import uniform_config

    monkeypatch.setattr(ContentOrder, "GAP", gap)
    config = uniform_config(ranks=3, requests=1, pages=2, policy="timeout")  # enough distinct rank states
    model = compiled(config, "fixed")
    result = check_model(model, SearchOptions(canonical=model.canonicalizer(), expand=model.reduced_successors, fuse=True))
    codes = list(range(len(model.rank_of)))
    assert len(codes) > 50
    assert sorted(codes, key=model._order.key.__getitem__) == sorted(codes, key=model.rank_of.__getitem__)
    by_content = compiled(config, "fixed")
    reference = check_model(by_content, SearchOptions(canonical=lambda cs: tuple(sorted(cs, key=by_content.rank_of.__getitem__)), expand=by_content.reduced_successors, fuse=True))
    assert (result.stats.states, result.stats.transitions) == (reference.stats.states, reference.stats.transitions)


# ---- predicates other than the shipped ones ----


def always_accept(op):
    return True


def accept_when_nothing_to_load(op):
    return len(op.hash_value) == 0 or op.timed_out


def never_accept(op):
    return op.terminated


@pytest.mark.parametrize("predicate", [always_accept, accept_when_nothing_to_load, never_accept])
def test_user_predicates_keep_every_verdict_on_the_harness_configurations(predicate):
    """Some solo steps depend on what the predicate answers (an I.increment or a P.publish is taken
    alone only where the check cannot tell it happened): a predicate that accepts an empty page
    list, or never accepts, must not lose a race to them."""
    from prefetch_check.model.engine.vouch import TooLarge, compare
    from prefetch_check.model.protocols.poll.protocol import PollProtocol

    compared = 0
    for i, config in enumerate(PollProtocol.harness_configs()):
        try:
            difference = compare(PollProtocol, config, predicate)
        except TooLarge:
            continue
        compared += 1
        assert difference is None, f"harness configuration {i + 1}, {predicate.__name__}: {difference}"
    assert compared >= 5
