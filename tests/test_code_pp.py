"""PP > 1 in the code engine (CodeConfig.pp_size, model/code/worlds/ack_drain/stages.py): the
release's own `_all_reduce` / `_pp_sync` (the first stage decides, later stages receive its value
and pass it on), `_drain_async_work`, the drain taking the first stage's counts and, under
timeout, only the first stage evaluating its deadline. 0.5.23, 0.5.22 and 0.5.19 are clean and
exhausted with their PP lines run; one-place edits of that code applied here are each caught with
their consequence; the sleep-set search keeps every state of the unreduced DFS (the point-to-point
channel records its footprint); a behaviour-keeping refactor keeps every figure."""

from __future__ import annotations

import pytest

from prefetch_check.model.code import CodeConfig, CodeLimits, check_tree
from test_code_executor import clean, edited, release

LIMITS = CodeLimits(max_seconds=600)  # the timeout case: 16,917 runs, 48 s on one core
FIRST = CodeLimits(max_seconds=120, stop_on_first=True)
URC = "mem_cache/unified_radix_cache.py"
PP2 = CodeConfig(ranks=2, pp_size=2)  # 2 stages of 1 rank
# timeout: stage 0's deadline fires as a choice of the search; one page, stored nowhere
PP2_TIMEOUT = CodeConfig(ranks=2, pp_size=2, pages=1, policy="timeout", hits=(0, 0))
PP2_ABORT = CodeConfig(ranks=2, pp_size=2, abort_round=1)

# release -> name -> (file, configuration, old text, new text, the property that catches it)
EDITS = {
    "0.5.23": {
        # the later stage never receives the first stage's counts: it drains nothing, its hit is
        # never allocated, and the first stage's sync thread waits for it forever
        "pp_sync_skips_the_recv": (
            URC, PP2, "        if self.pp_rank > 0:\n            torch.distributed.recv(",
            "        if self.pp_rank > 1:\n            torch.distributed.recv(", "progress"),
        # the later stage receives from itself: it waits forever in its recv
        "pp_sync_receives_from_itself": (
            URC, PP2, "                group_src=self.pp_rank - 1,\n", "                group_src=self.pp_rank,\n",
            "deadlock_freedom"),
        # the last stage sends past the end of the pipeline: torch refuses the peer, the scheduler dies
        "pp_sync_sends_past_the_last_stage": (
            URC, PP2, "        if self.pp_rank + 1 < self.pp_size:\n", "        if self.pp_rank + 1 <= self.pp_size:\n",
            "no_crash"),
        # a later stage's zero placeholder one slot short: it receives the first stage's longer vector
        "pp_placeholder_one_slot_short": (
            URC, PP2, "                (0,) * (4 + len(extra_pool_names)) if self.enable_storage else ()\n",
            "                (0,) * (3 + len(extra_pool_names)) if self.enable_storage else ()\n", "tp_agreement"),
        # a later stage drains only what it holds instead of the first stage's count: what arrives
        # late is never drained there, and its peers wait for it
        "pp_drain_takes_its_own_count": (
            URC, PP2, "                for _ in range(n):\n", "                for _ in range(min(n, q.qsize())):\n",
            "progress"),
        # the wrong stage evaluates the deadline: the stage whose value travels never does
        "pp_deadline_decided_by_stage_1": (
            URC, PP2_TIMEOUT, "            if self.pp_rank == 0:\n                should_terminate = self._prefetch_deadline_expired(",
            "            if self.pp_rank == 1:\n                should_terminate = self._prefetch_deadline_expired(",
            "progress"),
    },
}
# 0.5.22: the same PP code (its deadline edit is left out: the deadline runs from the issue, and a
# check that no longer reads the clock is not judged by worlds/deadlines.py)
EDITS["0.5.22"] = {name: edit for name, edit in EDITS["0.5.23"].items() if name != "pp_deadline_decided_by_stage_1"}
# 0.5.19: check_hicache_events takes its own PP branch (two reductions a round: the finish
# counts, then drain_storage_control_queues' queue sizes)
EDITS["0.5.19"] = {
    name: EDITS["0.5.23"][name] for name in ("pp_sync_skips_the_recv", "pp_sync_receives_from_itself",
                                             "pp_sync_sends_past_the_last_stage", "pp_drain_takes_its_own_count")}
EDITS["0.5.19"]["pp_queue_sizes_not_passed_down"] = (
    URC, PP2, "        self._all_reduce(qsizes, torch.distributed.ReduceOp.MIN)\n",
    "        self._all_reduce_attn_groups(qsizes, torch.distributed.ReduceOp.MIN)\n", "progress")
# the PP lines each release's clean cases must run: _all_reduce's stage branch, _pp_sync's recv and
# isend, _drain_async_work's wait, and the later stage's zero placeholders (0.5.23 also the first
# stage's deadline vote under timeout)
LINES = {
    "0.5.23": (385, 386, 389, 395, 396, 402, 403, 404, 410, 372, 373, 3419, 3420, 3424, 2306, 2307, 2311),
    "0.5.22": (357, 358, 359, 367, 368, 374, 375, 376, 382, 3275, 3276),
    "0.5.19": (324, 325, 326, 334, 335, 341, 342, 343, 349, 2807, 2808, 2809, 2816, 2820),
}


TIMEOUT_LINES = {"0.5.23": (2306, 2307, 2311)}  # the first stage's deadline vote (0.5.23's LINES: under timeout)


@pytest.mark.parametrize("version,timeout", [("0.5.23", False), ("0.5.23", True), ("0.5.22", False), ("0.5.19", False)])
def test_the_releases_pp_code_runs_as_written_and_is_clean(version, timeout):
    config = PP2_TIMEOUT if timeout else PP2
    result = check_tree(release(version), config, LIMITS)
    assert result.exhaustive and not result.not_modelled, (result.bound, result.not_modelled)
    assert clean(result), {k: v.message for k, v in result.violations.items()}
    # which lines ran: the first schedules already run every PP line (coverage's tracer triples a
    # search's time, so the exhaustive search above runs without it)
    first = check_tree(release(version), config, CodeLimits(max_runs=20), coverage={})
    ran = set(first.coverage["lines"].get(URC, ()))
    deadline = set(TIMEOUT_LINES.get(version, ()))
    want = deadline if timeout else set(LINES[version]) - deadline
    assert want <= ran, sorted(want - ran)


@pytest.mark.parametrize("version,name", [(v, n) for v in sorted(EDITS) for n in sorted(EDITS[v])])
def test_a_one_place_edit_of_the_pp_code_is_caught(tmp_path, version, name):
    rel, config, old, new, prop = EDITS[version][name]
    result = check_tree(edited(tmp_path, release(version), rel, old, new), config, FIRST)
    assert not result.not_modelled, result.not_modelled
    assert result.verdicts[prop] == "VIOLATED", result.verdicts
    found = result.violations[prop]
    assert found.consequence and found.schedule and found.site


def test_sleep_sets_keep_every_state_of_the_unreduced_dfs_across_stages():
    """The point-to-point channel records its footprint: without the persistent set the sleep-set
    search expands exactly the states of the DFS (no stored hit keeps the DFS small enough)."""
    config = CodeConfig(ranks=2, pp_size=2, pages=1, hits=(0, 0))
    dfs = check_tree(release("0.5.23"), config, CodeLimits(max_seconds=300, reduce=False, strategy="dfs"))
    sleep = check_tree(release("0.5.23"), config, CodeLimits(max_seconds=300, reduce=False, strategy="sleep"))
    assert dfs.exhaustive and sleep.exhaustive, (dfs.bound, sleep.bound)
    assert sleep.verdicts == dfs.verdicts and sleep.states == dfs.states
    assert sleep.runs < dfs.runs


def test_a_refactor_of_pp_sync_keeps_every_figure(tmp_path):
    """The send's copy taken before the condition: the same messages, the same figures."""
    srt = release("0.5.23")
    refactored = edited(tmp_path, srt, URC,
                        "        if self.pp_rank + 1 < self.pp_size:\n            copy_of_data = data.clone()\n",
                        "        copy_of_data = data.clone()\n        if self.pp_rank + 1 < self.pp_size:\n")
    a, b = check_tree(srt, PP2, LIMITS), check_tree(refactored, PP2, LIMITS)
    assert (a.verdicts, a.runs, a.states) == (b.verdicts, b.runs, b.states)


def test_pp_settings_outside_the_world_are_refused():
    with pytest.raises(ValueError, match="pp_size 2: a divisor of ranks"):
        CodeConfig(ranks=3, pp_size=2)
    # buffer_only runs the PP tickets (tests/test_code_pp_tickets.py), without retries or device pages
    with pytest.raises(ValueError, match="runs without retries and device pages"):
        CodeConfig(ranks=2, pp_size=2, host_memory_mode="buffer_only", device_pages=1)
    assert "pp_size" not in CodeConfig(ranks=2).to_json()  # cached verdicts of other configurations keep their key
    assert CodeConfig.from_json(PP2.to_json()) == PP2


def test_point_to_point_outside_a_pp_world_is_not_modelled(tmp_path):
    """A tree whose one-stage path reaches torch.distributed.recv gets "not modelled", never a
    crash verdict of ours: only the stages world has the channels."""
    srt = edited(tmp_path, release("0.5.23"), URC,
                 "        if self.pp_size <= 1 or self.pp_group is None:\n            return\n"
                 "        if self.pp_rank > 0:\n",
                 "        if self.pp_rank >= 0:\n")
    result = check_tree(srt, CodeConfig(ranks=1), LIMITS)
    assert any("torch.distributed.recv" in m for m in result.not_modelled), result.not_modelled
    assert result.verdicts["no_crash"] != "VIOLATED" and not result.exhaustive
