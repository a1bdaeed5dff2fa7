"""buffer_only under the scheduler's own retry path (CodeConfig(host_memory_mode="buffer_only",
retries=True)): the tree's Scheduler methods issue each request (`_prefetch_kvcache`, re-anchored at
the device node), poll the retries (`_process_storage_prefetch_retries`, pop_ready) and re-query a
shrunk device match, and admission runs buffer mode's staging steps (worlds/ack_drain/buffer/
admission.py) on the waiting-queue stand-in. Issue 29's held-out trial found edits of the refetch
path escaping because the buffer world re-issued a shrunk staged span itself."""

from __future__ import annotations

import dataclasses

import pytest

from prefetch_check.model.code import CodeConfig, CodeLimits, check_tree
from prefetch_check.sglang.mappings.ack_drain.buffer_cases import BUFFER_CASES
from test_code_executor import clean, edited, release

LIMITS = CodeLimits(max_seconds=120)
PIPELINE, RETRIES = "mem_cache/buffer_mode/pipeline.py", "mem_cache/storage_prefetch.py"
SCHEDULER = "managers/scheduler.py"


def buffer_retries(**kwargs) -> CodeConfig:
    return CodeConfig(host_memory_mode="buffer_only", retries=True, **kwargs)


ANCHORED = buffer_retries(ranks=1, device_pages=1)
EVICTED = buffer_retries(ranks=1, device_pages=1, evict_device_round=1)  # the anchor lost before the IO commit
SHRUNK = buffer_retries(ranks=1, pages=3, device_pages=2, device_room=3, evict_device_round=2)  # a staged span's

# the staged-span test made `<=`: every staged span with a device anchor is thrown away and refetched
SHRUNK_TEST = ("        if matched_len < f.matched_len:\n", "        if matched_len <= f.matched_len:\n")
# pop_ready drops the queue head's immediate refetch too, not only its speculative miss
HEAD_REFETCH = ("        if head_retry is not None and not head_retry.immediate:\n", "        if head_retry is not None:\n")
# the device-hit-loss re-query never fires
NO_REQUERY = ("        if current_match_len >= previous_match_len:\n            return False\n", "        return False\n")


# every buffer_only case of 0.5.23's list, once with the buffer world's own loop (its re-issue of a
# shrunk staged span is ours) and once under the scheduler's retry path (upstream's), the write path's
# cases too but one: its timeout case under the retry path took 52 s of the suite's CPU (2026-12-07,
# the suite near its 15-minute budget), and in the world's own loop 24 s more (cut from
# test_code_buffer_backup.py too): `prefetch-check sglang` runs the case in the world's own loop; the
# suite runs its parts, the write path without the clock and the retry path under timeout (here)
OWN_LOOP = [case for case in BUFFER_CASES if not case.config.retries
            and not (case.config.backup and case.config.policy == "timeout")]


@pytest.mark.parametrize("case", OWN_LOOP, ids=[case.name for case in OWN_LOOP])
def test_every_buffer_case_is_clean_under_the_schedulers_retry_path_as_under_the_worlds_own_loop(case):
    """Our loop's shortcut and upstream's retry path agree on 0.5.23 (both exhaustive and clean;
    the retry path judges request_release too). The write path's own loop is searched, exhaustive
    and clean, by test_code_buffer_backup.py: under the retry path alone here, which is all the
    agreement needs (clean and exhaustive leaves every judged property VERIFIED on both sides)."""
    srt = release("0.5.23")
    upstream = check_tree(srt, dataclasses.replace(case.config, retries=True), LIMITS)
    own = None if case.config.backup else check_tree(srt, case.config, LIMITS)
    for result in (own, upstream):
        if result is None:
            continue
        assert result.not_modelled == [] and result.exhaustive
        assert clean(result), {k: v.message for k, v in result.violations.items()}
    if own is not None:
        shared = [p for p in own.verdicts if p not in own.not_judged and p not in upstream.not_judged]
        assert {p: own.verdicts[p] for p in shared} == {p: upstream.verdicts[p] for p in shared}
    else:
        assert {upstream.verdicts[p] for p in upstream.verdicts if p not in upstream.not_judged} == {"VERIFIED"}


def test_a_refetch_loop_ended_by_the_reissue_cap_is_caught_as_the_prefix_it_loses(tmp_path):
    """The edit's staged span is refetched at every admission until pop_ready's cap admits the
    request with its device page only (the world's own re-issue had no cap: its search ran out of
    time, judging nothing)."""
    result = check_tree(edited(tmp_path, release("0.5.23"), PIPELINE, *SHRUNK_TEST), ANCHORED, LIMITS)
    assert result.verdicts["wait_complete_delivers"] == "VIOLATED", result.verdicts
    found = result.violations["wait_complete_delivers"]
    assert "admitted with [(0, 1)] (rank, tokens) on the device, the ranks agreed on 2" in found.message
    assert "a prefetch lost" in found.consequence


def test_the_head_refetch_dropped_is_made_up_for_by_the_device_hit_loss_requery(tmp_path):
    """pop_ready cancelling the head's refetch changes nothing a request gets: the same admission's
    device-hit-loss re-query re-issues it (the trial's escape is equivalent in 0.5.23), and the
    judge says so only when both are gone."""
    srt = release("0.5.23")
    one = edited(tmp_path / "one", srt, RETRIES, *HEAD_REFETCH)
    for config in (EVICTED, SHRUNK):
        assert clean(check_tree(one, config, LIMITS))
    both = edited(tmp_path / "both", one, SCHEDULER, *NO_REQUERY)
    result = check_tree(both, EVICTED, LIMITS)
    assert result.verdicts["progress"] == "VIOLATED", result.verdicts
    assert "armed for an immediate refetch" in result.violations["progress"].message
    assert "a prefetch lost" in result.violations["progress"].consequence


def test_a_staged_request_preempted_by_an_arrival_is_released_and_its_release_dropped_is_caught(tmp_path):
    """A higher-priority arrival at a full queue aborts req0 while its prefetch is staged and
    anchored (CodeConfig.arrival): clean on 0.5.23, and without the release of the preempted
    request its staging slot, its anchor's pin and its records all outlive it."""
    srt = release("0.5.23")
    preempted = buffer_retries(ranks=1, requests=2, device_pages=1, arrival_round=1, arrival="preempts")
    result = check_tree(srt, preempted, LIMITS)
    assert result.exhaustive and clean(result), result.verdicts
    assert result.verdicts["anchor_release"] == result.verdicts["request_release"] == "VERIFIED"
    dropped = edited(tmp_path, srt, SCHEDULER, "                self._release_aborted_request(candidate_req)\n", "")
    result = check_tree(dropped, preempted, LIMITS)
    assert {"host_memory", "anchor_release", "request_release"} <= set(result.violations), result.verdicts
