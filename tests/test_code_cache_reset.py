"""The cache's reset (CodeConfig.reset_round, worlds/ack_drain/cache_reset.py): flush_cache with the
engine paused asks the tree's own Scheduler.is_fully_idle (flush_gate.py), which refuses while a
fetch is in the cache's books, and is asked again each round; where it lets the flush through, the
tree's own reset stops, joins and restarts the storage threads (stand_ins/threads.py). The
releases are clean; a gate edited to let the flush through under a fetch brings back, at two
ranks, a sync thread left in the completion ACK's all_reduce its peer left (the reset then
raises). One-place edits of the reset are caught, those of its restart by a request arriving after
it (CodeConfig.reset_arrival); under buffer_only the reset runs the pipeline's own reset too, and in
the scheduler's retry path it drops the retry registry."""

from __future__ import annotations

import pytest

from prefetch_check.model.code import CodeConfig, CodeLimits, check_tree
from tests.test_code_executor import clean, edited, release

LIMITS = CodeLimits(max_seconds=150)
ONE = CodeConfig(ranks=1, reset_round=1)
# two ranks: the test of an edited gate stops at the stranded sync thread
TWO = CodeConfig(ranks=2, reset_round=1, round_gate="any")
CONTROLLER, CACHE = "managers/cache_controller.py", "mem_cache/unified_radix_cache.py"


@pytest.mark.parametrize("version,reset_round", [("0.5.23", 0), ("0.5.23", 1), ("0.5.20", 1)])
def test_one_rank_reset_is_clean_and_exhausted(version, reset_round):
    result = check_tree(release(version), CodeConfig(ranks=1, reset_round=reset_round), LIMITS)
    assert result.exhaustive and not result.not_modelled, (result.bound, result.not_modelled)
    assert clean(result), result.verdicts
    assert result.verdicts["wait_complete_delivers"] == "NOT JUDGED"  # the reset discards the fetch
    assert result.runs > 100, result.runs


def test_the_releases_gate_refuses_the_flush_while_a_fetch_is_in_the_caches_books():
    """Asked from round 0, when the fetch was only just issued, the flush still comes in every run,
    and only once the request was admitted (the first round the gate lets it through)."""
    result = check_tree(release("0.5.23"), CodeConfig(ranks=1, reset_round=0), LIMITS)
    assert result.exhaustive and not result.unreached and clean(result), (result.unreached, result.verdicts)


# is_fully_idle without its check of the cache's prefetches: the flush may come under a fetch in flight
WAITS_FOR_FETCHES = "                    idle &= len(tc.ongoing_prefetch) == 0\n"


def test_a_gate_that_lets_the_flush_through_under_a_fetch_strands_a_sync_thread_at_two_ranks(tmp_path):
    tree = edited(tmp_path, release("0.5.23"), "managers/scheduler.py", WAITS_FOR_FETCHES, "")
    result = check_tree(tree, TWO, CodeLimits(max_seconds=150, stop_on=("no_crash", "progress")))
    crash = result.violations["no_crash"]
    assert "RuntimeError: Failed to stop HiCache storage threads cleanly" in crash.message, crash.message
    assert crash.site.startswith(CONTROLLER), crash.site
    hang = result.violations["progress"]
    assert "all_reduce" in hang.message and "Y-completion" in hang.message, hang.message



def test_a_flush_right_after_a_client_abort_strands_a_sync_thread_at_two_ranks_in_the_release():
    """The abort's release_aborted_request pops the fetch's ongoing_prefetch entry while IO still runs
    it, so the release's own gate lets the flush through (docs/findings.md)."""
    config = CodeConfig(ranks=2, abort_round=1, reset_round=1, round_gate="any")
    result = check_tree(release("0.5.23"), config, CodeLimits(max_seconds=150, stop_on=("no_crash", "progress")))
    crash = result.violations["no_crash"]
    assert "RuntimeError: Failed to stop HiCache storage threads cleanly" in crash.message, crash.message
    assert any("aborted req0" in step.observed for step in crash.steps)
    assert any("flush_cache: tree_cache.reset()" in step.observed for step in crash.steps)


EDITS = {
    # the reset no longer joins the threads it stopped: one still runs at the is_alive check
    "reset_skips_the_joins": (CONTROLLER, "                t.join(timeout=10)\n", "                pass\n",
                              "no_crash"),
}


@pytest.mark.parametrize("name", sorted(EDITS))
def test_edits_of_the_reset_are_caught(tmp_path, name):
    rel, old, new, prop = EDITS[name]
    srt = edited(tmp_path, release("0.5.23"), rel, old, new)
    result = check_tree(srt, ONE, CodeLimits(max_seconds=150, stop_on=(prop,)))
    assert prop in result.violations, (name, result.verdicts)


ARRIVAL = CodeConfig(ranks=1, requests=2, reset_round=1, reset_arrival=True)


def test_a_request_arriving_after_the_reset_is_served_by_the_restarted_threads():
    result = check_tree(release("0.5.23"), ARRIVAL, LIMITS)
    assert result.exhaustive and clean(result), (result.bound, result.verdicts)
    assert result.verdicts["wait_complete_delivers"] == "VERIFIED"  # judged for the late request


# what only a request after the reset exercises: the restarted threads. Without one both are clean
# (the stop event left set: 791 runs, exhaustive)
RESTART_EDITS = {
    # the stop event stays set: every restarted thread leaves at its first look
    "reset_leaves_the_stop_event_set": ("        self.storage_stop_event.clear()\n\n        if self.enable_storage:\n",
                                        "        if self.enable_storage:\n"),
    # the IO thread is made but not started: the new request's fetch is never read
    "reset_does_not_start_the_io_thread": ("            self.prefetch_io_aux_thread.start()\n", ""),
}


@pytest.mark.parametrize("name", sorted(RESTART_EDITS))
def test_edits_of_the_restart_are_caught_by_a_request_after_it(tmp_path, name):
    old, new = RESTART_EDITS[name]
    srt = edited(tmp_path, release("0.5.23"), CONTROLLER, old, new)
    arrival = check_tree(srt, ARRIVAL, CodeLimits(max_seconds=150, stop_on=("progress",)))
    assert "req1 is never admitted" in arrival.violations["progress"].message, arrival.verdicts
    alone = check_tree(srt, ONE, LIMITS)
    assert alone.exhaustive and clean(alone), (name, alone.verdicts)  # the reset alone does not see it


BUFFER = CodeConfig(ranks=1, requests=2, host_memory_mode="buffer_only", device_pages=1, reset_round=1,
                    reset_arrival=True)
PIPELINE = "mem_cache/buffer_mode/pipeline.py"


def test_a_buffer_only_reset_drops_the_anchor_and_the_restart_serves_a_new_request():
    result = check_tree(release("0.5.23"), BUFFER, LIMITS)
    assert result.exhaustive and not result.not_modelled and clean(result), (result.bound, result.verdicts)
    assert result.verdicts["anchor_release"] == result.verdicts["wait_complete_delivers"] == "VERIFIED"


def test_a_pipeline_field_its_own_reset_no_longer_sets_is_the_trees_crash_not_a_gap_of_the_world(tmp_path):
    """The pipeline's __init__ calls its reset, and the world builds it through that __init__: a
    field the reset drops is an AttributeError of the tree's own code (no_crash), where before it
    read as a field the world forgot to set (not modelled, no verdict)."""
    srt = edited(tmp_path, release("0.5.23"), PIPELINE,
                 "        self.anchor_locks: dict[CacheRequestHandle, _AnchorLock] = {}\n", "")
    result = check_tree(srt, BUFFER, CodeLimits(max_seconds=150, stop_on=("no_crash",)))
    assert not result.not_modelled, result.not_modelled
    crash = result.violations["no_crash"]
    assert "no attribute 'anchor_locks'" in crash.message and crash.site.startswith(PIPELINE), (crash.message, crash.site)


def test_a_reset_with_sidecar_pools_clears_every_pool_of_the_group_and_is_clean():
    """The host pool group's clear clears each entry's pool (group.py), and the hybrid controller's
    reset the sidecars' release queues."""
    result = check_tree(release("0.5.23"), CodeConfig(ranks=1, reset_round=1, sidecars=("swa", "indexer")), LIMITS)
    assert result.exhaustive and not result.not_modelled and clean(result), (result.bound, result.verdicts)


def test_a_reset_in_the_schedulers_retry_path_is_clean_and_exhausted():
    """The tree's own Scheduler methods keep the request in their queue while the reset drops the
    cache's retry registry and the fetch; the next round admits it."""
    result = check_tree(release("0.5.23"), CodeConfig(ranks=1, pages=1, retries=True, reset_round=1), LIMITS)
    assert result.exhaustive and not result.not_modelled and clean(result), (result.bound, result.verdicts)
    assert result.runs > 100, result.runs


def test_reset_round_outside_its_world_is_refused():
    with pytest.raises(ValueError, match="reset_round"):
        CodeConfig(ranks=2, reset_round=1, backup=True)
    with pytest.raises(ValueError, match="reset_round"):
        CodeConfig(ranks=1, reset_round=-1)
    with pytest.raises(ValueError, match="reset_arrival.*needs reset_round"):
        CodeConfig(ranks=1, requests=2, reset_arrival=True)
    with pytest.raises(ValueError, match="reset_arrival: 2 requests"):
        CodeConfig(ranks=1, reset_round=1, reset_arrival=True)
    with pytest.raises(ValueError, match="reset_round with retries: from round 1"):
        CodeConfig(ranks=1, reset_round=0, retries=True)
    with pytest.raises(ValueError, match="reset_round with retries"):
        CodeConfig(ranks=1, requests=2, reset_round=1, reset_arrival=True, retries=True)
    with pytest.raises(ValueError, match="reset_round with abort_round: cache mode, the abort in the flush's round"):
        CodeConfig(ranks=1, reset_round=1, abort_round=2)
    with pytest.raises(ValueError, match="reset_round with abort_round"):
        CodeConfig(ranks=1, reset_round=1, abort_round=1, host_memory_mode="buffer_only")


def test_the_two_ranks_reset_cases_split_the_releases_by_how_their_reset_joins():
    """One of the two cases of the same search runs on each tree: the join that waits (0.5.19-0.5.20)
    or the one that times out (0.5.21 on)."""
    from prefetch_check.sglang.mappings.ack_drain.reset_cases import RESET_CASES, STRANDED

    two = [case for case in RESET_CASES if case.name.startswith(STRANDED)]
    for version, judged in (("0.5.20", "deadlock_freedom"), ("0.5.23", "no_crash")):
        srt = release(version)
        run = [case for case in two if not case.skip(srt)]
        assert len(run) == 1 and judged in run[0].judges, (version, [c.name for c in run])
