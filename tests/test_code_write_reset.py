"""The cache's reset in the write path (CodeConfig(backup=True, reset_round=...),
model/code/worlds/ack_drain/cache_reset.py): buffer_only's (`BackupResetRun`) and cache mode's
(`WriteThroughResetRun`). flush_cache waits for no write, so the computed request's write is
dropped by the cache's reset wherever it is, and a D2H copy whose ack the controller's reset clears
lands when the write stream runs it (one more thread, G; in cache mode G runs every D2H copy, so the
drain may find one not done). 0.5.23 as written: the copy may land on a host slot the request
arriving after the reset was handed and its storage read wrote (data_integrity); a reset that
synchronises its write acks first is clean; edits of the pipeline's reset are caught by the write
path's judge."""

from __future__ import annotations

import dataclasses

import pytest

from prefetch_check.model.code import CodeConfig, CodeLimits, check_tree
from tests.test_code_executor import clean, edited, release

LIMITS = CodeLimits(max_seconds=150)
PIPELINE = "mem_cache/buffer_mode/pipeline.py"
CONTROLLER = "managers/cache_controller.py"
# the write's D2H in flight at the flush (round 1: the computed request inserted as the round starts)
AT_D2H = CodeConfig(ranks=1, host_memory_mode="buffer_only", backup=True, reset_round=1)
ARRIVAL = dataclasses.replace(AT_D2H, requests=2, device_pages=1, reset_arrival=True)
CLEARS = "        self.ack_write_queue.clear()\n        self.ack_load_queue.clear()\n"
# the fix: the controller's reset waits for the D2H copies whose acks it drops
SYNCS = ("        for ack in self.ack_write_queue:\n            ack.finish_event.synchronize()\n" + CLEARS)


def test_the_d2h_copy_the_reset_leaves_in_flight_lands_on_the_host_slot_of_a_request_after_it():
    result = check_tree(release("0.5.23"), ARRIVAL, LIMITS)
    assert result.exhaustive and not result.not_modelled and not result.unreached, result.bound
    assert result.verdicts["data_integrity"] == "VIOLATED", result.verdicts
    message = result.violations["data_integrity"].message
    assert "left in flight by the cache's reset, lands in host slot" in message and "(q1p" in message, message
    assert [p for p, v in result.verdicts.items() if v == "VIOLATED"] == ["data_integrity"]


def test_a_reset_that_waits_for_its_write_acks_is_clean(tmp_path):
    result = check_tree(edited(tmp_path, release("0.5.23"), CONTROLLER, CLEARS, SYNCS), ARRIVAL, LIMITS)
    assert result.exhaustive and clean(result), {k: v.message for k, v in result.violations.items()}


# cache mode (the default host memory mode): the same late copy, from 0.5.19
CACHE_ARRIVAL = CodeConfig(ranks=1, requests=2, backup=True, reset_round=1, reset_arrival=True)


@pytest.mark.parametrize("version", ["0.5.19", "0.5.23"])
def test_in_cache_mode_the_write_throughs_d2h_copy_outlives_the_reset_too(version):
    result = check_tree(release(version), CACHE_ARRIVAL, LIMITS)
    assert result.exhaustive and not result.not_modelled and not result.unreached, result.bound
    assert [p for p, v in result.verdicts.items() if v == "VIOLATED"] == ["data_integrity"], result.verdicts
    violation = result.violations["data_integrity"]
    assert "left in flight by the cache's reset, lands in host slot 0" in violation.message, violation.message
    # the drain asked the copy and found it running, so its ack outlived the round into the flush
    assert any("D2H not done" in step.observed for step in violation.steps)
    assert violation.steps[-1].choice == "G0", violation.steps[-1]


def test_in_cache_mode_a_reset_that_waits_for_its_write_acks_is_clean(tmp_path):
    result = check_tree(edited(tmp_path, release("0.5.23"), CONTROLLER, CLEARS, SYNCS), CACHE_ARRIVAL, LIMITS)
    assert result.exhaustive and clean(result), {k: v.message for k, v in result.violations.items()}


def test_in_cache_mode_without_a_request_after_it_the_late_copy_harms_nothing():
    result = check_tree(release("0.5.23"), dataclasses.replace(CACHE_ARRIVAL, requests=1, reset_arrival=False), LIMITS)
    assert result.exhaustive and clean(result), {k: v.message for k, v in result.violations.items()}
    assert result.verdicts["host_memory"] == "VERIFIED"


def test_without_a_request_after_it_the_late_copy_harms_nothing():
    """It lands on free host memory, or on staging nobody wrote since the reset."""
    result = check_tree(release("0.5.23"), AT_D2H, LIMITS)
    assert result.exhaustive and clean(result), {k: v.message for k, v in result.violations.items()}
    assert result.verdicts["host_memory"] == result.verdicts["anchor_release"] == "VERIFIED"


# the pipeline's reset keeping one of the write side's books (its __init__ calls reset, so each keeps
# what it had instead of dropping the line)
KEEPS = {
    "write staging books": ("        self.write_staged_tokens_ = 0\n",
                            "        self.write_staged_tokens_ = getattr(self, 'write_staged_tokens_', 0)\n",
                            "host_memory", "write_staged_tokens_ is 2 with no write staged"),
    "nodes believed in flight": (
        "        self.inflight_backup_pools: dict[NodeId, set[PoolName]] = {}\n",
        "        self.inflight_backup_pools: dict[NodeId, set[PoolName]] = getattr(self, 'inflight_backup_pools', {})\n",
        "progress", "believed in flight with no write queued"),
    "the D2H's entry": (
        "        self.ongoing_write_through: dict[int, _UnifiedBufferBackupEntry] = {}\n",
        "        self.ongoing_write_through: dict[int, _UnifiedBufferBackupEntry] = getattr(self, "
        "'ongoing_write_through', {})\n", "host_memory", "staged and never acked"),
}


@pytest.mark.parametrize("name", list(KEEPS))
def test_a_pipeline_reset_that_keeps_a_write_book_is_caught(tmp_path, name):
    old, new, prop, message = KEEPS[name]
    result = check_tree(edited(tmp_path, release("0.5.23"), PIPELINE, old, new), AT_D2H, LIMITS)
    assert result.exhaustive and result.verdicts[prop] == "VIOLATED", result.verdicts
    assert message in result.violations[prop].message, result.violations[prop].message


def test_the_write_paths_reset_runs_where_its_world_does():
    with pytest.raises(ValueError, match="reset_round with cache mode's write path: one rank under write_through"):
        dataclasses.replace(CACHE_ARRIVAL, load_back=True, evict_device_round=1)
    with pytest.raises(ValueError, match="reset_round with cache mode's write path"):
        dataclasses.replace(CACHE_ARRIVAL, ranks=2)
    with pytest.raises(ValueError, match="the computed request in one chunk"):
        dataclasses.replace(AT_D2H, computed_chunks=2)
    with pytest.raises(ValueError, match="reset_round under buffer_only: one rank"):
        dataclasses.replace(AT_D2H, ranks=2)
