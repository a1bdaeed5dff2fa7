"""The unit-level reproductions of docs/findings.md (docs/repro/*.py), run against real releases in
the executor's child (the tree's prefetch-path files as written, the executor's stubs for torch and
the rest; never in this process): each shows its fault on the releases the finding names, and
stops showing it once the fix docs/findings.md gives is applied (so the script tests the fault,
not its own set-up). Releases are fetched once into the user's cache; skipped with the reason when
the index is unreachable and the release is not cached."""

from __future__ import annotations

from pathlib import Path

import pytest

from prefetch_check.model.code.runner import run_unit_script
from prefetch_check.sglang.cache import cache_root
from prefetch_check.sglang.errors import SglangSourceError
from prefetch_check.sglang.fetch import fetch_release
from tests.test_code_executor import edited

REPRO = Path(__file__).parents[1] / "docs" / "repro"
STALE_HIT = REPRO / "stale_hit_revokes_new_prefetch.py"
# the fix docs/findings.md gives: the hit drain skips a hit whose operation is not the request's current one
# (0.5.19 looks the entry up by the request's rid, 0.5.20 on by its handle)
HIT_DRAIN = "                info = self.ongoing_prefetch.get({key})\n                if info is None:\n"
HIT_DRAIN_FIXED = ("                info = self.ongoing_prefetch.get({key})\n"
                   "                if info is not None and info.operation is not operation:\n"
                   "                    continue\n"
                   "                if info is None:\n")


def release(version: str) -> Path:
    try:
        return fetch_release(version, cache_root())
    except SglangSourceError as exc:
        pytest.skip(f"package index not reachable and {version} not cached: {exc}")


@pytest.mark.parametrize("version", ["0.5.19", "0.5.20", "0.5.23"])
def test_a_stale_hit_revokes_the_readmitted_requests_new_prefetch(version):
    answer = run_unit_script(release(version), STALE_HIT)
    assert answer["exit"] == 1 and not answer["error"], answer
    assert answer["stdout"].startswith("REPRODUCED: the old operation's late hit revoked"), answer["stdout"]
    assert "with 0 token(s) loaded; B then found 1 token(s) in storage" in answer["stdout"]


@pytest.mark.parametrize("version,key", [("0.5.19", "req_id"), ("0.5.23", "request")])
def test_the_stale_hit_is_not_reproduced_once_the_hit_drain_checks_the_operation(tmp_path, version, key):
    fixed = edited(tmp_path, release(version), "mem_cache/unified_radix_cache.py", HIT_DRAIN.format(key=key),
                   HIT_DRAIN_FIXED.format(key=key))
    answer = run_unit_script(fixed, STALE_HIT)
    assert answer == {"exit": 0, "error": "",
                      "stdout": "not reproduced: the request's new prefetch survived the old operation's hit\n"}


def test_a_script_that_raises_is_answered_with_its_traceback_not_a_verdict(tmp_path):
    script = tmp_path / "broken.py"
    script.write_text("from sglang.srt.mem_cache.unified_radix_cache import UnifiedRadixCache\n"
                      "UnifiedRadixCache.__new__(UnifiedRadixCache).check_prefetch_progress(None)\n")
    answer = run_unit_script(release("0.5.23"), script)
    assert answer["exit"] == 2 and "AttributeError" in answer["error"] and answer["stdout"] == "", answer


QUERY_RAISES = REPRO / "storage_query_raises_ends_prefetch_thread.py"


@pytest.mark.parametrize("version, shown", [("0.5.19", True), ("0.5.21", True), ("0.5.22", False)])
def test_a_raising_storage_query_ends_the_prefetch_thread_until_0_5_22_catches_it(version, shown):
    answer = run_unit_script(release(version), QUERY_RAISES)
    assert not answer["error"] and answer["exit"] == int(shown), answer
    if shown:
        assert answer["stdout"].startswith("REPRODUCED: the storage backend's exception (storage backend "
                                           "unreachable) ended prefetch_thread_func: 0 of 2 operations"), answer
    else:  # 0.5.22's loop catches it and counts the query as a miss: both operations go on
        assert answer["stdout"] == ("not reproduced: the failed query was caught; 2 of 2 operations reached "
                                    "prefetch_hit_queue\n"), answer


STALE_ACK = REPRO / "stale_ack_handles_new_prefetch.py"
# 0.5.20's way: the ACK drain handles a completed_req only for the request's current operation
ACK_DRAIN = "                if ack.completed_req:\n                    if operation.request_id in self.ongoing_prefetch:\n"
ACK_DRAIN_FIXED = ("                if ack.completed_req:\n                    if getattr(self.ongoing_prefetch.get("
                   "operation.request_id), \"operation\", None) is operation:\n")


def test_0_5_19_applies_a_stale_completion_ack_to_the_new_prefetch_and_its_scheduler_raises(tmp_path):
    answer = run_unit_script(release("0.5.19"), STALE_ACK)
    assert answer["exit"] == 1 and not answer["error"], answer
    assert "the scheduler thread raises TypeError ('NoneType' object is not subscriptable)" in answer["stdout"]
    fixed = edited(tmp_path, release("0.5.19"), "mem_cache/unified_radix_cache.py", ACK_DRAIN, ACK_DRAIN_FIXED)
    answer = run_unit_script(fixed, STALE_ACK)
    assert answer["exit"] == 0 and "left the request's new prefetch alone (its entry kept)" in answer["stdout"], answer


STALE_ACK_INSERT = REPRO / "stale_ack_inserts_unwritten_slot.py"


# 0.5.20's way for the progress ACK too: its count is applied only to the request's current operation
COUNT_DRAIN = "                if ack.completed_tokens is not None:\n                    if operation.request_id in self.ongoing_prefetch:\n"
COUNT_DRAIN_FIXED = ("                if ack.completed_tokens is not None:\n                    if getattr(self.ongoing_prefetch."
                     "get(operation.request_id), \"operation\", None) is operation:\n")


def test_0_5_19s_stale_acks_insert_a_slot_io_never_wrote_and_leak_the_old_ones(tmp_path):
    """The same finding's data_integrity and host_memory schedules: the new operation's hit drained
    first, the old completion ACK inserts the new operation's slot, which IO has not written, and the
    old count leaks the old slot. Guarding the completed_req ACK alone leaves the leak (the count
    ACK still raises the old operation's count); 0.5.20's guard on both ends both."""
    answer = run_unit_script(release("0.5.19"), STALE_ACK_INSERT)
    assert answer["exit"] == 1 and not answer["error"], answer
    assert "host slot(s) [1] inserted into the tree" in answer["stdout"] and "A's slot(s) [0] neither free" in answer["stdout"]
    req_only = edited(tmp_path / "req", release("0.5.19"), "mem_cache/unified_radix_cache.py", ACK_DRAIN, ACK_DRAIN_FIXED)
    answer = run_unit_script(req_only, STALE_ACK_INSERT)
    assert answer["exit"] == 1 and "host slot(s) [] inserted" in answer["stdout"] and "A's slot(s) [0]" in answer["stdout"]
    both = edited(tmp_path / "both", req_only, "mem_cache/unified_radix_cache.py", COUNT_DRAIN, COUNT_DRAIN_FIXED)
    answer = run_unit_script(both, STALE_ACK_INSERT)
    assert answer == {"exit": 0, "error": "",
                      "stdout": "not reproduced: the tree got host slots [], all written by IO; leaked: []\n"}, answer


THRESHOLD_ZERO = REPRO / "threshold_zero_never_admits.py"
# a fix: the drain revokes a hit below one page whatever the threshold
THRESHOLD_TEST = "                if operation.storage_hit_count < self.prefetch_threshold:\n"
THRESHOLD_TEST_FIXED = "                if operation.storage_hit_count < max(self.prefetch_threshold, self.page_size):\n"


def test_0_5_18_at_threshold_zero_never_admits_a_request_storage_does_not_hold(tmp_path):
    answer = run_unit_script(release("0.5.18"), THRESHOLD_ZERO, world="predicate-poll")
    assert answer["exit"] == 1 and not answer["error"], answer
    assert "answered False in all 1000 rounds" in answer["stdout"] and "hash_value=[]" in answer["stdout"]
    fixed = edited(tmp_path, release("0.5.18"), "mem_cache/hiradix_cache.py", THRESHOLD_TEST, THRESHOLD_TEST_FIXED)
    answer = run_unit_script(fixed, THRESHOLD_ZERO, world="predicate-poll")
    assert answer == {"exit": 0, "error": "", "stdout": "not reproduced: the request was admitted in round 1\n"}


RESET_STRANDS = REPRO / "reset_strands_sync_thread.py"


@pytest.mark.parametrize("version, how", [("0.5.20", "has not returned after 15 s"),
                                          ("0.5.23", "raised RuntimeError (Failed to stop HiCache storage threads "
                                                     "cleanly.)")])
def test_a_reset_at_two_ranks_strands_a_sync_thread_in_its_all_reduce(version, how):
    """Real threads, the release's own thread functions and reset; about 10 s (0.5.23: the join's
    timeout) and 15 s (0.5.20: the script's wait for a reset that never returns)."""
    answer = run_unit_script(release(version), RESET_STRANDS)
    assert answer["exit"] == 1 and not answer["error"], answer
    assert answer["stdout"].startswith(f"REPRODUCED: rank 0's reset {how}"), answer["stdout"]
    assert "all_reduce" in answer["stdout"] and "rank 1's sync thread left" in answer["stdout"]


# ---- the report points at them (prefetch_check/sglang/known_findings.py)

def test_every_known_finding_names_a_script_and_a_section_that_exist():
    from prefetch_check.sglang.known_findings import KNOWN
    from tests.test_doc_links import anchors

    sections = anchors(REPRO.parent / "findings.md")
    for known in KNOWN:
        assert (REPRO / known.script).is_file() and known.anchor in sections, known
    scripts = {p.name for p in REPRO.glob("*.py")} - {"stand_ins.py"}  # their shared stand-ins are no script
    assert {k.script for k in KNOWN} == scripts  # and every script is pointed at


def test_a_violation_of_an_unmodified_release_says_where_its_reproduction_is_and_an_edited_tree_does_not():
    from types import SimpleNamespace

    from prefetch_check.sglang.report import code_verdict

    v = SimpleNamespace(case="1 rank, prefetched again, best_effort", steps=28, reason="revoked", site="x.py:1",
                        consequence="a prefetch lost")
    release_row = SimpleNamespace(label="0.5.23", path_differs=[], srt=Path("/r/0.5.23/sglang/srt"))
    said = code_verdict(release_row, "operation_identity", v).cases[0].reproduction
    assert said.startswith("docs/repro/stale_hit_revokes_new_prefetch.py") and "docs/findings.md#a-stale-hit" in said
    edited_row = SimpleNamespace(label="/work/my-sglang", path_differs=["mem_cache/unified_radix_cache.py"],
                                 srt=Path("/work/my-sglang/sglang/srt"))
    assert code_verdict(edited_row, "operation_identity", v).cases[0].reproduction == ""
    assert code_verdict(SimpleNamespace(label="0.5.18", path_differs=[], srt=Path("/r")), "operation_identity",
                        v).cases[0].reproduction == ""  # no reproduction for a release the script was not run on
    v.case = "1 rank, best_effort"
    assert code_verdict(release_row, "operation_identity", v).cases[0].reproduction == ""  # nor in another case


ABORT_KEEPS = REPRO / "abort_keeps_loaded_tokens.py"
# the fix docs/findings.md gives (0.5.21's): pop the records by the request's handle, their key
RELEASE_BY_RID = ("        self.prefetch_loaded_tokens_by_reqid.pop(rid, None)\n"
                  "        self.prefetch_loaded_storage_start_by_reqid.pop(rid, None)\n")
RELEASE_BY_HANDLE = ("        self.prefetch_loaded_tokens_by_reqid.pop(request, None)\n"
                     "        self.prefetch_loaded_storage_start_by_reqid.pop(request, None)\n")


@pytest.mark.parametrize("version, shown", [("0.5.20", True), ("0.5.23", False)])
def test_an_aborted_requests_loaded_tokens_outlive_it_on_0_5_20_only(version, shown):
    answer = run_unit_script(release(version), ABORT_KEEPS)
    assert not answer["error"] and answer["exit"] == int(shown), answer
    if shown:
        assert answer["stdout"].startswith("REPRODUCED: after the abort the cache still holds req0 in "
                                           "prefetch_loaded_tokens_by_reqid, prefetch_loaded_storage_start_by_reqid; "
                                           "a new request under the same rid is admitted with the aborted one's "
                                           "loaded span (1, 0)"), answer


def test_the_aborted_requests_records_are_dropped_once_popped_by_its_handle(tmp_path):
    fixed = edited(tmp_path, release("0.5.20"), "mem_cache/unified_radix_cache.py", RELEASE_BY_RID, RELEASE_BY_HANDLE)
    answer = run_unit_script(fixed, ABORT_KEEPS)
    assert answer == {"exit": 0, "error": "", "stdout": "not reproduced: release_aborted_request dropped the "
                                                       "aborted request's loaded-token records\n"}, answer
