"""The sleep-set search (model/code/strategies/sleep.py) is checked the way the model's reductions
are (tests/test_reductions.py): against the search it reduces, verdict- and violation-kind-equal,
on the executor's own configurations, on the one-place edits of 0.5.23 the executor catches, and
on random small configurations (Hypothesis). Sleep sets prune transitions, never states, so
without the world's persistent set both searches must expand exactly the same number of states:
a step whose footprint missed a shared object would let the search skip an order that reaches a
state no other order reaches, and the counts would differ."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from prefetch_check.model.code import CodeConfig, CodeLimits, check_tree
from prefetch_check.model.code.strategies.sleep import conflict
from strategies import SETTINGS
from test_code_executor import EDITS, edited, release


def both(srt, config, reduce: bool = True, seconds: float = 120):
    """The DFS's result and the sleep-set search's, each exhaustive."""
    dfs = check_tree(srt, config, CodeLimits(max_seconds=seconds, reduce=reduce, strategy="dfs"))
    sleep = check_tree(srt, config, CodeLimits(max_seconds=seconds, reduce=reduce, strategy="sleep"))
    assert dfs.exhaustive and sleep.exhaustive, (dfs.bound, sleep.bound)
    return dfs, sleep


def same_findings(dfs, sleep) -> None:
    assert sleep.verdicts == dfs.verdicts
    assert {p: v.message for p, v in sleep.violations.items()}.keys() == dfs.violations.keys()
    assert sleep.not_judged == dfs.not_judged


def test_footprints_conflict_when_one_writes_what_the_other_touches():
    q, lock, op = frozenset({"r0.prefetch_queue"}), frozenset({"lock3"}), frozenset({"r0.op0.hash_value"})
    none = frozenset()
    assert conflict((none, q), (none, q))  # two puts on one queue
    assert conflict((op, none), (none, op)) and conflict((none, op), (op, none))  # a read and a write
    assert not conflict((op, none), (op, none))  # two reads
    assert not conflict((none, q), (none, lock))  # different objects


@pytest.mark.parametrize("kwargs", [dict(ranks=1), dict(ranks=1, abort_round=1), dict(ranks=1, reissue=True),
                                    dict(ranks=1, pages=1, query_raises=(True,))])
def test_without_the_persistent_set_sleep_sets_keep_every_state_and_verdict(kwargs):
    dfs, sleep = both(release("0.5.23"), CodeConfig(**kwargs), reduce=False)
    same_findings(dfs, sleep)
    assert sleep.states == dfs.states  # transitions pruned, never states
    assert sleep.runs < dfs.runs


def test_two_ranks_with_the_persistent_set_keep_every_verdict_in_fewer_runs():
    dfs, sleep = both(release("0.5.23"), CodeConfig(ranks=2))
    same_findings(dfs, sleep)
    assert (dfs.runs, sleep.runs) == (1_740, 416)


@pytest.mark.parametrize("name", sorted(EDITS))
def test_the_one_place_edits_of_0_5_23_are_caught_the_same(tmp_path, name):
    rel, old, new, config, prop = EDITS[name]
    dfs, sleep = both(edited(tmp_path, release("0.5.23"), rel, old, new), config)
    same_findings(dfs, sleep)
    assert sleep.verdicts[prop] == "VIOLATED" and sleep.runs <= dfs.runs


def test_a_world_without_footprints_is_searched_run_for_run_as_the_dfs():
    config = CodeConfig(ranks=1, host_memory_mode="buffer_only", device_pages=1)
    dfs, sleep = both(release("0.5.23"), config)
    same_findings(dfs, sleep)
    assert (sleep.runs, sleep.states) == (dfs.runs, dfs.states)


@st.composite
def small_configs(draw):
    """One rank (the unreduced search finishes in seconds), one request of 1-2 pages; stored pages,
    an unreadable page, a raising query, the policy, an abort round and a re-issue all random. A
    re-issue under best_effort is left out: its unreduced search takes minutes (the bench row)."""
    pages = draw(st.integers(1, 2))
    policy = draw(st.sampled_from(["wait_complete", "best_effort"]))
    return CodeConfig(
        ranks=1, pages=pages, policy=policy, hits=(draw(st.integers(0, pages)),),
        failing=(tuple(draw(st.sets(st.integers(0, pages - 1), max_size=1))),),
        query_raises=(draw(st.booleans()),), abort_round=draw(st.sampled_from([None, 1, 2])),
        reissue=policy == "wait_complete" and draw(st.booleans()))


@settings(max_examples=6, **SETTINGS)
@given(small_configs())
def test_random_small_configurations_keep_every_state_and_verdict(config):
    dfs, sleep = both(release("0.5.23"), config, reduce=False)
    same_findings(dfs, sleep)
    assert sleep.states == dfs.states


@st.composite
def two_rank_configs(draw):
    """Two ranks, one request of one page, wait_complete; what each rank's storage holds, fails to
    read or raises random. With the persistent set (the search the default replaces): best_effort
    and aborts at two ranks take the DFS minutes (the bench rows)."""
    return CodeConfig(
        ranks=2, pages=1, hits=tuple(draw(st.integers(0, 1)) for _ in range(2)),
        failing=tuple(tuple(draw(st.sets(st.just(0), max_size=1))) for _ in range(2)),
        query_raises=tuple(draw(st.booleans()) for _ in range(2)))


@settings(max_examples=10, **SETTINGS)
@given(two_rank_configs())
def test_random_two_rank_configurations_keep_every_verdict(config):
    dfs, sleep = both(release("0.5.23"), config)
    same_findings(dfs, sleep)
    assert sleep.runs <= dfs.runs
