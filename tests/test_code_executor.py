"""The executor on real releases (fetched once into the user's cache; skipped with the reason when
the package index is unreachable and the release is not cached): 0.5.23's own code is clean at
1x1 and 2x1, 0.5.19's uncaught storage exception kills a prefetch thread and hangs its peer, and
one-place edits of 0.5.23 applied here are caught. The code runs only in the executor's child."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from prefetch_check.model.code import CodeConfig, CodeLimits, check_tree, replay
from prefetch_check.sglang.cache import cache_root
from prefetch_check.sglang.errors import SglangSourceError
from prefetch_check.sglang.fetch import fetch_release

LIMITS = CodeLimits(max_seconds=120)
JUDGED = ("wait_complete_delivers", "tp_agreement", "host_memory", "data_integrity", "no_crash", "progress",
          "deadlock_freedom")


def release(version: str) -> Path:
    try:
        srt = fetch_release(version, cache_root())
    except SglangSourceError as exc:
        pytest.skip(f"package index not reachable and {version} not cached: {exc}")
    if not (srt / "mem_cache/unified_radix_cache.py").is_file():
        pytest.skip(f"{version}: the cached release lacks the unified cache")
    return srt


def edited(tmp_path: Path, srt: Path, rel: str, old: str, new: str) -> Path:
    """A copy of the release's files with one edit, which must apply exactly once. The files are
    hard links where the file system allows (a release is 2,142 files, 40 MB, and the suite makes
    over a hundred copies): the edited file is unlinked and written anew, never through its link,
    so the release in the cache is never changed."""
    dest = tmp_path / "sglang" / "srt"
    shutil.copytree(srt, dest, copy_function=_link_or_copy)
    text = (dest / rel).read_text(encoding="utf-8")
    assert text.count(old) == 1, f"the edit of {rel} no longer applies once ({text.count(old)} matches)"
    (dest / rel).unlink()
    (dest / rel).write_text(text.replace(old, new), encoding="utf-8")
    return dest


def _link_or_copy(src: str, dst: str) -> None:
    try:
        os.link(src, dst)
    except OSError:  # another file system, or links refused: a copy
        shutil.copy2(src, dst)


def clean(result) -> bool:
    return all(result.verdicts[p] == "VERIFIED" for p in JUDGED if p not in result.not_judged)


@pytest.mark.parametrize("ranks", [1, 2])
def test_0_5_23_is_clean_and_exhausted_at_one_request(ranks):
    result = check_tree(release("0.5.23"), CodeConfig(ranks=ranks), LIMITS)
    assert result.exhaustive and not result.not_modelled, (result.bound, result.not_modelled)
    assert clean(result), result.verdicts
    # more than a handful of schedules (DPOR at one rank: 21 runs, 127 states; 2 ranks: 408, 1,135)
    assert result.verdicts["operation_identity"] == "NOT JUDGED" and result.runs > 15 and result.states > 100


def test_0_5_19_storage_exception_kills_the_prefetch_thread_and_its_peer_hangs():
    srt = release("0.5.19")
    config = CodeConfig(ranks=2, query_raises=(True, False))
    result = check_tree(srt, config, LIMITS)
    assert result.exhaustive
    crash, hang = result.violations["no_crash"], result.violations["progress"]
    # no rank is deadlocked: both schedulers go on; the peer's prefetch thread hangs (the model's verdicts)
    assert result.verdicts["deadlock_freedom"] == "VERIFIED"
    assert crash.message.startswith("P0 (rank 0 prefetch thread) died: StorageUnavailable")
    assert crash.site.startswith("mem_cache/hybrid_cache/hybrid_cache_controller.py:")
    assert hang.message.startswith("P1 waits forever in all_reduce(MIN) leave P-hits at managers/cache_controller.py:")
    # the counterexample is data: its choice list replays to the same end
    again = replay(srt, config, hang.schedule)
    assert again["end"] == "terminal"
    assert any(f["prop"] == "progress" and f["message"] == hang.message for f in again["findings"])
    assert [s["choice"] for s in again["steps"]] == hang.schedule
    assert any(s.site.startswith("managers/cache_controller.py:") for s in hang.steps)


def test_0_5_23_catches_the_same_storage_exception():
    result = check_tree(release("0.5.23"), CodeConfig(ranks=2, query_raises=(True, False)), LIMITS)
    assert result.exhaustive and clean(result), result.verdicts
    assert "wait_complete_delivers" in result.not_judged  # a disturbed request: the model does not judge it


EDITS = {
    # the sync thread agrees on the largest progress instead of the smallest
    "ack_max": ("managers/cache_controller.py",
                "                torch.distributed.ReduceOp.MIN,\n                self.prefetch_completion_sync_groups,",
                "                torch.distributed.ReduceOp.MAX,\n                self.prefetch_completion_sync_groups,",
                CodeConfig(ranks=2, failing=((1,), ())), "data_integrity"),
    # the hit sync returns before its collective on a miss
    "return_before_collective": ("mem_cache/hybrid_cache/hybrid_cache_controller.py",
                                 "    def _sync_prefetch_hit_query(self, operation, storage_hit_count: int) -> int:\n",
                                 "    def _sync_prefetch_hit_query(self, operation, storage_hit_count: int) -> int:\n"
                                 "        if storage_hit_count == 0:\n            return 0\n",
                                 CodeConfig(ranks=2, hits=(0, 2)), "progress"),
    # the hit drain hands the operation to IO before it has its host slots
    "publish_before_alloc": ("mem_cache/unified_radix_cache.py",
                             "            operation.host_indices = host_indices\n"
                             "            self.ongoing_prefetch[request] = info._replace(host_indices=host_indices)\n"
                             "            cc.prefetch_buffer.put(operation)\n",
                             "            cc.prefetch_buffer.put(operation)\n"
                             "            operation.host_indices = host_indices\n"
                             "            self.ongoing_prefetch[request] = info._replace(host_indices=host_indices)\n",
                             CodeConfig(ranks=2), "no_crash"),
}


@pytest.mark.parametrize("name", sorted(EDITS))
def test_a_one_place_edit_of_0_5_23_is_caught_at_two_ranks(tmp_path, name):
    rel, old, new, config, prop = EDITS[name]
    srt = release("0.5.23")
    assert clean(check_tree(srt, config, LIMITS))  # the release itself is clean there
    result = check_tree(edited(tmp_path, srt, rel, old, new), config, LIMITS)
    assert result.verdicts[prop] == "VIOLATED", (name, result.verdicts)
    assert result.violations[prop].consequence and result.violations[prop].schedule


def not_modelled_message(srt: Path, config: CodeConfig) -> str:
    """The one "not modelled" message of a check that stopped there, having judged nothing."""
    result = check_tree(srt, config, LIMITS)
    assert not result.exhaustive and result.bound == "a path not modelled"
    (message,) = result.not_modelled
    assert "VERIFIED" not in result.verdicts.values() and not result.violations, result.verdicts
    return message


def test_a_call_outside_the_model_is_reported_not_guessed(tmp_path):
    srt = edited(tmp_path, release("0.5.23"), "managers/cache_controller.py",
                 "                operation = self.prefetch_queue.get(block=True, timeout=1)\n",
                 "                operation = self.prefetch_queue.get(block=True, timeout=1)\n"
                 "                get_parallel()\n")
    message = not_modelled_message(srt, CodeConfig(ranks=1))
    assert message.startswith("not modelled: sglang.srt.runtime_context.get_parallel at managers/cache_controller.py:")


FOUND = CodeLimits(max_seconds=120, stop_on=("operation_identity",))


@pytest.mark.parametrize("version", ["0.5.19", "0.5.23"])
def test_a_request_prefetched_again_meets_its_old_operations_late_steps(version):
    """best_effort admits a request at its first check while its operation is still in flight; a
    retracted request then prefetches again under the same key. The old, terminated operation's hit
    revokes the new one: the hit drain matches by rid (0.5.19) or by handle (0.5.23, 3165)."""
    result = check_tree(release(version), CodeConfig(ranks=1, policy="best_effort", reissue=True), FOUND)
    found = result.violations["operation_identity"]
    assert found.message == "revoke_pending_prefetch for r0.op0 acts on r0.op1, a newer operation of the same request"
    assert found.site.startswith("mem_cache/unified_radix_cache.py:")
    assert result.bound == "stopped once operation_identity were violated" and not result.exhaustive


def test_0_5_19_applies_the_old_operations_completion_to_the_new_one():
    """0.5.19's ACK drain tests the rid, not the operation (19:2372-2393): the old operation's
    completed_req is handled with the new entry, whose host_indices is still None (19:1929-1932)."""
    limits = CodeLimits(max_seconds=150, stop_on=("no_crash",))
    result = check_tree(release("0.5.19"), CodeConfig(ranks=1, pages=1, policy="best_effort", reissue=True), limits)
    crash = result.violations["no_crash"]
    assert crash.message == "S0 (rank 0 scheduler thread) died: TypeError: 'NoneType' object is not subscriptable"
    assert crash.site == "mem_cache/unified_radix_cache.py:1932"
    assert any(s.site.startswith("mem_cache/unified_radix_cache.py:") and "ack" in s.observed for s in crash.steps)
    assert result.verdicts["operation_identity"] == "VIOLATED"


def test_under_wait_complete_a_prefetch_again_finds_nothing_stale():
    result = check_tree(release("0.5.23"), CodeConfig(ranks=1, reissue=True), LIMITS)
    assert result.exhaustive and clean(result) and result.verdicts["operation_identity"] == "VERIFIED"


def test_a_thread_stopped_as_not_modelled_gives_no_other_verdict():
    # the second request's allocation must evict the first's pages from the host tree (an empty tree
    # evicts nothing, as upstream's: a pool of 1 page for 1 request of 2 is a partial allocation)
    result = check_tree(release("0.5.23"), CodeConfig(ranks=1, requests=2, host_pages=2), LIMITS)
    assert result.not_modelled == ["not modelled: tree_core.drive_host_eviction of host pages the tree holds "
                                   "at mem_cache/unified_radix_cache.py:1441"]
    assert not result.violations and "VERIFIED" not in result.verdicts.values()


def test_aborts_are_clean_in_0_5_23_and_a_dropped_tail_release_leaks(tmp_path):
    """abort_round=1: the request is aborted in the round its hit is drained (allocated, IO under
    way); the tail comes back through the completed_req ACK. Without that release the slots leak."""
    srt = release("0.5.23")
    config = CodeConfig(ranks=1, abort_round=1)
    result = check_tree(srt, config, LIMITS)
    assert result.exhaustive and clean(result) and "wait_complete_delivers" in result.not_judged
    leaky = edited(tmp_path, srt, "mem_cache/unified_radix_cache.py",
                   "                    if operation.ack_releases_incomplete_host_indices:\n",
                   "                    if False:\n")
    found = check_tree(leaky, config, LIMITS).violations["host_memory"]
    assert found.message == "rank 0: host slots [0, 1] still held by no one when every thread is idle"
    assert found.consequence.startswith("host memory leaked")



@pytest.mark.parametrize("edit", [None, "return_before_collective"])
def test_the_rank_persistent_set_changes_no_verdict(tmp_path, edit):
    """Cross-check of the reduction on a configuration small enough to search without it (rank 0
    misses, rank 1 holds its one page). It once exposed a probe that mixed up the ranks' drains."""
    srt = release("0.5.23")
    if edit is not None:
        rel, old, new, _, _ = EDITS[edit]
        srt = edited(tmp_path, srt, rel, old, new)
    config = CodeConfig(ranks=2, pages=1, hits=(0, 1))
    reduced = check_tree(srt, config, LIMITS)
    full = check_tree(srt, config, CodeLimits(max_seconds=120, reduce=False))
    assert reduced.exhaustive and full.exhaustive
    assert reduced.verdicts == full.verdicts
    assert reduced.states < full.states


def test_an_edited_copy_never_changes_the_cached_release(tmp_path):
    """edited() links the release's files: the edited one must be written anew, not through its link."""
    srt = release("0.5.23")
    rel = "mem_cache/unified_radix_cache.py"
    before = (srt / rel).read_text(encoding="utf-8")
    copy = edited(tmp_path, srt, rel, "def prefetch_from_storage(", "def prefetch_from_storage_edited(")
    assert "prefetch_from_storage_edited(" in (copy / rel).read_text(encoding="utf-8")
    assert (srt / rel).read_text(encoding="utf-8") == before
