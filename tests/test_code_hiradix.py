"""The HiRadixCache that 0.5.19-0.5.20 ship beside UnifiedRadixCache, run in the ack-drain world
(CodeConfig(cache_class="HiRadixCache"), worlds/ack_drain/hiradix/): its own cache methods and
HiCacheController threads as written. Clean and exhausted where the release is; its readmission
findings are the model's (ack-readmit-0519); one-place edits of hiradix_cache.py are caught with
their consequence; a refactor keeps every figure; `prefetch-check sglang --cache-class
HiRadixCache` runs the ack-drain cases that fit the class."""

from __future__ import annotations

import pytest

from prefetch_check.model.code import CodeConfig, CodeLimits, check_tree
from prefetch_check.sglang.code_checks import plan_code
from prefetch_check.sglang.code_world import _classes, own_files, world_of
from prefetch_check.sglang.mappings import mapping
from prefetch_check.sglang.detect import detect_shape
from prefetch_check.sglang.locate import read_protocol_files
from tests.test_code_executor import clean, edited, release

HR = "mem_cache/hiradix_cache.py"
LIMITS = CodeLimits(max_seconds=60)
FIRST = CodeLimits(max_seconds=60, stop_on_first=True)


def hiradix(**kwargs) -> CodeConfig:
    return CodeConfig(cache_class="HiRadixCache", **kwargs)


# name -> (configuration, old text, new text, the property that catches it); each applies once to
# 0.5.19's and 0.5.20's hiradix_cache.py (both caught on both, measured; the test runs a part)
EDITS = {
    # the ACK drain keeps the unread tail's slots (a short read: page 1 cannot be read)
    "ack_tail_not_freed": (hiradix(ranks=1, failing=((1,),)),
                           "                    self.cache_controller.mem_pool_host.free(tail)\n",
                           "                    pass\n", "host_memory"),
    # a completed prefetch keeps its anchor's host lock: the prefix is never evictable again
    "result_keeps_anchor_lock": (hiradix(ranks=1),
                                 "        self.cache_controller.mem_pool_host.free(host_indices[:matched_length])\n"
                                 "        last_host_node.release_host()\n",
                                 "        self.cache_controller.mem_pool_host.free(host_indices[:matched_length])\n",
                                 "host_memory"),
    # a revoked prefetch (too few hits on one rank) keeps its anchor's host lock
    "revoke_keeps_anchor_lock": (hiradix(ranks=2, hits=(0, 2)),
                                 "        last_host_node, prefetch_key, _ = info\n        last_host_node.release_host()\n",
                                 "        last_host_node, prefetch_key, _ = info\n", "host_memory"),
    # the hit drain hands the operation to IO before its host slots are set
    "buffer_before_indices": (hiradix(ranks=1),
                              "                operation.host_indices = host_indices\n"
                              "                cc.prefetch_buffer.put(operation)\n",
                              "                cc.prefetch_buffer.put(operation)\n"
                              "                operation.host_indices = host_indices\n", "no_crash"),
    # the ranks' termination vote skipped: under timeout each rank admits at its own deadline
    "terminate_vote_skipped": (hiradix(ranks=2, policy="timeout"),
                               "        self._all_reduce(should_terminate_tensor, torch.distributed.ReduceOp.MAX)\n"
                               "        should_terminate = should_terminate_tensor.item() == 1\n",
                               "        should_terminate = should_terminate_tensor.item() == 1\n", "tp_agreement"),
    # an aborted request's fetched slots never go to the release queue
    "abort_tail_not_released": (hiradix(ranks=1, abort_round=2),
                                "        self.cache_controller.append_host_mem_release(\n"
                                "            operation.host_indices[:completed_tokens]\n        )\n", "", "host_memory"),
}


def _hiradix_release(version: str):
    srt = release(version)
    if not (srt / HR).is_file():
        pytest.skip(f"{version}: the cached release has no {HR}")
    return srt


CLEAN = {"1x1": hiradix(ranks=1), "2x1": hiradix(ranks=2), "abort in round 2": hiradix(ranks=1, abort_round=2),
         "rank 0 has no hits": hiradix(ranks=2, hits=(0, 2)), "best_effort": hiradix(ranks=1, policy="best_effort")}


@pytest.mark.parametrize("version,name", [("0.5.19", n) for n in CLEAN] + [("0.5.20", "2x1")])
def test_the_releases_hiradix_cache_is_clean_and_exhausted(version, name):
    config = CLEAN[name]
    result = check_tree(_hiradix_release(version), config, LIMITS, coverage={})
    assert result.exhaustive and not result.not_modelled, (result.bound, result.not_modelled)
    assert clean(result), result.verdicts
    ran = result.coverage["lines"].get(HR, [])
    assert ran, "the run never entered hiradix_cache.py: another class ran"


def test_a_readmitted_request_finds_the_models_ack_readmit_violations():
    """The model's ack-readmit-0519 (cache=hiradix) violates host_memory, data_integrity, no_crash
    and operation_identity; the code, readmitted under best_effort, does too (exhaustive)."""
    result = check_tree(_hiradix_release("0.5.19"), hiradix(ranks=1, policy="best_effort", reissue=True),
                        CodeLimits(max_seconds=120))
    assert result.exhaustive, result.bound
    for prop in ("operation_identity", "no_crash", "host_memory", "data_integrity"):
        assert result.verdicts[prop] == "VIOLATED", (prop, result.verdicts)
    assert result.violations["operation_identity"].site.startswith(HR)


@pytest.mark.parametrize("config", [hiradix(ranks=1), hiradix(ranks=1, reissue=True), hiradix(ranks=1, abort_round=1)],
                         ids=["1x1", "prefetched again", "abort in round 1"])
def test_every_state_of_the_unreduced_search_is_reached_under_sleep_sets(config):
    """The footprints' completeness check (tests/test_code_sleep_sets.py): the tree's HiRadixCache
    shares nothing the stand-ins do not record (its last_host_node's lock is the tree's)."""
    srt = _hiradix_release("0.5.19")
    slept = check_tree(srt, config, CodeLimits(max_seconds=60, reduce=False, strategy="sleep"))
    every = check_tree(srt, config, CodeLimits(max_seconds=60, reduce=False, strategy="dfs"))
    assert slept.exhaustive and every.exhaustive
    assert slept.states == every.states and slept.verdicts == every.verdicts
    assert slept.runs < every.runs


# every edit on 0.5.19; on 0.5.20 (its hiradix_cache.py takes request handles) two of them
@pytest.mark.parametrize("version,name", [("0.5.19", n) for n in sorted(EDITS)]
                         + [("0.5.20", "ack_tail_not_freed"), ("0.5.20", "terminate_vote_skipped")])
def test_a_one_place_edit_of_hiradix_cache_is_caught(tmp_path, version, name):
    config, old, new, prop = EDITS[name]
    result = check_tree(edited(tmp_path, _hiradix_release(version), HR, old, new), config, FIRST)
    assert result.verdicts[prop] == "VIOLATED", result.verdicts
    found = result.violations[prop]
    assert found.consequence and found.schedule


def test_a_refactor_of_hiradix_cache_keeps_every_figure(tmp_path):
    srt = _hiradix_release("0.5.19")
    refactored = edited(tmp_path, srt, HR, "            if host_indices_list:\n",
                        "            if len(host_indices_list) > 0:\n")
    for config in (hiradix(ranks=1), hiradix(ranks=1, failing=((1,),))):
        a, b = check_tree(srt, config, LIMITS), check_tree(refactored, config, LIMITS)
        assert (a.verdicts, a.runs, a.states) == (b.verdicts, b.runs, b.states)


def test_the_command_runs_the_ack_drain_cases_that_fit_hiradix_cache():
    srt = _hiradix_release("0.5.19")
    assert world_of(srt, "HiRadixCache") == ("ack-drain", "")  # the poll world has no place for its sync thread
    assert "prefetch_sync_thread_func" in mapping("predicate-poll").runs(
        _classes(srt / HR)["HiRadixCache"], _classes(srt / "managers/cache_controller.py"))
    shape = detect_shape(read_protocol_files(srt, own_files()), "HiRadixCache")
    runs = plan_code(srt, shape).runs
    assert runs and all(r.config.cache_class == "HiRadixCache" for r in runs)
    names = {r.case for r in runs}
    assert "2 ranks x 1 request" in names
    # buffer_only, the retry world and host pressure have no place in its world: not run, not judged
    assert not any("buffer_only" in n or "retries" in n or "held by the tree" in n for n in names)


def test_hiradix_cache_outside_its_world_is_refused():
    with pytest.raises(ValueError, match="cache_class HiRadixCache"):
        CodeConfig(cache_class="HiRadixCache", host_memory_mode="buffer_only")
    with pytest.raises(ValueError, match="cache_class 'RadixCache'"):
        CodeConfig(cache_class="RadixCache")
