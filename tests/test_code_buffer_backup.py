"""buffer_only's write path (CodeConfig(host_memory_mode="buffer_only", backup=True),
model/code/worlds/ack_drain/buffer/backup_run.py): under write_through a request the scheduler
computed is written back through the tree's own BufferModePipeline, the controller's write and
write_storage and its backup thread. 0.5.23's cases run exhaustive and clean, the footprints keep
every state of the unreduced search, and one-place edits of the write side are caught with their
consequence: staging kept after the storage ack, freed at the D2H ack (before the backup thread
read it), the node's lock never given back, and the lock never taken (eviction frees the rows the
D2H copy reads)."""

from __future__ import annotations

from pathlib import Path

import pytest

from prefetch_check.model.code import CodeConfig, CodeLimits, check_tree
from prefetch_check.sglang.mappings.ack_drain.buffer_cases import BUFFER_CASES
from test_code_executor import clean, edited, release

LIMITS = CodeLimits(max_seconds=120)
PIPELINE = "mem_cache/buffer_mode/pipeline.py"
WRITES = [case for case in BUFFER_CASES if case.config.backup]


def backup(**kwargs) -> CodeConfig:
    return CodeConfig(ranks=1, host_memory_mode="buffer_only", backup=True, **kwargs)


# finish_storage_write_ack forgets to free the write's host staging
KEEPS_STAGING = ("        self._free_staging_now(entry.host_indices, entry.aux_xfers)\n"
                 "        self.write_staged_tokens_ -= entry.occupied_units\n",
                 "        self.write_staged_tokens_ -= entry.occupied_units\n")
# finish_backup_ack frees the staging at the D2H ack, before the backup thread reads it for storage
FREES_AT_D2H_ACK = ("        storage_xfers = self._storage_transfers(entry.aux_xfers)\n",
                    "        storage_xfers = self._storage_transfers(entry.aux_xfers)\n"
                    "        self._free_staging_now(entry.host_indices, entry.aux_xfers)\n")
# finish_backup_ack never gives the node's lock back
NO_UNLOCK = ("        self._cache.dec_lock_ref(snapshot.node_id, entry.lock_params)\n", "")
# _stage_backup_intent launches the D2H without locking the node
NO_LOCK = ("        lock_params = cache.inc_lock_ref(snapshot.node_id).to_dec_params()\n",
           "        lock_params = None\n")


def test_the_write_cases_are_twelve_and_run_0_5_22_on():
    assert len(WRITES) == 12
    assert {case.skip(release("0.5.23")) for case in WRITES} == {""}


# every write case but the one under timeout, whose exhaustive search took 24 s of the suite's CPU
# (2026-12-07: the suite at its 15-minute budget): `prefetch-check sglang` runs that case,
# test_code_deadlines.py the deadlines' machinery, test_code_buffer.py buffer_only's read path
# under timeout, and the cases here the write path
UNTIMED = [case for case in WRITES if case.config.policy != "timeout"]


@pytest.mark.parametrize("case", UNTIMED, ids=[case.name for case in UNTIMED])
def test_0_5_23s_write_path_is_exhaustive_and_clean(case):
    result = check_tree(release("0.5.23"), case.config, LIMITS)
    assert result.exhaustive and not result.not_modelled, (result.bound, result.not_modelled)
    assert clean(result), {k: v.message for k, v in result.violations.items()}
    assert result.verdicts["anchor_release"] == "VERIFIED" and result.verdicts["host_memory"] == "VERIFIED"


@pytest.mark.parametrize("kwargs", [dict(), dict(host_pages=2, evict_device_round=2),
                                    dict(computed_chunks=2, host_pages=1, hits=(0,))], ids=["1x1", "swept", "chain"])
def test_the_write_paths_footprints_keep_every_state_of_the_unreduced_search(kwargs):
    """Sleep sets prune transitions, never states: a footprint the write path missed (the storage,
    the host staging the backup thread reads, the write and storage ack lists) would show as fewer."""
    config = backup(**kwargs)
    dfs = check_tree(release("0.5.23"), config, CodeLimits(strategy="dfs", reduce=False, max_seconds=300))
    sleep = check_tree(release("0.5.23"), config, CodeLimits(strategy="sleep", reduce=False, max_seconds=300))
    assert dfs.exhaustive and sleep.exhaustive
    assert sleep.states == dfs.states and sleep.runs < dfs.runs
    assert dfs.verdicts == sleep.verdicts


def test_staging_kept_after_the_storage_ack_is_a_host_leak(tmp_path):
    result = check_tree(edited(tmp_path, release("0.5.23"), PIPELINE, *KEEPS_STAGING), backup(), LIMITS)
    assert result.verdicts["host_memory"] == "VIOLATED", result.verdicts
    assert "still held by no one when every thread is idle" in result.violations["host_memory"].message


def test_staging_freed_at_the_d2h_ack_stores_nothing_and_frees_twice(tmp_path):
    result = check_tree(edited(tmp_path, release("0.5.23"), PIPELINE, *FREES_AT_D2H_ACK), backup(), LIMITS)
    assert result.verdicts["data_integrity"] == "VIOLATED", result.verdicts
    found = result.violations["data_integrity"]
    assert "the backup stores nothing under key q1p0" in found.message and "wrong KV data in storage" in found.consequence
    assert "freed twice" in result.violations["host_memory"].message


def test_a_lock_never_given_back_leaves_the_node_unevictable(tmp_path):
    result = check_tree(edited(tmp_path, release("0.5.23"), PIPELINE, *NO_UNLOCK), backup(), LIMITS)
    assert result.verdicts["anchor_release"] == "VIOLATED", result.verdicts
    assert "still locked by the write path" in result.violations["anchor_release"].message


def test_a_d2h_launched_without_the_lock_reads_rows_eviction_freed(tmp_path):
    result = check_tree(edited(tmp_path, release("0.5.23"), PIPELINE, *NO_LOCK), backup(evict_device_round=2), LIMITS)
    assert result.verdicts["data_integrity"] == "VIOLATED", result.verdicts
    found = result.violations["data_integrity"]
    assert "reads device slot 0, which is free" in found.message and "use after free" in found.consequence


@pytest.mark.parametrize("kwargs", [dict(backup=False, computed_chunks=2), dict(computed_chunks=3),
                                    dict(computed_chunks=0)], ids=["no write path", "more chunks than pages", "none"])
def test_chunks_name_their_bounds(kwargs):
    with pytest.raises(ValueError, match="computed_chunks"):
        CodeConfig(**{"ranks": 1, "host_memory_mode": "buffer_only", "backup": True, **kwargs})


def test_a_chain_of_chunks_is_a_chain_of_writes_each_under_its_parent():
    """Prefilled in two chunks the computed request is two nodes, the second a child of the first:
    both are written (nothing was stored before), and through a 1-page host pool one at a time."""
    config = backup(computed_chunks=2, host_pages=1, hits=(0,))
    result = check_tree(release("0.5.23"), config, LIMITS, coverage={})
    assert result.exhaustive and clean(result), {k: v.message for k, v in result.violations.items()}
    ran = set(result.coverage["lines"][PIPELINE])
    source = (Path(release("0.5.23")) / PIPELINE).read_text().splitlines()
    # the child's admission asks whether its parent is in flight (not the root's shortcut) ...
    assert _line(source, "state.parent_node_id, ()") in ran
    # ... and the 1-page window holds the child back while the parent's staging is out
    assert _line(source, "# Wait for current copies to free staging before rebuilding the head.") + 1 in ran


def _line(source: list[str], text: str) -> int:
    """The 1-based number of the one line of `source` holding text."""
    found = [i + 1 for i, line in enumerate(source) if text in line]
    assert len(found) == 1, (text, found)
    return found[0]


# _backup_oversize at equality: a span exactly the host pool's size is dropped as if it could never stage
OVERSIZE_AT_EQUALITY = ("        return anchor_need > cc.mem_pool_host.size\n",
                        "        return anchor_need >= cc.mem_pool_host.size\n")


def test_a_span_the_pool_fits_exactly_dropped_as_oversize_is_never_stored(tmp_path):
    srt = edited(tmp_path, release("0.5.23"), PIPELINE, *OVERSIZE_AT_EQUALITY)
    result = check_tree(srt, backup(computed_chunks=2, host_pages=1, hits=(0,)), LIMITS)
    assert result.verdicts["progress"] == "VIOLATED", result.verdicts
    assert "its pages ['q1p0'] never stored" in result.violations["progress"].message


def test_a_parent_too_large_for_the_pool_takes_its_child_with_it_by_design():
    """Upstream drops a span that could never stage and every node below it: not a finding."""
    result = check_tree(release("0.5.23"), backup(pages=3, computed_chunks=2, host_pages=1, hits=(0,)), LIMITS)
    assert result.exhaustive and clean(result), {k: v.message for k, v in result.violations.items()}


# the device-covered admission keeps the staged hold (its host staging and the anchor's pin)
KEEPS_COVERED_HOLD = ("        self._clear_storage_hit(req)\n"
                      "        self.release_staged_hold(req.cache_request_handle, reason=\"device_covered\")\n",
                      "        self._clear_storage_hit(req)\n")


def test_a_staged_span_the_device_covers_gives_its_hold_back(tmp_path):
    """Request 0's prefix computed by another request (CodeConfig.computed_shares) while its prefetch
    is staged: admission finds the span on the device and releases the staged hold; kept, the
    staging and the anchor's pin leak."""
    config = backup(computed_shares=True, computed_chunks=2)
    result = check_tree(release("0.5.23"), config, LIMITS, coverage={})
    assert result.exhaustive and clean(result), {k: v.message for k, v in result.violations.items()}
    source = (Path(release("0.5.23")) / PIPELINE).read_text().splitlines()
    assert _line(source, 'reason="device_covered"') in set(result.coverage["lines"][PIPELINE])
    kept = check_tree(edited(tmp_path, release("0.5.23"), PIPELINE, *KEEPS_COVERED_HOLD), config, LIMITS)
    assert "still held by no one" in kept.violations["host_memory"].message
    assert "still pinned" in kept.violations["anchor_release"].message


URC = "mem_cache/unified_radix_cache.py"
HCC = "mem_cache/hybrid_cache/hybrid_cache_controller.py"
# the hit drain's trim of a device-resident head: skipped, or the operation's hash list left untrimmed
TRIM_SKIPPED = (URC, "        self.cache_controller.trim_prefetch_full_head(operation, trim_tokens)\n", "")
HASHES_UNTRIMMED = (HCC, "        operation.hash_value = original_hashes[trim_pages:]\n", "")


@pytest.mark.parametrize("edit", [TRIM_SKIPPED, HASHES_UNTRIMMED], ids=["trim skipped", "hash list untrimmed"])
def test_a_staged_span_the_device_covers_in_part_is_trimmed_and_loaded_after_the_device(tmp_path, edit):
    """Request 0's first page computed by another request (CodeConfig.computed_pages=1): the device
    covers the head of the staged span only, the hit drain trims it off the fetch, and admission loads
    the fetched page after the device's. Clean on the release, with the trim run; an edit that
    leaves the head in the fetch serves the head's page in the next page's slot."""
    config = backup(computed_shares=True, computed_pages=1)
    result = check_tree(release("0.5.23"), config, LIMITS, coverage={})
    assert result.exhaustive and clean(result), {k: v.message for k, v in result.violations.items()}
    source = (Path(release("0.5.23")) / HCC).read_text().splitlines()
    assert _line(source, "operation.hash_value = original_hashes[trim_pages:]") in set(result.coverage["lines"][HCC])
    wrong = check_tree(edited(tmp_path, release("0.5.23"), *edit), config, LIMITS)
    assert "slot 1 (token 1) holds q0p0, not q0p1" in wrong.violations["data_integrity"].message


@pytest.mark.parametrize("kwargs", [dict(computed_pages=3), dict(computed_pages=0), dict(computed_pages=1, computed_chunks=2),
                                    dict(computed_pages=1, backup=False)],
                         ids=["more than pages", "none", "fewer than chunks", "no write path"])
def test_computed_pages_name_their_bounds(kwargs):
    with pytest.raises(ValueError, match="computed_pages"):
        CodeConfig(**{"ranks": 1, "host_memory_mode": "buffer_only", "backup": True, **kwargs})


def test_a_shared_prefix_is_buffer_only_writes():
    with pytest.raises(ValueError, match="computed_shares"):
        CodeConfig(ranks=1, backup=True, computed_shares=True)


def test_the_write_path_runs_without_pp():
    with pytest.raises(ValueError, match="without PP"):
        CodeConfig(ranks=2, pp_size=2, host_memory_mode="buffer_only", backup=True)


def test_under_the_schedulers_own_loop_the_write_path_runs_the_same(tmp_path):
    """With retries=True the tree's Scheduler methods drive the rounds (the loop that also runs the
    timeout policy): the same search on the 1x1 case, and the missing lock caught the same way."""
    own = check_tree(release("0.5.23"), backup(), LIMITS)
    upstream = check_tree(release("0.5.23"), backup(retries=True), LIMITS)
    assert (upstream.runs, upstream.states) == (own.runs, own.states) and clean(upstream)
    srt = edited(tmp_path, release("0.5.23"), PIPELINE, *NO_LOCK)
    result = check_tree(srt, backup(retries=True, evict_device_round=2), LIMITS)
    assert "reads device slot 0, which is free" in result.violations["data_integrity"].message


# behaviour-keeping refactors of the write side: the beliefs fed pool by pool through a helper
# variable, and write_storage reading the operation's number before queueing it
REFACTOR_ACK = ("        for pool, keys in entry.keys_by_pool.items():\n"
                "            pool_beliefs = beliefs.pool(pool)\n"
                "            pool_beliefs.add(keys)\n"
                "            pool_beliefs.untrack_inflight(keys)\n",
                "        for pool in entry.keys_by_pool:\n"
                "            written = entry.keys_by_pool[pool]\n"
                "            beliefs.pool(pool).add(written)\n"
                "            beliefs.pool(pool).untrack_inflight(written)\n")
REFACTOR_WRITE_STORAGE = ("        self.backup_queue.put(operation)\n        return operation.id\n\n    def _storage_hit_query",
                          "        operation_id = operation.id\n        self.backup_queue.put(operation)\n"
                          "        return operation_id\n\n    def _storage_hit_query")


@pytest.mark.parametrize("rel, edit", [(PIPELINE, REFACTOR_ACK),
                                       ("mem_cache/hybrid_cache/hybrid_cache_controller.py", REFACTOR_WRITE_STORAGE)],
                         ids=["pipeline", "controller"])
def test_a_behaviour_keeping_refactor_of_the_write_side_keeps_every_figure(tmp_path, rel, edit):
    config = backup(requests=2, host_pages=2)
    base = check_tree(release("0.5.23"), config, LIMITS)
    again = check_tree(edited(tmp_path, release("0.5.23"), rel, *edit), config, LIMITS)
    assert (again.verdicts, again.runs, again.states) == (base.verdicts, base.runs, base.states)
    assert again.exhaustive and clean(again)
