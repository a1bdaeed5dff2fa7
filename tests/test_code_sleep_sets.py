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
from test_sglang_release import release_srt


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


# Without the persistent set on the executor's one-rank configurations: tests/test_code_dpor.py
# (its unreduced DFS, run once, is the reference of both reductions there).


def test_two_ranks_with_the_persistent_set_keep_every_verdict_in_fewer_runs():
    dfs, sleep = both(release("0.5.23"), CodeConfig(ranks=2))
    same_findings(dfs, sleep)
    assert (dfs.runs, sleep.runs) == (1_740, 408)


@pytest.mark.parametrize("name", sorted(EDITS))
def test_the_one_place_edits_of_0_5_23_are_caught_the_same(tmp_path, name):
    rel, old, new, config, prop = EDITS[name]
    dfs, sleep = both(edited(tmp_path, release("0.5.23"), rel, old, new), config)
    same_findings(dfs, sleep)
    assert sleep.verdicts[prop] == "VIOLATED" and sleep.runs <= dfs.runs


POLL = dict(world="predicate-poll")
POLL_CASES = [(version, kwargs) for version in ("0.5.1", "0.5.18")
              for kwargs in (dict(ranks=1), dict(ranks=1, policy="best_effort"), dict(ranks=1, hits=(0,), threshold_pages=0))
              ] + [(version, dict(ranks=1, policy="timeout")) for version in ("0.5.12", "0.5.18")]


@pytest.mark.parametrize("version, kwargs", POLL_CASES)
def test_the_poll_world_without_the_persistent_set_keeps_every_state_and_verdict(version, kwargs):
    """The predicate-poll world's footprints (its cache and controller watched, its own stand-ins,
    the groups' rebase, the probe's reads): 0.5.1's early acceptance, unwritten data and loss, 0.5.18's
    request waiting forever at threshold 0, the deadlines of 0.5.12 and 0.5.18, all kept."""
    dfs, sleep = both(release_srt(version), CodeConfig(**POLL, **kwargs), reduce=False)
    same_findings(dfs, sleep)
    assert sleep.states == dfs.states
    assert sleep.runs < dfs.runs


def test_a_request_polled_forever_is_still_found_where_only_the_schedulers_move():
    """0.5.18, no hits at threshold 0: the request waits forever, a run's end judged where a
    polling cycle closes. A step after which only the schedulers can move wakes them (PollRun.settled):
    without it the sleep sets cut every run that closed the cycle, and progress was VERIFIED."""
    config = CodeConfig(ranks=1, hits=(0,), threshold_pages=0, **POLL)
    result = check_tree(release_srt("0.5.18"), config, CodeLimits(max_seconds=120))
    assert result.exhaustive and result.verdicts["progress"] == "VIOLATED"
    assert "req0 is never admitted" in result.violations["progress"].message


def test_two_poll_ranks_with_the_persistent_set_keep_every_verdict_in_fewer_runs():
    """0.5.18, 2 ranks, one page, nothing stored (the revoke path): the largest 2-rank poll
    configuration the DFS finishes in a test's time."""
    dfs, sleep = both(release_srt("0.5.18"), CodeConfig(ranks=2, pages=1, hits=(0, 0), **POLL), seconds=300)
    same_findings(dfs, sleep)
    assert sleep.runs < dfs.runs


BUFFER = dict(host_memory_mode="buffer_only")
BUFFER_ONE_RANK = [dict(), dict(device_pages=1), dict(device_pages=1, evict_device_round=1),
                   dict(requests=2, host_pages=2), dict(device_pages=1, abort_round=2),
                   dict(pages=3, device_pages=2, device_room=3, evict_device_round=2)]


@pytest.mark.parametrize("kwargs", BUFFER_ONE_RANK, ids=lambda k: ",".join(f"{a}={b}" for a, b in k.items()) or "1x1")
def test_the_buffer_world_without_the_persistent_set_keeps_every_state_and_verdict(kwargs):
    """The one-rank buffer_only cases of `prefetch-check sglang` (buffer_cases.py) on 0.5.23: the
    device tree and pool, the pipeline and the storage beliefs record their footprints."""
    dfs, sleep = both(release("0.5.23"), CodeConfig(ranks=1, **BUFFER, **kwargs), reduce=False)
    same_findings(dfs, sleep)
    assert sleep.states == dfs.states
    assert sleep.runs < dfs.runs


def test_two_buffer_ranks_with_the_persistent_set_keep_every_verdict_in_fewer_runs():
    dfs, sleep = both(release("0.5.23"), CodeConfig(ranks=2, **BUFFER))
    same_findings(dfs, sleep)
    assert sleep.runs < dfs.runs


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
