"""The executor's sampling strategies (model/code/strategies/): a seeded random walk and PCT run
through `CodeLimits(strategy=..., seed=...)`. Each finds a known violation with a fixed seed and
the counterexample replays; the same seed gives the same runs; a sample never says VERIFIED,
however many runs it took and whatever it found."""

from __future__ import annotations

import pytest

from prefetch_check.model.code import CodeConfig, CodeLimits, check_tree, replay
from test_code_executor import release

# 0.5.23, a request prefetched again under best_effort: the old operation's hit, drained after the
# request was admitted and prefetched again, revokes the new operation (docs/executor.md); the
# depth-first search needs ~1,700 runs to reach it
REISSUED = CodeConfig(ranks=1, policy="best_effort", reissue=True)
SAMPLES = {"random": 1, "pct": 1}  # strategy -> the seed this test fixes


@pytest.mark.parametrize("strategy", sorted(SAMPLES))
def test_a_sample_finds_the_stale_operation_and_its_schedule_replays(strategy):
    srt = release("0.5.23")
    limits = CodeLimits(strategy=strategy, seed=SAMPLES[strategy], max_runs=200, stop_on=("operation_identity",))
    result = check_tree(srt, REISSUED, limits)
    found = result.violations["operation_identity"]
    assert result.runs < 200 and not result.exhaustive and "sampling is never exhaustive" in result.bound
    assert "VERIFIED" not in result.verdicts.values(), result.verdicts
    again = replay(srt, REISSUED, found.schedule)
    assert any(f["prop"] == "operation_identity" and f["site"] == found.site for f in again["findings"]), again["findings"]
    assert [s["choice"] for s in again["steps"]][: len(found.schedule)] == found.schedule
    # the seed is the whole of it: the same seed, the same runs and the same counterexample
    same = check_tree(srt, REISSUED, limits)
    assert (same.runs, same.violations["operation_identity"].schedule) == (result.runs, found.schedule)


@pytest.mark.parametrize("strategy", sorted(SAMPLES))
def test_a_clean_sample_is_bounded_never_verified(strategy):
    result = check_tree(release("0.5.23"), CodeConfig(ranks=2), CodeLimits(strategy=strategy, seed=5, max_runs=30))
    assert result.runs == 30 and result.states > 0 and not result.exhaustive and not result.violations
    assert {v for v in result.verdicts.values()} == {"BOUNDED", "NOT JUDGED"}, result.verdicts
    assert result.bound.startswith("sampled by ") and "30 runs" in result.bound


def test_an_unknown_strategy_is_refused_by_name():
    with pytest.raises(ValueError, match="strategy 'bfs': the executor has auto, dfs, sleep, dpor, random, pct"):
        CodeLimits(strategy="bfs")
