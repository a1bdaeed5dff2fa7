"""The predicate-poll world's search at 2 ranks (model/code/worlds/predicate_poll/harness.py, stand_ins.py).

Equal states meet under one key: objects the code makes are named per rank, the stand-ins are in a
canonical order, and the collective call numbers the threads observe count from the rank furthest
behind. Before that, a 2-rank poll search made new states at every polling round and did not
finish in 120 s even at one page with nothing stored; now that size is exhaustive, the search
without the rank-level reduction finds in its first 1,000 runs no violation the exhaustive one
rules out (and the one it finds), and 0.5.1's early acceptance shows with both ranks voting."""

from __future__ import annotations

from prefetch_check.model.code import CodeConfig, CodeLimits, check_tree
from test_sglang_release import release_srt

POLL = dict(world="predicate-poll")
SMALL = CodeConfig(ranks=2, pages=1, hits=(0, 0), **POLL)  # one page, nothing stored: the revoke path


def test_a_small_two_rank_poll_search_is_exhaustive_and_the_unreduced_search_finds_nothing_it_misses():
    """0.5.18, 2 ranks, one page, nothing stored: before equal states met under one key the
    search did not finish in 120 s (4,571 runs); now it is exhaustive. The search without the
    rank-level reduction does not finish here (8,830 states in 330 s): its first 1,000 runs are
    the cross-check, finding no violation the exhaustive reduced search rules out."""
    srt = release_srt("0.5.18")
    reduced = check_tree(srt, SMALL, CodeLimits(max_seconds=300))
    assert reduced.exhaustive and not reduced.not_modelled, reduced.bound
    assert set(reduced.verdicts.values()) == {"VERIFIED", "NOT JUDGED"}
    full = check_tree(srt, SMALL, CodeLimits(max_runs=1_000, max_seconds=300, reduce=False))
    assert full.runs == 1_000 and not full.not_modelled
    assert "VIOLATED" not in full.verdicts.values()


def test_0_5_1s_small_two_rank_search_finds_the_early_acceptance_with_and_without_the_reduction():
    """Both searches, each cut at 1,000 runs, find 0.5.1's early acceptance at this size (the
    reduced one is exhaustive here after 28,049 runs, about 40 s: docs/executor.md; the 0.5.18
    test above is the exhaustive one the suite runs)."""
    srt = release_srt("0.5.1")
    for reduce in (True, False):
        result = check_tree(srt, SMALL, CodeLimits(max_runs=1_000, max_seconds=300, reduce=reduce))
        assert not result.not_modelled
        assert result.verdicts["no_early_acceptance"] == "VIOLATED", (reduce, result.verdicts)


def test_0_5_1_accepts_a_prefetch_before_its_page_list_is_published_with_two_ranks_voting():
    srt = release_srt("0.5.1")
    result = check_tree(srt, CodeConfig(ranks=2, **POLL), CodeLimits(max_runs=200, max_seconds=240))
    assert not result.not_modelled
    assert result.verdicts["no_early_acceptance"] == "VIOLATED"
    early = result.violations["no_early_acceptance"]
    assert "hash_value was still empty" in early.message
    assert {s.choice for s in early.steps} == {"S0", "S1"}  # the schedulers alone: no prefetch thread ran
    vote = early.steps[-1]  # rank 0 leaves the ranks' vote with "complete", and accepts
    assert (vote.choice, vote.label, vote.observed) == ("S0", "all_reduce(MIN) leave S-tp", "reduced [1]")
    assert any(s.choice == "S1" and s.label == "all_reduce(MIN) arrive S-tp" and s.site == vote.site for s in early.steps)
    for rank in (0, 1):  # each rank read its own empty page list before voting
        assert any(s.observed == f"r{rank}.op0.hash_value=[]" and s.choice == f"S{rank}" for s in early.steps)
