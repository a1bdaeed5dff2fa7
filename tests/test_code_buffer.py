"""host_memory_mode buffer_only in the code engine (model/code/worlds/ack_drain/buffer/): the
tree's own BufferModePipeline runs as written. 0.5.23 and 0.5.22 get verdicts; one-place edits of
0.5.23's buffer_mode/pipeline.py applied here are each caught with their consequence, and a
behaviour-keeping refactor keeps the release's verdicts; releases whose pipeline reads what the
world does not model are refused by name, never judged."""

from __future__ import annotations

import pytest

from prefetch_check.model.code import CodeConfig, CodeLimits, check_tree, replay
from test_code_executor import clean, edited, release

LIMITS = CodeLimits(max_seconds=120)
PIPELINE = "mem_cache/buffer_mode/pipeline.py"


def buffer(**kwargs) -> CodeConfig:
    return CodeConfig(host_memory_mode="buffer_only", **kwargs)


ANCHORED = buffer(ranks=1, device_pages=1)  # the splice base on the device: the hit takes an anchor lock
PRESSURE = buffer(ranks=1, requests=2, host_pages=2)  # room for one bounce: the second hit parks


def judged_clean(result) -> bool:
    return clean(result) and result.verdicts["anchor_release"] == "VERIFIED" and result.exhaustive


@pytest.mark.parametrize("config", [buffer(ranks=1), buffer(ranks=2), ANCHORED, PRESSURE,
                                    buffer(ranks=1, device_pages=1, evict_device_round=1),
                                    buffer(ranks=1, device_pages=1, abort_round=2),
                                    buffer(ranks=1, pages=3, device_pages=2, device_room=3, evict_device_round=2)],
                         ids=["1x1", "2x1", "anchored", "pressure", "evicted", "abort", "shrunk"])
def test_0_5_23_buffer_only_gets_verdicts_and_is_clean(config):
    result = check_tree(release("0.5.23"), config, LIMITS)
    assert result.not_modelled == []
    assert judged_clean(result), (result.verdicts, {k: v.message for k, v in result.violations.items()})


def test_the_pipeline_runs_as_written_end_to_end():
    """One schedule: the hit drain's anchor lock and staging allocation, the ACK's staging, the
    admission's plan and load-back, the load ack freeing the bounce: all at pipeline.py lines."""
    out = replay(release("0.5.23"), ANCHORED, [])
    assert out["findings"] == []
    sites = [s["site"] for s in out["steps"] if s["site"].startswith(PIPELINE)]
    labels = " | ".join(s["label"] for s in out["steps"] if s["site"].startswith(PIPELINE))
    assert len(sites) >= 5, labels
    for what in ("pin device node", "put r0.prefetch_buffer", "load 1 host slots to device", "free host slots",
                 "unpin device node"):
        assert what in labels, (what, labels)


def test_0_5_22_is_judged_and_older_releases_are_refused_by_name():
    assert judged_clean(check_tree(release("0.5.22"), ANCHORED, LIMITS))
    old = check_tree(release("0.5.19"), ANCHORED, LIMITS)
    assert not old.exhaustive and "VERIFIED" not in old.verdicts.values()
    assert old.not_modelled and old.not_modelled[0].startswith("not modelled: ")
    assert PIPELINE in old.not_modelled[0] and "no_crash" not in old.violations


EDITS = {
    # the staged bounce freed when admission takes it, before its H2D copy has read it
    "staged page freed early": (ANCHORED, "        del self.staged_prefetches[request]\n",
                                "        del self.staged_prefetches[request]\n"
                                "        self._free_staging_now(f.host_indices, f.aux_xfers)\n",
                                {"data_integrity": "reads host slot", "host_memory": "freed twice"}),
    # the anchor lock's pin never dropped at consume/drop/abort
    "anchor pin never released": (ANCHORED, "        self._cache.tree_core.dec_full_pin(lock.node_id)\n",
                                  "        pass\n", {"anchor_release": "still pinned"}),
    # every request looks staged: prefetch_from_storage never issues the fetch
    "has_staged always true": (ANCHORED, "        return request in self.staged_prefetches\n",
                               "        return True\n", {"wait_complete_delivers": "the ranks agreed on 2"}),
    # the load ack never frees the bounce: the parked hit never gets its staging, admission never unblocks
    "load ack keeps the bounce": (PRESSURE, "        self._free_completed_load_back_buffers(f)\n\n", "\n",
                                  {"progress": "req1 is never admitted"}),
    # the op handed to IO before its host_indices are written
    "queued before its host slots": (PRESSURE,
                                     "        operation.host_indices = host_indices\n"
                                     "        cache.ongoing_prefetch[request] = info._replace(host_indices=host_indices)\n"
                                     "        operation.buffer_host_occupied_units = self.host_allocation_units(\n"
                                     "            host_indices, operation.pool_transfers\n"
                                     "        )\n"
                                     "        cc.prefetch_tokens_occupied += operation.buffer_host_occupied_units\n"
                                     "        cc.prefetch_buffer.put(operation)\n",
                                     "        cc.prefetch_buffer.put(operation)\n"
                                     "        operation.host_indices = host_indices\n"
                                     "        cache.ongoing_prefetch[request] = info._replace(host_indices=host_indices)\n"
                                     "        operation.buffer_host_occupied_units = self.host_allocation_units(\n"
                                     "            host_indices, operation.pool_transfers\n"
                                     "        )\n"
                                     "        cc.prefetch_tokens_occupied += operation.buffer_host_occupied_units\n",
                                     {"no_crash": "NoneType"}),
}


@pytest.mark.parametrize("name", sorted(EDITS))
def test_a_one_place_edit_of_the_pipeline_is_caught(tmp_path, name):
    config, old, new, expected = EDITS[name]
    srt = release("0.5.23")
    result = check_tree(edited(tmp_path, srt, PIPELINE, old, new), config, LIMITS)
    assert not judged_clean(result)
    for prop, words in expected.items():
        assert result.verdicts[prop] == "VIOLATED", (prop, result.verdicts)
        assert words in result.violations[prop].message, result.violations[prop].message
        assert result.violations[prop].consequence


def test_a_behaviour_keeping_refactor_of_the_pipeline_keeps_the_verdicts(tmp_path):
    srt = release("0.5.23")
    base = check_tree(srt, ANCHORED, LIMITS)
    refactored = edited(tmp_path, srt, PIPELINE, "        return request in self.staged_prefetches\n",
                        "        staged = self.staged_prefetches.get(request)\n        return staged is not None\n")
    again = check_tree(refactored, ANCHORED, LIMITS)
    assert again.verdicts == base.verdicts and judged_clean(again)
    assert (again.runs, again.states) == (base.runs, base.states)


def test_a_cache_mode_configuration_keeps_its_json():
    """Cached code verdicts are keyed by the configuration's JSON: the buffer fields appear only when set."""
    assert "host_memory_mode" not in CodeConfig(ranks=2).to_json()
    data = buffer(ranks=1, device_pages=1).to_json()
    assert data["host_memory_mode"] == "buffer_only" and CodeConfig.from_json(data) == buffer(ranks=1, device_pages=1)
    with pytest.raises(ValueError, match="buffer_only"):
        CodeConfig(device_pages=1)


def test_a_host_pool_the_release_cannot_load_into_is_refused_and_two_tokens_are_enough():
    """0.5.23 loads into at most int(0.9 * pool size) tokens: a 1-token pool parks every storage hit
    for good, which the search reported as "req0 is never admitted" under either policy (a pool no
    server has). The configuration is refused with its reason; one page in a 2-token pool is clean."""
    with pytest.raises(ValueError, match="host pool of 1 token: the release loads into at most 0.9"):
        buffer(ranks=1, pages=1)
    assert buffer(ranks=1, pages=1, hits=(0,)).pages == 1  # nothing stored: no hit to park
    for policy in ("wait_complete", "best_effort"):
        result = check_tree(release("0.5.23"), buffer(ranks=1, pages=1, host_pages=2, policy=policy), LIMITS)
        assert result.exhaustive and judged_clean(result), (policy, result.verdicts)
        assert result.verdicts["progress"] == "VERIFIED"


def test_under_timeout_the_worlds_own_loop_fires_the_deadlines_and_keeps_every_state():
    """SGLang's default stop policy in the buffer world's own loop: the deadlines fire as the
    search's choices (worlds/deadlines.py judges each check), the search ends (before, with no
    deadline in this loop, its first run passed 2,000 steps) and the sleep sets expand exactly the
    unreduced DFS's states."""
    config = CodeConfig(ranks=1, host_memory_mode="buffer_only", policy="timeout")
    dfs = check_tree(release("0.5.23"), config, CodeLimits(strategy="dfs", reduce=False, max_seconds=300))
    sleep = check_tree(release("0.5.23"), config, CodeLimits(strategy="sleep", reduce=False, max_seconds=300))
    assert dfs.exhaustive and sleep.exhaustive and clean(sleep)
    assert sleep.states == dfs.states and sleep.runs < dfs.runs
