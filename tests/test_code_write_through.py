"""Cache mode's write path (CodeConfig(backup=True) in host_memory_mode cache,
model/code/worlds/ack_drain/write_through/): under write_through a request the scheduler computed
is written back to host and on to storage by the tree's own UnifiedRadixCache, controller and
backup thread, beside the prefetch. 0.5.23's cases run exhaustive and clean, the footprints keep
every state of the unreduced search, and one-place edits of the write path are caught with their
consequence; a behaviour-keeping refactor keeps every figure."""

from __future__ import annotations

import pytest

from prefetch_check.model.code import CodeConfig, CodeLimits, check_tree
from prefetch_check.sglang.mappings.ack_drain.write_through_cases import WRITE_THROUGH_CASES
from test_code_executor import clean, edited, release
from test_code_poll import line_of

LIMITS = CodeLimits(max_seconds=120)
CACHE = "mem_cache/unified_radix_cache.py"


def write(**kwargs) -> CodeConfig:
    return CodeConfig(backup=True, **{"ranks": 1, **kwargs})


# _finish_write_through_ack never stores the published nodes
NO_STORAGE = ("            for node_id in publish_node_ids:\n                self.write_backup_storage(node_id)\n",
              "            pass\n")
# the backup drain never gives the node's host lock back
NO_HOST_UNLOCK = ("                        node_id, lock_params = entry\n"
                  "                        self.dec_host_lock_ref(node_id, lock_params)\n",
                  "                        node_id, lock_params = entry\n")
# write_backup_storage stores without the node's host lock (the drain gives back one never taken)
NO_HOST_LOCK = ("        self.ongoing_backup[operation_id] = (\n            node_id,\n"
                "            self.inc_host_lock_ref(node_id).to_dec_params(),\n        )\n",
                "        self.ongoing_backup[operation_id] = (node_id, None)\n")
# _finish_write_through_ack never gives the node's device lock back
NO_DEVICE_UNLOCK = ("        if lock_params is not None:\n            self.dec_lock_ref(lock_node_id, lock_params)\n", "")
# the write is tracked without the node's device lock: eviction frees the rows the D2H reads
NO_DEVICE_LOCK = ("                lock_params = self.inc_lock_ref(node_id).to_dec_params()\n",
                  "                lock_params = None\n")
# writing_check finishes a write ack without waiting for its D2H copy
NO_SYNC = ("            ack = cc.ack_write_queue.pop(0)\n            ack.finish_event.synchronize()\n",
           "            ack = cc.ack_write_queue.pop(0)\n")

# write_back's deferred demote: without waiting for the write-back's ack (the D2H reads freed rows),
# or whether or not the write-back was written (an unwritten node demoted: the tree core's assertion)
NO_WAIT = ("                        if written > 0:\n                            self.writing_check(write_back=True)\n"
           "                            self._demote(node_id, tracker)\n",
           "                        if written > 0:\n                            self._demote(node_id, tracker)\n")
DEMOTE_UNWRITTEN = ("                        if written > 0:\n", "                        if True:\n")


# the load-back of a host hit (CodeConfig.load_back): loading_check without giving the node's host
# lock or device lock back, or without clearing write_back's pins;
# load_back without the host lock, without giving the path's lock back after the load, or the
# ongoing load tracked without the node's device lock
LOAD_HOST_KEPT = ("                self.dec_lock_ref(node, lock_params)\n                self.dec_host_lock_ref(node, host_lock_params)\n",
                  "                self.dec_lock_ref(node, lock_params)\n")
LOAD_LOCK_KEPT = ("                self.dec_lock_ref(node, lock_params)\n                self.dec_host_lock_ref(node, host_lock_params)\n",
                  "                self.dec_host_lock_ref(node, host_lock_params)\n")
LOAD_PINS_KEPT = ("                self.tree_core.finish_load_back(node)\n", "")
LOAD_NO_HOST_LOCK = ("        host_anchor_params = self.inc_host_lock_ref(node_id).to_dec_params()\n",
                     "        host_anchor_params = None\n")
LOAD_PATH_KEPT = ("        self.dec_lock_ref(node_id, ancestor_lock_params)\n        if device_indices is None:\n",
                  "        if device_indices is None:\n")
LOAD_NO_NODE_LOCK = ("            self.inc_lock_ref(node_id).to_dec_params(),\n            host_anchor_params,\n",
                     "            None,\n            host_anchor_params,\n")
# init_load_back's answer, which SCH takes as the request's prefix: the loaded node's, not the device
# match's; its tokens, not a page more
LOAD_WRONG_NODE = ("                return len(new_indices), best_match_node_id\n",
                   "                return len(new_indices), last_best_match_device_node_id\n")
LOAD_WRONG_COUNT = ("                return len(new_indices), best_match_node_id\n",
                    "                return len(new_indices) + self.page_size, best_match_node_id\n")
# its give-ups: below the threshold without giving the host lock back; no device room without
# giving the path's lock back
SKIP_HOST_KEPT = ("            mem_quota is not None and kv_tokens + result.delta > mem_quota\n        ):\n"
                  "            self.dec_lock_ref(node_id, ancestor_lock_params)\n"
                  "            self.dec_host_lock_ref(node_id, host_anchor_params)\n",
                  "            mem_quota is not None and kv_tokens + result.delta > mem_quota\n        ):\n"
                  "            self.dec_lock_ref(node_id, ancestor_lock_params)\n")
ROOM_LOCK_KEPT = ("            if self._component_available_size(ComponentType.FULL) < kv_tokens:\n"
                  "                self.dec_lock_ref(node_id, ancestor_lock_params)\n",
                  "            if self._component_available_size(ComponentType.FULL) < kv_tokens:\n")
LOADED = dict(page_size=5, evict_device_round=2, load_back=True)
# the drain's agreed counts: loading_check handed the rank's own ready count, not the MIN; at two
# ranks under the gate "any" (a round for each H2D copy done on one rank) the ranks reap the load at
# different rounds, and their device trees differ after the first (write_through/round_views.py)
OWN_LOAD_COUNT = ("            count_values[1],\n            tuple(count_values[2:-2]),\n",
                  "            load_acks,\n            tuple(count_values[2:-2]),\n")
LOADED_2 = dict(ranks=2, pages=1, page_size=10, hits=(0, 0), evict_device_round=2, load_back=True)


# a split's publish list: not moved to the fragments, the prefix fragment dropped, or the ack storing only
# the node it locked (after a split it holds the suffix only)
SPLIT_NOT_MOVED = ("                self._replace_pending_write_through_node(\n"
                   "                    action.ack_id, action.old_node_id, node_ids\n                )\n", "                pass\n")
CHILD_ONLY = ("                updated_node_ids.extend(new_node_ids)\n",
              "                updated_node_ids.append(new_node_ids[-1])\n")
LOCK_NODE_ONLY = ("            for node_id in publish_node_ids:\n                self.write_backup_storage(node_id)\n",
                  "            self.write_backup_storage(lock_node_id)\n")


def test_the_stored_lock_node_alone_is_enough_without_a_split_and_not_with_one(tmp_path):
    """The ack's storage loop over the publish list matters only once a split made it two nodes."""
    edit = edited(tmp_path, release("0.5.23"), CACHE, *LOCK_NODE_ONLY)
    assert clean(check_tree(edit, write(), LIMITS))
    assert check_tree(edit, write(split_round=1), LIMITS).verdicts["progress"] == "VIOLATED"


@pytest.mark.parametrize("kwargs", [dict(policy="best_effort"), dict(abort_round=1), dict(ranks=2, hits=(0, 0))],
                         ids=["best_effort", "aborted in round 1", "2 ranks, nothing stored"])
def test_a_split_beside_other_settings_is_clean_and_its_replacement_still_matters(tmp_path, kwargs):
    """0.5.23: 1,749, 1,330 and 804 runs clean; at two ranks (the acks drained at their MIN) the
    replacement dropped still leaves the prefix fragment unstored."""
    config = write(split_round=1, **kwargs)
    result = check_tree(release("0.5.23"), config, LIMITS)
    assert result.exhaustive and clean(result), {k: v.message for k, v in result.violations.items()}
    if kwargs.get("ranks") == 2:
        found = check_tree(edited(tmp_path, release("0.5.23"), CACHE, *SPLIT_NOT_MOVED), config, LIMITS)
        assert "its pages ['q1p0'] never stored" in found.violations["progress"].message


def test_a_split_while_the_write_through_is_pending_runs_the_releases_own_replacement():
    """0.5.23 routes the split's action through _apply_cache_action to _replace_pending_write_through_node;
    0.5.19 has a cache action of its own for it: both run, clean, and a split after the ack moves nothing."""
    for version, lines in (("0.5.23", {1393, 1394, 1797}), ("0.5.19", {1069, 1414})):
        result = check_tree(release(version), write(split_round=1), LIMITS, coverage={})
        assert result.exhaustive and clean(result), result.verdicts
        assert lines <= set(result.coverage["lines"][CACHE]), sorted(lines - set(result.coverage["lines"][CACHE]))
    after = check_tree(release("0.5.23"), write(split_round=2), LIMITS, coverage={})
    assert after.exhaustive and clean(after) and not {1393, 1797} & set(after.coverage["lines"][CACHE])


def test_the_cases_run_0_5_19_on():
    assert len(WRITE_THROUGH_CASES) == 21
    assert {case.skip(release("0.5.23")) for case in WRITE_THROUGH_CASES} == {""}
    assert {case.skip(release("0.5.19")) for case in WRITE_THROUGH_CASES} == {""}


# every write-through case but the one under timeout, whose exhaustive search took 24 s of the suite's
# CPU (2026-12-07: the suite at 15 min 7 s in a clean clone, its budget 15): `prefetch-check sglang`
# runs that case, test_code_deadlines.py the deadlines' machinery, and the cases here the write path
UNTIMED = [case for case in WRITE_THROUGH_CASES if case.config.policy != "timeout"]


@pytest.mark.parametrize("case", UNTIMED, ids=[case.name for case in UNTIMED])
def test_0_5_23s_write_path_is_exhaustive_and_clean(case):
    result = check_tree(release("0.5.23"), case.config, LIMITS)
    assert result.exhaustive and not result.not_modelled, (result.bound, result.not_modelled)
    assert clean(result), {k: v.message for k, v in result.violations.items()}
    assert result.verdicts["anchor_release"] == "VERIFIED" and result.verdicts["host_memory"] == "VERIFIED"


# the load-back at one page (6,583 unreduced runs, against 10,335 at two: 11 s of the suite's CPU less)
@pytest.mark.parametrize("kwargs", [dict(), dict(evict_device_round=1), dict(split_round=1), dict(pages=1, **LOADED)],
                         ids=["1x1", "evicted", "split", "loaded back"])
def test_the_write_paths_footprints_keep_every_state_of_the_unreduced_search(kwargs):
    """Sleep sets prune transitions, never states: a footprint the write path missed (the tree's
    write-through marks, the host value the backup thread reads, the write ack list) would show."""
    config = write(**kwargs)
    dfs = check_tree(release("0.5.23"), config, CodeLimits(strategy="dfs", reduce=False, max_seconds=300))
    sleep = check_tree(release("0.5.23"), config, CodeLimits(strategy="sleep", reduce=False, max_seconds=300))
    assert dfs.exhaustive and sleep.exhaustive
    assert sleep.states == dfs.states and sleep.runs < dfs.runs
    assert dfs.verdicts == sleep.verdicts


@pytest.mark.parametrize("edit, config, prop, message", [
    (NO_STORAGE, write(), "progress", "written through to host, its pages ['q1p0', 'q1p1'] never stored"),
    (NO_HOST_UNLOCK, write(), "host_memory", "1 host lock(s) on the prefetch's anchor or a node backed up to storage"),
    (NO_HOST_LOCK, write(), "host_memory", "given back 1 more time(s) than taken"),
    # under host pressure the node is evicted from host while the backup thread still reads it
    (NO_HOST_LOCK, write(requests=2, pages=1, host_pages=1, evict_device_round=2), "data_integrity",
     "the backup stores nothing under key q2p0"),
    (NO_DEVICE_UNLOCK, write(), "anchor_release", "device nodes [1003] still locked by the write path"),
    (NO_DEVICE_LOCK, write(evict_device_round=1), "data_integrity", "reads device slot 0, which is free"),
    (NO_SYNC, write(), "data_integrity", "the backup stores nothing under key q1p0"),
    # a node split while its write-through is pending: the prefix fragment must be published and stored too
    (SPLIT_NOT_MOVED, write(split_round=1), "progress", "node 1002 written through to host, its pages ['q1p0'] never"),
    (CHILD_ONLY, write(split_round=1), "progress", "node 1002 written through to host, its pages ['q1p0'] never"),
    (LOCK_NODE_ONLY, write(split_round=1), "progress", "node 1002 written through to host, its pages ['q1p0'] never"),
    (NO_DEVICE_UNLOCK, write(split_round=1), "anchor_release", "device nodes [1002, 1003] still locked"),
    # write_back: the eviction's write-back is stored, its ack awaited before the rows go, and only a
    # written node demoted
    (NO_STORAGE, write(write_policy="write_back", evict_device_round=1), "progress",
     "written through to host, its pages ['q1p0', 'q1p1'] never stored"),
    (NO_WAIT, write(write_policy="write_back", evict_device_round=1), "data_integrity",
     "reads device slot 0, which is free"),
    (DEMOTE_UNWRITTEN, write(write_policy="write_back", host_pages=2, host_held_pages=2, host_locked_pages=2,
                             evict_device_round=1), "no_crash", "demote of node 1003, which has no host backup"),
    # the load-back: its locks given back at the ack, its H2D awaited, write_back's pins cleared
    (LOAD_HOST_KEPT, write(**LOADED), "host_memory", "1 host lock(s) on the prefetch's anchor or a node backed up "
     "to storage or loaded back still held"),
    (LOAD_LOCK_KEPT, write(**LOADED), "anchor_release", "device nodes [1011] still locked by the write path or a "
     "load-back"),
    (LOAD_PINS_KEPT, write(page_size=5, write_policy="write_back", evict_device_round=1, load_back=True),
     "anchor_release", "nodes [1011] still pinned by a load-back"),
    (LOAD_NO_HOST_LOCK, write(**LOADED), "host_memory", "given back 1 more time(s) than taken"),
    (LOAD_PATH_KEPT, write(**LOADED), "anchor_release", "device nodes [1011] still locked"),
    (LOAD_NO_NODE_LOCK, write(**LOADED), "anchor_release", "device node 1011 unlocked more often than locked"),
    (SKIP_HOST_KEPT, write(evict_device_round=2, load_back=True), "host_memory", "1 host lock(s) on the prefetch's "
     "anchor or a node backed up to storage or loaded back still held"),
    (ROOM_LOCK_KEPT, write(device_full=True, **LOADED), "anchor_release", "device nodes [1011] still locked"),
    (LOAD_WRONG_NODE, write(**LOADED), "data_integrity", "reports 10 tokens loaded up to node 0, whose path holds 0"),
    (LOAD_WRONG_COUNT, write(**LOADED), "data_integrity", "reports 15 tokens loaded up to node 1011, whose path "
     "holds 10"),
    # the ack never clears the node's pending mark (docs/code-mutants.md: escaped every case before)
    (("        self.tree_core.finish_write_through(publish_node_ids, ack_id)\n", ""), write(), "progress",
     "nodes [1003] still marked write-through pending"),
    (OWN_LOAD_COUNT, write(round_gate="any", **LOADED_2), "tp_agreement",
     "after round 3's check_hicache_events the ranks' device trees differ"),
], ids=["no storage write", "host lock kept", "host lock not taken", "host lock not taken, evicted", "device lock kept", "device lock not taken",
        "ack not synchronised", "split not moved", "split keeps the child only", "stores the lock node only",
        "device lock kept across a split", "write_back: no storage write", "write_back: demoted before its ack",
        "write_back: demoted unwritten", "load-back: host lock kept", "load-back: device lock kept",
        "load-back: write_back pins kept",
        "load-back: no host lock", "load-back: the path's lock kept", "load-back: no lock on the loading node",
        "load-back below its threshold: host lock kept", "load-back without room: the path's lock kept",
        "load-back: answers the device match's node", "load-back: answers a page more",
        "write-through mark never cleared", "load-back: a rank's own ready count"])
def test_a_one_place_edit_of_the_write_path_is_caught(tmp_path, edit, config, prop, message):
    result = check_tree(edited(tmp_path, release("0.5.23"), CACHE, *edit), config, LIMITS)
    assert result.exhaustive and result.verdicts[prop] == "VIOLATED", result.verdicts
    assert message in result.violations[prop].message, result.violations[prop].message


def test_a_rank_reaping_its_own_ready_loads_needs_the_gate_without_the_min_assumption(tmp_path):
    """Under the gate "agreed" a round starts only when every rank's H2D is done, so the ranks reap
    at one round whatever count the drain hands loading_check; the release is clean under both."""
    srt = edited(tmp_path, release("0.5.23"), CACHE, *OWN_LOAD_COUNT)
    agreed = check_tree(srt, write(**LOADED_2), LIMITS)
    assert agreed.exhaustive and "VIOLATED" not in agreed.verdicts.values(), agreed.verdicts
    clean = check_tree(release("0.5.23"), write(round_gate="any", **LOADED_2), LIMITS)
    assert clean.exhaustive and "VIOLATED" not in clean.verdicts.values(), clean.verdicts
    assert clean.runs > agreed.runs


def test_a_drain_that_never_reaps_a_ready_load_is_a_spin_not_a_bound(tmp_path):
    """loading_check's reaping loop removed: every round the gate opens for the ready H2D ack and
    the round changes nothing. The search names the spin (stutter.py) where only the schedulers
    can run, rather than following the loop to its depth bound on every schedule."""
    srt = edited(tmp_path, release("0.5.23"), CACHE, "        while finish_count > 0:\n            ack = cc.ack_load_queue.pop(0)\n",
                 "        while finish_count > 0 and False:\n            ack = cc.ack_load_queue.pop(0)\n")
    result = check_tree(srt, write(**LOADED), CodeLimits(max_seconds=60, stop_on=("progress",)))
    assert result.verdicts["progress"] == "VIOLATED", result.verdicts
    found = result.violations["progress"]
    assert "starts in the state round" in found.message and "the rounds between repeat forever" in found.message
    assert "the scheduler spins" in found.consequence


# the controller's own H2D: its L2 transfers without the KV (HybridCacheController._l2_transfers), its
# ack naming no node (HiCacheController.start_loading)
NO_KV_TRANSFER = ("mem_cache/hybrid_cache/hybrid_cache_controller.py",
                  "        if host_indices.numel() > 0:\n            transfers.append(\n",
                  "        if host_indices.numel() > 10**6:\n            transfers.append(\n")
ACK_WITHOUT_NODES = ("managers/cache_controller.py",
                     "                finish_event=completion.finish_event,\n                node_ids=op.node_ids,\n"
                     "                num_tokens=len(op.device_indices),\n                timing_enabled=completion."
                     "timing_enabled,\n                num_tokens_by_pool=self._num_tokens_by_pool(op),\n"
                     "                num_bytes=self._transfer_num_bytes(op),\n            )\n        )\n"
                     "        return producer_id\n",
                     "                finish_event=completion.finish_event,\n                node_ids=[],\n"
                     "                num_tokens=len(op.device_indices),\n                timing_enabled=completion."
                     "timing_enabled,\n                num_tokens_by_pool=self._num_tokens_by_pool(op),\n"
                     "                num_bytes=self._transfer_num_bytes(op),\n            )\n        )\n"
                     "        return producer_id\n")


@pytest.mark.parametrize("edit, prop, message", [
    # the D2H's transfers too (the same builder): the write-through's copy writes nothing first
    (NO_KV_TRANSFER, "data_integrity", "the backup stores nothing under key q1p0"),
    (ACK_WITHOUT_NODES, "progress", "load-back of nodes [1011] never acked"),
], ids=["no KV transfer", "an ack of no node"])
def test_a_one_place_edit_of_the_controllers_own_load_is_caught(tmp_path, edit, prop, message):
    """The load-back's H2D as the controller builds it (start_loading, its L2 transfers and ack),
    and the write's D2H (start_writing) from the same transfer builder."""
    result = check_tree(edited(tmp_path, release("0.5.23"), *edit), write(**LOADED), LIMITS)
    assert result.exhaustive and result.verdicts[prop] == "VIOLATED", result.verdicts
    assert message in result.violations[prop].message, result.violations[prop].message


# 0.5.23's _execute_kv_backup: the host room short, evict_host for what is missing, the write given up
# when eviction frees too little; _execute_and_commit_kv_backup's stop at that failed backup
ROOM, EVICTED, GIVEN_UP = 1747, 1748, (1749, 1705)


def test_the_writes_host_backup_evicts_the_trees_pages_for_its_room_or_gives_up():
    srt = release("0.5.23")
    evicts = check_tree(srt, write(host_pages=2, host_held_pages=2), LIMITS, coverage={})
    gives_up = check_tree(srt, write(host_pages=2, host_held_pages=2, host_locked_pages=1), LIMITS, coverage={})
    for result in (evicts, gives_up):
        assert result.exhaustive and not result.not_modelled and clean(result), result.verdicts
        assert "wait_complete_delivers" in result.not_judged  # the write takes the room a fetch was to get
    assert {ROOM, EVICTED} <= set(evicts.coverage["lines"][CACHE]) and not set(GIVEN_UP) & set(evicts.coverage["lines"][CACHE])
    assert {ROOM, EVICTED, *GIVEN_UP} <= set(gives_up.coverage["lines"][CACHE])


def test_device_eviction_runs_the_caches_own_walk_under_either_policy():
    """The allocator's evict_for_alloc walks the tree core's leaves (_evict_components): under
    write_through a leaf the write's device lock holds is skipped, a written one demoted; under write_back
    the walk writes a leaf back first and demotes it, or drops it when the write-back fails."""
    srt = release("0.5.23")

    def ran(config, *texts):
        result = check_tree(srt, config, LIMITS, coverage={})
        assert result.exhaustive and not result.not_modelled and clean(result), result.verdicts
        return {text for text in texts if line_of(srt, CACHE, text) in result.coverage["lines"][CACHE]}

    walk = "node_id, made_progress = self._evict_device_next_node(ct, tracker)"
    leaf = "backup_kv = self._evict_device_leaf(node_id, tracker)"
    written_back = "backup_kv, write_back=True"
    demoted = "                            self._demote(node_id, tracker)"
    dropped = "elif self._drop_subtree_no_host(node_id, tracker):"
    everything = (walk, leaf, written_back, demoted, dropped)
    assert ran(write(evict_device_round=1), *everything) == {walk}  # the D2H's device lock holds the only leaf
    assert ran(write(requests=2, pages=1, host_pages=1, evict_device_round=2), *everything) == {walk, leaf}
    assert ran(write(write_policy="write_back", evict_device_round=1), *everything) == {walk, leaf, written_back, demoted}
    assert ran(write(write_policy="write_back", host_pages=2, host_held_pages=2, host_locked_pages=2,
                     evict_device_round=1), *everything) == {walk, leaf, written_back, dropped}


# a behaviour-keeping refactor: the storage write's extra pools gathered in a loop
REFACTOR = ("        aux_xfers = [x for xfers in spec.comp_xfers.values() for x in xfers]\n"
            "        aux_xfers.extend(sidecar_xfers)\n\n        operation_id",
            "        aux_xfers = []\n        for xfers in spec.comp_xfers.values():\n            aux_xfers += xfers\n"
            "        aux_xfers += sidecar_xfers\n\n        operation_id")


def test_a_behaviour_keeping_refactor_of_the_write_path_keeps_every_figure(tmp_path):
    config = write(policy="best_effort")
    base = check_tree(release("0.5.23"), config, LIMITS)
    again = check_tree(edited(tmp_path, release("0.5.23"), CACHE, *REFACTOR), config, LIMITS)
    assert (again.verdicts, again.runs, again.states) == (base.verdicts, base.runs, base.states)
    assert again.exhaustive and clean(again)


def test_cache_modes_write_path_refuses_what_its_world_does_not_model():
    for kwargs in (dict(retries=True), dict(reissue=True), dict(sidecars=("swa",)),
                   dict(host_held_pages=1, host_pages=3, host_anchored=True)):
        with pytest.raises(ValueError, match="backup in host_memory_mode cache"):
            CodeConfig(backup=True, **kwargs)
    for kwargs in (dict(split_round=1, pages=1), dict(split_round=1, evict_device_round=1), dict(split_round=0)):
        with pytest.raises(ValueError, match="split_round"):
            CodeConfig(backup=True, **kwargs)
    with pytest.raises(ValueError, match="evict_device_round: or the write path"):
        CodeConfig(evict_device_round=1)
    for kwargs in (dict(), dict(backup=True), dict(backup=True, evict_device_round=1, host_memory_mode="buffer_only")):
        with pytest.raises(ValueError, match="load_back: cache mode's write path"):
            CodeConfig(load_back=True, **kwargs)
    for kwargs in (dict(), dict(backup=True), dict(backup=True, split_round=1),
                   dict(backup=True, evict_device_round=1, host_memory_mode="buffer_only")):
        with pytest.raises(ValueError, match="write_policy write_back"):
            CodeConfig(write_policy="write_back", **kwargs)
