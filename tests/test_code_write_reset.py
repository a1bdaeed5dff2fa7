"""The cache's reset in the write path (CodeConfig(backup=True, reset_round=...),
model/code/worlds/ack_drain/cache_reset.py): buffer_only's (`BackupResetRun`) and cache mode's
(`WriteThroughResetRun`, where the write stream G runs every D2H copy, so a drain may find one
still running). flush_cache asks the tree's own `Scheduler.is_fully_idle` first (flush_gate.py),
which refuses while the cache holds the write (`ongoing_write_through`, `ongoing_backup`, the
pipeline's `is_idle()`), so 0.5.23 as written is clean; an `is_fully_idle` that no longer waits for
write-throughs lets the reset drop a D2H ack unsynchronised, and the copy lands on the host slot a
request after the reset was handed (data_integrity)."""

from __future__ import annotations

import dataclasses

import pytest

from prefetch_check.model.code import CodeConfig, CodeLimits, check_tree
from tests.test_code_executor import clean, edited, release

LIMITS = CodeLimits(max_seconds=150)
SCHEDULER = "managers/scheduler.py"
# the flush asked from round 1, while the computed request's write (inserted as round 1 starts) may
# still be in its D2H copy; a request arrives after the reset
BUFFER = CodeConfig(ranks=1, host_memory_mode="buffer_only", backup=True, reset_round=2)
CACHE_ARRIVAL = CodeConfig(ranks=1, requests=2, backup=True, reset_round=1, reset_arrival=True)
WAITS_FOR_WRITES = "                idle &= len(tc.ongoing_write_through) == 0\n"


def test_the_release_refuses_the_flush_until_its_buffer_only_write_is_done():
    result = check_tree(release("0.5.23"), BUFFER, LIMITS)
    assert result.exhaustive and not result.unreached and clean(result), \
        {k: v.message for k, v in result.violations.items()}


def test_a_gate_that_no_longer_waits_for_write_throughs_lets_a_d2h_copy_land_after_the_reset(tmp_path):
    """What the release's is_fully_idle protects: with its write-through check gone the reset clears
    the write's ack while the copy runs, and the copy overwrites the new request's host slot."""
    tree = edited(tmp_path, release("0.5.23"), SCHEDULER, WAITS_FOR_WRITES, "")
    result = check_tree(tree, CACHE_ARRIVAL, CodeLimits(max_seconds=150, stop_on=("data_integrity",)))
    violation = result.violations["data_integrity"]
    assert "left in flight by the cache's reset, lands in host slot" in violation.message, violation.message
    assert any("D2H not done" in step.observed for step in violation.steps)  # the drain found it running
    assert violation.steps[-1].choice == "G0", violation.steps[-1]


def test_the_write_paths_reset_runs_where_its_world_does():
    with pytest.raises(ValueError, match="reset_round with cache mode's write path: one rank under write_through"):
        dataclasses.replace(CACHE_ARRIVAL, load_back=True, evict_device_round=1)
    with pytest.raises(ValueError, match="reset_round with cache mode's write path"):
        dataclasses.replace(CACHE_ARRIVAL, ranks=2)
    with pytest.raises(ValueError, match="the computed request in one chunk"):
        dataclasses.replace(BUFFER, computed_chunks=2)
    with pytest.raises(ValueError, match="reset_round under buffer_only: one rank"):
        dataclasses.replace(BUFFER, ranks=2)
