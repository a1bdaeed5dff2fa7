"""The stateful DPOR (model/code/strategies/dpor.py) is checked the way the sleep sets are
(tests/test_code_sleep_sets.py): against the unreduced search on the executor's configurations
where that one finishes, on one-place edits of 0.5.23 the executor catches, and on random small
configurations (Hypothesis), verdict- and violation-kind-equal. DPOR prunes states, not only
transitions (it never runs an order no race asks for), so it reaches fewer states than the DFS
and its counterexamples may be longer (the first order of a violating class it runs): the
checks compare the verdicts and which properties are violated, and that it runs fewer schedules."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings

from prefetch_check.model.code import CodeConfig, CodeLimits, check_tree
from strategies import SETTINGS
from test_code_executor import EDITS, edited, release
from test_code_sleep_sets import same_findings, small_configs, two_rank_configs
from test_toy_world import TREE as TOY_TREE
from test_toy_world import toy  # noqa: F401 (the fixture registering the toy protocol)


def against_dfs(srt, config, reduce: bool, seconds: float = 300):
    """The DFS's result (with the world's persistent set or without) and DPOR's, each exhaustive."""
    dfs = check_tree(srt, config, CodeLimits(max_seconds=seconds, reduce=reduce, strategy="dfs"))
    dpor = check_tree(srt, config, CodeLimits(max_seconds=seconds, strategy="dpor"))
    assert dfs.exhaustive and dpor.exhaustive, (dfs.bound, dpor.bound)
    return dfs, dpor


ONE_RANK = [dict(ranks=1), dict(ranks=1, abort_round=1), dict(ranks=1, reissue=True),
            dict(ranks=1, pages=1, query_raises=(True,)), dict(ranks=1, policy="best_effort"),
            dict(ranks=1, requests=2), dict(ranks=1, policy="timeout"),
            dict(ranks=1, pages=1, retries=True, lost_device_pages=1, readmissions=2),
            dict(ranks=1, requests=3, pages=1, retries=True, capacity_pages=1, batch=1),
            dict(ranks=1, host_pages=2, host_held_pages=2)]


SLEEP_TOO = 4  # the first configurations: the sleep sets too, against the same DFS


@pytest.mark.parametrize("kwargs", ONE_RANK)
def test_dpor_keeps_every_verdict_of_the_unreduced_search_at_one_rank(kwargs):
    dfs, dpor = against_dfs(release("0.5.23"), CodeConfig(**kwargs), reduce=False)
    same_findings(dfs, dpor)
    assert dpor.runs < dfs.runs and dpor.states <= dfs.states
    if ONE_RANK.index(kwargs) < SLEEP_TOO:  # sleep sets prune transitions, never states
        sleep = check_tree(release("0.5.23"), CodeConfig(**kwargs), CodeLimits(max_seconds=300, reduce=False,
                                                                              strategy="sleep"))
        assert sleep.exhaustive, sleep.bound
        same_findings(dfs, sleep)
        assert sleep.states == dfs.states and sleep.runs < dfs.runs


def test_a_request_prefetched_again_under_best_effort_is_judged_on_every_property():
    """The bench row the DPOR is for: the sleep sets' 17,267 runs in 3,738, the same verdicts
    (operation_identity violated, by the same 28 steps; every other property verified). The sleep
    sets' search (a minute) is the bench's (docs/benchmark.md); here the DPOR's figures hold. It is
    `prefetch-check sglang`'s case on 0.5.23, judged on every property: the old operation's late
    hit revokes the newer prefetch (a prefetch lost), the release's own code's finding."""
    from prefetch_check.sglang.mappings.ack_drain.mapping import CASES

    config = CodeConfig(ranks=1, policy="best_effort", reissue=True)
    [case] = [c for c in CASES if c.name == "1 rank, prefetched again, best_effort"]
    assert case.config == config and case.judges == () and case.limits.strategy in ("auto", "dpor")
    dpor = check_tree(release("0.5.23"), config, CodeLimits(max_seconds=300, strategy="dpor"))
    assert dpor.exhaustive
    judged = {p: v for p, v in dpor.verdicts.items() if p not in dpor.not_judged}
    assert {p for p, v in judged.items() if v != "VERIFIED"} == {"operation_identity"}, dpor.verdicts
    assert dpor.verdicts["operation_identity"] == "VIOLATED"
    assert len(dpor.violations["operation_identity"].schedule) == 28
    assert dpor.runs == 3_738
    assert dpor.violations["operation_identity"].site.startswith("mem_cache/unified_radix_cache.py:")


def one_rank(config: CodeConfig) -> CodeConfig:
    """The edit's configuration at one rank (each rank's storage as its rank 0's)."""
    first = {k: getattr(config, k)[:1] for k in ("failing", "hits", "query_raises") if getattr(config, k) is not None}
    return dataclasses.replace(config, ranks=1, **first)


@pytest.mark.parametrize("name", sorted(EDITS))
def test_the_one_place_edits_of_0_5_23_are_caught_the_same_at_one_rank(tmp_path, name):
    rel, old, new, config, prop = EDITS[name]
    srt = edited(tmp_path, release("0.5.23"), rel, old, new)
    dfs, dpor = against_dfs(srt, one_rank(config), reduce=False)
    same_findings(dfs, dpor)


def test_a_return_before_the_collective_is_caught_the_same_at_two_ranks(tmp_path):
    """At two ranks against the DFS under the persistent set (the other two edits take DPOR 6,871
    and 9,429 runs there, half a minute each: measured equal, docs/benchmark.md)."""
    rel, old, new, config, prop = EDITS["return_before_collective"]
    dfs, dpor = against_dfs(edited(tmp_path, release("0.5.23"), rel, old, new), config, reduce=True)
    same_findings(dfs, dpor)
    assert dpor.verdicts[prop] == "VIOLATED"


def test_a_world_without_footprints_is_searched_run_for_run_as_the_dfs(toy):
    """Every built-in world records its footprints; the toy protocol's (tests/toy_protocol) does not."""
    config = CodeConfig(world="toy", ranks=2, pages=2)
    dfs, dpor = against_dfs(TOY_TREE / "sglang" / "srt", config, reduce=True)
    same_findings(dfs, dpor)
    assert (dpor.runs, dpor.states) == (dfs.runs, dfs.states)


@pytest.mark.parametrize("ranks", [1, 2])
def test_the_default_search_is_dpor_within_the_persistent_set(ranks):
    """At two ranks DPOR chooses among the world's persistent set (2x1: 147 runs, against the
    sleep sets' 408 under the same set and DPOR's 1,148 over every enabled thread)."""
    assert CodeLimits().strategy == "auto"
    config = CodeConfig(ranks=ranks)
    auto = check_tree(release("0.5.23"), config, CodeLimits())
    chosen = check_tree(release("0.5.23"), config, CodeLimits(strategy="dpor"))
    assert (auto.runs, auto.states, auto.verdicts) == (chosen.runs, chosen.states, chosen.verdicts)
    if ranks == 2:
        sleep = check_tree(release("0.5.23"), config, CodeLimits(strategy="sleep"))
        everyone = check_tree(release("0.5.23"), config, CodeLimits(strategy="dpor", reduce=False))
        same_findings(sleep, auto)
        same_findings(everyone, auto)
        assert auto.runs < sleep.runs < everyone.runs


@settings(max_examples=8, **SETTINGS)
@given(small_configs())
def test_random_small_configurations_keep_every_verdict(config):
    dfs, dpor = against_dfs(release("0.5.23"), config, reduce=False)
    same_findings(dfs, dpor)


@settings(max_examples=2, **SETTINGS)
@given(two_rank_configs())
def test_random_two_rank_configurations_keep_every_verdict(config):
    dfs, dpor = against_dfs(release("0.5.23"), config, reduce=True)
    same_findings(dfs, dpor)


def test_the_dpor_keeps_one_object_per_distinct_summary_and_footprint():
    """The memory the two-rank searches need (2x1 best_effort: 220 -> 53 MiB peak, docs/benchmark.md):
    equal summaries and footprints met at different states are stored once, and a stored summary
    is never the caller's dict (a merge copies; sharing one it later changed would corrupt others)."""
    from prefetch_check.model.code.strategies.dpor import StatefulDPOR

    dpor = StatefulDPOR(max_depth=10)
    a = {"S0": (frozenset({"q"}), frozenset({"lock"})), "P0": (frozenset(), frozenset({"q"}))}
    b = {"P0": (frozenset(), frozenset({"q"})), "S0": (frozenset({"q"}), frozenset({"lock"}))}
    first, second = dpor._summary(a), dpor._summary(b)
    assert first is second and first == a and first is not a
    assert first["S0"][0] is first["S0"][0] and dpor._intern(frozenset({"q"})) is first["S0"][0]
    assert dpor._summary({"S0": (frozenset(), frozenset())}) is not first
