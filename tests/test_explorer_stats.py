"""Statistics a model-checker user expects: states, transitions, depth, rates, how often each action
fired (and which never did), and the progress callback."""

from __future__ import annotations

from prefetch_check.explorer.options import SearchOptions, observers_of

from prefetch_check.explorer.bfs import CHECK_EVERY
from prefetch_check.explorer.check import check
from prefetch_check.explorer.limits import Limits
from models import ACTION_KINDS
from prefetch_check.model.protocols.poll.config import uniform_config
from models import readable


def test_action_counts_add_up_to_the_transitions():
    stats = check(readable(uniform_config(ranks=2, pages=2), "buggy")).stats
    assert sum(stats.action_counts.values()) == stats.transitions
    assert list(stats.action_counts) == sorted(stats.action_counts)


def test_actions_that_never_fire_are_named():
    model = readable(uniform_config(pages=2), "fixed")
    stats = check(model).stats
    fired = set(stats.action_counts)
    possible = set(model.action_kinds())
    assert set(stats.never_fired) == possible - fired == {"I.increment_refused"}  # fixed never ends a load early
    # what this configuration rules out is not listed: no allocation may fail, nothing is revoked,
    # no page fails, no clock
    assert not possible & {"S.issue_alloc_failed", "P.revoke", "I.load_failed", "C.timeout"}
    assert possible < set(ACTION_KINDS) and "S.check" in fired and "I.increment" in fired


def test_the_figures_of_a_finished_search():
    stats = check(readable(uniform_config(pages=2), "fixed")).stats
    assert stats.complete and stats.frontier == 0 and stats.stop_reason is None
    assert stats.states > 0 and stats.max_depth > 0 and stats.states_per_second > 0
    assert stats.peak_memory_mb > 0


def test_a_cut_search_reports_its_frontier():
    stats = check(readable(uniform_config(pages=2), "fixed"), SearchOptions(Limits(max_states=10))).stats
    assert not stats.complete and stats.frontier > 0


def test_the_progress_callback_ends_with_the_final_figures():
    reports = []
    model = readable(uniform_config(ranks=2, pages=2, policy="timeout"), "fixed")
    result = check(model, SearchOptions(observers=observers_of(reports.append)))
    assert result.stats.states > CHECK_EVERY  # large enough for intermediate reports
    search = [r for r in reports if r["phase"] == "search"]
    assert len(search) >= 2 and all(not r.get("done") for r in search[:-1])
    last = search[-1]
    assert last["done"] and last["states"] == result.stats.states and last["frontier"] == 0
    assert [r["states"] for r in search] == sorted(r["states"] for r in search)
    # every phase after the search is named, and ends with a report of its own
    phases = list(dict.fromkeys(r["phase"] for r in reports))
    assert phases == ["search", "progress analysis"] and reports[-1]["done"]
