"""The retry world (CodeConfig.retries): 0.5.23's own Scheduler retry, re-issue and readmission
methods (managers/scheduler.py, compiled from the release as written) and StoragePrefetchRetries
on the waiting-queue stand-in. The release's cases get verdicts; one-place edits of that code,
applied here, are caught with their consequence; a behaviour-keeping refactor keeps every figure."""

from __future__ import annotations

import pytest

from prefetch_check.model.code import CodeConfig, CodeLimits, check_tree
from tests.test_code_executor import clean, edited, release

LIMITS = CodeLimits(max_seconds=150)
FIRST = CodeLimits(max_seconds=150, stop_on_first=True)
SCHED, RETRIES = "managers/scheduler.py", "mem_cache/storage_prefetch.py"
# the device match is lost before admission and each admission is retracted and readmitted, twice
READMITTED = CodeConfig(ranks=1, pages=1, retries=True, lost_device_pages=1, readmissions=2)
# three requests, the prefetch budget of one, one admitted a round: paced retries fire behind the head
PACED = CodeConfig(ranks=1, requests=3, pages=1, retries=True, capacity_pages=1, batch=1)
# the client aborts the waiting request in round 1 (SCH _release_aborted_request -> tree_cache.finish)
ABORTED = CodeConfig(ranks=1, pages=1, retries=True, abort_round=1)
# the device match lost with no re-issue left (max attempts 0): admitted with the shorter match, as designed
NO_REISSUE = CodeConfig(ranks=1, pages=1, retries=True, lost_device_pages=1, retry_attempts=0)
# req1 arrives in round 1 (CodeConfig.arrival): a full queue it outranks (req0 aborted for it), a full
# queue that refuses it, a priority the server refuses; _add_request_to_queue's checks run as written
ARRIVALS = {a: CodeConfig(ranks=1, requests=2, pages=1, retries=True, arrival_round=1, arrival=a)
            for a in ("preempts", "rejected", "priority_refused")}
PREEMPTED = ARRIVALS["preempts"]

EDITS = {
    # the device-hit-loss re-query skipped: the request is admitted without what storage holds
    "device_hit_loss_requery_skipped": (
        SCHED, READMITTED, "        if not previous_match_len or (\n", "        if True or (\n", "wait_complete_delivers"),
    # the re-issue counts an attempt but issues nothing
    "reissue_issues_nothing": (
        SCHED, READMITTED, "        self._prefetch_kvcache(req, storage_hit_end)\n", "        pass\n",
        "wait_complete_delivers"),
    # the lookup's matched length is not remembered: a later device loss is never noticed
    "lookup_length_forgotten": (
        SCHED, READMITTED, "            req.storage_prefetch_last_match_len = matched_len\n", "            pass\n",
        "wait_complete_delivers"),
    # the abort no longer reaches the cache: its per-request records outlive the request
    "abort_skips_the_cache": (
        SCHED, ABORTED, "        self.tree_cache.finish(req.cache_request_handle, CacheRequestOutcome.ABORT)\n",
        "        pass\n", "request_release"),
    # the device-hit-loss re-query's cap test off by one: a re-issue past the cap
    "reissue_past_the_cap": (
        SCHED, NO_REISSUE, "            >= get_memory().hicache_storage_prefetch_retry_max_attempts\n",
        "            > get_memory().hicache_storage_prefetch_retry_max_attempts\n", "progress"),
    # the request a higher-priority arrival preempts keeps its prefetch and cache records
    "preempted_request_not_released": (
        SCHED, PREEMPTED, "                self._release_aborted_request(candidate_req)\n", "", "request_release"),
    # ... or stays in the waiting queue: admitted after the client was told it was aborted
    "preempted_request_stays_queued": (
        SCHED, PREEMPTED, "                self.waiting_queue.pop(idx)\n", "", "request_release"),
    # a refused priority is reported to the client, and the request is queued and prefetched all the same
    "refused_priority_still_queued": (
        SCHED, ARRIVALS["priority_refused"], "            self.send_abort_output(abort_req, req)\n            return False\n",
        "            self.send_abort_output(abort_req, req)\n            return True\n", "request_release"),
    # pop_ready hands back the request alone, not (request, storage_hit_end)
    "pop_ready_wrong_shape": (
        RETRIES, PACED, "            ready.append((req, retry.storage_hit_end))\n", "            ready.append(req)\n",
        "no_crash"),
}


@pytest.mark.parametrize("config", [READMITTED, PACED], ids=["readmitted", "paced"])  # one per worker
def test_0_5_23_retry_world_runs_the_schedulers_methods_and_is_clean(config):
    srt = release("0.5.23")
    result = check_tree(srt, config, LIMITS, coverage={})
    assert result.exhaustive and not result.not_modelled, (result.bound, result.not_modelled)
    assert clean(result), result.verdicts
    ran = set(result.coverage["lines"].get(SCHED, []))
    assert 3404 in ran or config is READMITTED  # the paced retry fires (_process_storage_prefetch_retries)
    assert 3452 in ran or config is PACED  # the device-hit-loss re-issue (_prefetch_after_device_hit_loss)
    assert 3424 in ran  # _retry_storage_prefetch issues again through _prefetch_kvcache
    if config is PACED:
        assert "wait_complete_delivers" in check_tree(srt, PACED, CodeLimits(max_runs=1)).not_judged


def test_0_5_23_releases_an_aborted_request_and_keeps_its_reissue_cap():
    """The retry world's own judgements (retry_judge.py) hold for the release: an aborted request
    leaves nothing in the cache, and with no re-issue left a lost device match is not re-queried."""
    srt = release("0.5.23")
    for config in (ABORTED, NO_REISSUE):
        result = check_tree(srt, config, LIMITS)
        assert result.exhaustive and clean(result), (config, result.verdicts)
        assert result.verdicts["request_release"] == "VERIFIED" and result.verdicts["progress"] == "VERIFIED"
    assert "wait_complete_delivers" in check_tree(srt, NO_REISSUE, CodeLimits(max_runs=1)).not_judged


@pytest.mark.parametrize("arrival", sorted(ARRIVALS))
def test_0_5_23_ends_a_request_for_an_arrival_as_written_and_is_clean(arrival):
    """The late arrival runs the release's own queue checks (found by their text, not line numbers):
    the preempting arrival aborts the waiting request, the others are refused before their issue."""
    srt = release("0.5.23")
    result = check_tree(srt, ARRIVALS[arrival], LIMITS, coverage={})
    assert result.exhaustive and clean(result), (result.bound, result.verdicts)
    assert result.verdicts["request_release"] == "VERIFIED"
    lines = (srt / SCHED).read_text().splitlines()
    ran = set(result.coverage["lines"][SCHED])
    # (a line that names the path, then the statement at or after it that must have run)
    anchor, statement = {"preempts": ("_release_aborted_request(candidate_req)", "_release_aborted_request(candidate_req)"),
                         "rejected": ('"The request queue is full."', '"The request queue is full."'),
                         "priority_refused": ("Using priority is disabled", "return False")}[arrival]
    start = next(i for i, line in enumerate(lines) if anchor in line)
    at = next(i for i in range(start, len(lines)) if statement in lines[i]) + 1
    assert at in ran, (arrival, at)


def test_0_5_22_sends_the_refusal_through_its_ipc_channel_and_is_clean():
    """0.5.22's _abort_on_queued_limit sends the abort through ipc_channels.send_to_tokenizer (0.5.23:
    send_abort_output); the stand-in's channel records it the same way."""
    srt = release("0.5.22")
    result = check_tree(srt, ARRIVALS["rejected"], LIMITS, coverage={})
    assert result.exhaustive and clean(result), (result.bound, result.verdicts)
    lines = (srt / SCHED).read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if "def _abort_on_queued_limit" in line)
    send = next(i for i in range(start, len(lines)) if "self.ipc_channels.send_to_tokenizer.send_output(" in lines[i]) + 1
    assert send in set(result.coverage["lines"][SCHED])


@pytest.mark.parametrize("name", sorted(EDITS))
def test_a_one_place_edit_of_the_retry_path_is_caught(tmp_path, name):
    rel, config, old, new, prop = EDITS[name]
    result = check_tree(edited(tmp_path, release("0.5.23"), rel, old, new), config, FIRST)
    assert result.verdicts[prop] == "VIOLATED", result.verdicts
    found = result.violations[prop]
    assert found.consequence and found.schedule


def test_a_refactor_of_the_retry_path_keeps_every_figure(tmp_path):
    srt = release("0.5.23")
    refactored = edited(tmp_path, srt, SCHED,
                        "        req.storage_prefetch_retry_attempts += 1\n",
                        "        req.storage_prefetch_retry_attempts = req.storage_prefetch_retry_attempts + 1\n")
    a, b = check_tree(srt, READMITTED, LIMITS, coverage={}), check_tree(refactored, READMITTED, LIMITS)
    assert 3409 in a.coverage["lines"][SCHED]  # the refactored statement ran
    assert a.exhaustive and a.runs > 50  # DPOR: 71 runs (the sleep sets: 205)
    assert (a.verdicts, a.runs, a.states) == (b.verdicts, b.runs, b.states)


def test_0_5_20_reads_the_device_match_as_prefix_indices_and_runs_the_retry_world():
    """0.5.20-0.5.21's scheduler reads len(req.prefix_indices) where 0.5.22 reads prefix_len: the
    same methods otherwise, so the retry world runs them (the case list's retry_shape marker)."""
    srt = release("0.5.20")
    assert "len(req.prefix_indices) + req.host_hit_length" in (srt / SCHED).read_text()
    result = check_tree(srt, READMITTED, LIMITS)
    assert result.exhaustive and not result.not_modelled and clean(result), (result.not_modelled, result.verdicts)
    from prefetch_check.sglang.mappings.ack_drain.retry_shape import retry_skip
    assert retry_skip(srt) == "" and retry_skip(release("0.5.19")) != ""


def test_a_release_without_the_retry_methods_is_refused_by_name():
    result = check_tree(release("0.5.19"), CodeConfig(ranks=1, retries=True), LIMITS)
    assert result.not_modelled and "Scheduler." in result.not_modelled[0], result.not_modelled
    assert "VERIFIED" not in result.verdicts.values()


@pytest.mark.parametrize("fields, names", [
    (dict(arrival_round=1, requests=2), "arrival_round"),  # not the retry world
    (dict(arrival_round=1, requests=1, retries=True), "arrival_round"),  # nobody to arrive late
    (dict(arrival_round=0, requests=2, retries=True), "arrival_round"),  # before the first round
    (dict(arrival="late", requests=2, retries=True), "arrival"),
])
def test_a_late_arrival_the_world_does_not_run_is_refused_naming_the_field(fields, names):
    with pytest.raises(ValueError, match=names):
        CodeConfig(ranks=1, **fields)
