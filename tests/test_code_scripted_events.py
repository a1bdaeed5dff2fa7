"""A configuration's scripted events (CodeConfig.scripted_events: an abort, a device eviction, a
split, a late arrival, the cache's reset, each in a named round) are reported when no run took
them (CodeResult.unreached): a search that never reached the event checked nothing of it, though
its verdicts look the same."""

from __future__ import annotations

from prefetch_check.model.code import CodeConfig, CodeLimits, check_tree
from tests.test_code_executor import release

LIMITS = CodeLimits(max_seconds=120)


def test_the_scripted_events_are_named_with_their_rounds():
    events = CodeConfig(ranks=1, requests=2, pages=1, retries=True, abort_round=2, arrival_round=3).scripted_events()
    assert events == {"abort_round": "the client's abort of a waiting request in round 2",
                      "arrival_round": "the last request's arrival in round 3"}
    assert CodeConfig(ranks=1, reset_round=3).scripted_events() == {
        "reset_round": "flush_cache (the cache's reset) in round 3"}
    assert CodeConfig(ranks=1).scripted_events() == {}


def test_a_reset_after_the_request_was_admitted_is_reported_unreached():
    """With nothing stored the request is admitted in round 1 in every schedule: a flush in round 2
    never runs (a reset edited to raise stays clean there), and the result says so."""
    miss = dict(ranks=1, pages=1, retries=True, hits=(0,))
    late = check_tree(release("0.5.23"), CodeConfig(**miss, reset_round=2), LIMITS)
    assert late.exhaustive and late.unreached == [
        "flush_cache (the cache's reset) in round 2 happens in no schedule: the verdicts say nothing of it"]
    assert check_tree(release("0.5.23"), CodeConfig(**miss, reset_round=1), LIMITS).unreached == []


def test_an_abort_reached_in_some_schedule_is_not_reported():
    result = check_tree(release("0.5.23"), CodeConfig(ranks=1, abort_round=1), LIMITS)
    assert result.exhaustive and result.unreached == []


def test_a_cut_search_says_how_many_runs_did_not_reach_it():
    result = check_tree(release("0.5.23"), CodeConfig(ranks=1, pages=1, retries=True, hits=(0,), reset_round=2),
                        CodeLimits(max_runs=3))
    assert not result.exhaustive and result.unreached == [
        "flush_cache (the cache's reset) in round 2 happens in none of the 3 runs made: the verdicts say nothing of it"]


def test_the_sglang_line_of_what_the_code_verdicts_rest_on_counts_such_cases():
    from prefetch_check.sglang.code_checks import CodeCheck, CodeRun
    from prefetch_check.sglang.report import code_rests_on

    def run(name, unreached):
        return CodeRun(name, name, CodeConfig(ranks=1), result={"exhaustive": True, "unreached": unreached})

    code = CodeCheck(runs=[run("a", []), run("b", ["flush_cache (the cache's reset) in round 2 happens in no "
                                                   "schedule: the verdicts say nothing of it"])])
    assert code_rests_on(code) == ("2 case(s) of 1 rank: 2 exhaustive, 1 whose scripted event no run reached "
                                   "(--json: unreached)")
    assert code_rests_on(CodeCheck(runs=[run("a", [])])) == "1 case(s) of 1 rank: 1 exhaustive"
