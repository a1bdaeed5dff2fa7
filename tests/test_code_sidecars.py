"""Sidecar pools (CodeConfig.sidecars: the SWA and Mamba components' trailing-window pools, a
KV-derived indexer pool): the release's own sidecar code runs as written on the stand-ins of
model/code/worlds/ack_drain/sidecars.py, alone or in a shared page-envelope host arena. 0.5.23,
0.5.22 and 0.5.19 (which allocates the windows at issue) are clean and exhausted; the sleep sets
keep every state of the unreduced search with the transfers' footprints; one-place edits of the
sidecar path, applied here to the real release, are each caught with their consequence; a
behaviour-keeping refactor keeps every figure."""

from __future__ import annotations

import pytest

from prefetch_check.model.code import CodeConfig, CodeLimits, check_tree
from tests.test_code_executor import clean, edited, release

LIMITS = CodeLimits(max_seconds=60)
FIRST = CodeLimits(max_seconds=120, stop_on_first=True)
URC, HCC = "mem_cache/unified_radix_cache.py", "mem_cache/hybrid_cache/hybrid_cache_controller.py"
CC = "managers/cache_controller.py"

ALL = CodeConfig(ranks=1, sidecars=("swa", "mamba", "indexer"))
SWA = CodeConfig(ranks=1, sidecars=("swa",))
# the SWA window's page 1 cannot be read: the fetch is discarded whole
SWA_SHORT = CodeConfig(ranks=1, sidecars=("swa",), sidecar_failing=((1,),))
# the indexer's page 1 cannot be read: IO clamps the KV to the indexer's hits
INDEXER_SHORT = CodeConfig(ranks=1, sidecars=("indexer",), sidecar_failing=((1,),))
# a KV pool of 1 page: the 2-page SWA window staged at the hit shrinks in IO, its tail released from IO
SWA_SHRINKS = CodeConfig(ranks=1, sidecars=("swa",), host_pages=1)
# the Mamba pool is full: the SWA staging is rolled back
MAMBA_FULL = CodeConfig(ranks=1, sidecars=("swa", "mamba"), sidecar_pool_pages=(2, 0))
ABORT = CodeConfig(ranks=1, sidecars=("swa", "indexer"), abort_round=1)
# the KV pool and the window share a host arena of 3 page envelopes: a 1-page prefix and its window
ARENA = CodeConfig(ranks=1, sidecars=("swa",), shared_arena=3)
ARENA_ALL = CodeConfig(ranks=1, sidecars=("swa", "mamba", "indexer"), shared_arena=4)
TWO_RANKS_ABORT = CodeConfig(ranks=2, pages=1, sidecars=("swa",), abort_round=1)
TWO_RANKS_SHORT = CodeConfig(ranks=2, pages=2, sidecars=("swa",), sidecar_failing=((1,), ()))

# (file, configuration, old text, new text, the property that catches it, its consequence's words)
EDITS = {
    # IO no longer clamps a KV batch to its KV-derived pool's hits
    "kv_batch_not_clamped": (CC, INDEXER_SHORT, "        return min([kv_hits, *sidecar_hits.values()])",
                             "        return kv_hits", "data_integrity", "indexer"),
    # the sync thread agrees on the largest pool hits instead of the smallest
    "pool_hits_max": (HCC, TWO_RANKS_SHORT,
                      "                torch.distributed.ReduceOp.MIN,\n                self.prefetch_completion_sync_groups,\n"
                      "            )\n            for i, pool in enumerate(PoolName):",
                      "                torch.distributed.ReduceOp.MAX,\n                self.prefetch_completion_sync_groups,\n"
                      "            )\n            for i, pool in enumerate(PoolName):", "data_integrity", "SWA"),
    # IO skips the pool_hits ACK for a cancelled operation: the ranks' sync threads pair differently
    "pool_hits_ack_skipped_when_cancelled": (
        HCC, TWO_RANKS_ABORT, "        if operation.pool_transfers is None:\n            return\n\n        # Extra pools only",
        "        if operation.pool_transfers is None or operation.is_terminated():\n            return\n\n"
        "        # Extra pools only", "progress", "hangs"),
    # the window's tail is no longer released when the hit undershot the staging
    "window_tail_not_released": (HCC, SWA_SHRINKS, "                self.append_host_mem_release(\n"
                                 "                    extra_pools=[\n                        PoolTransfer(",
                                 "                (lambda **kw: None)(\n                    extra_pools=[\n"
                                 "                        PoolTransfer(", "host_memory", "leaked"),
    # the all-or-nothing check keeps a window any of whose pages arrived
    "partial_window_kept": (URC, SWA_SHORT, "            transfer.keys is not None and count == len(transfer.keys)",
                            "            transfer.keys is not None and count > 0", "data_integrity", "SWA"),
    # a discarded fetch no longer releases its window
    "discard_keeps_window": (URC, SWA_SHORT, "                pool_transfers if operation.pool_transfers_done else None,\n"
                             "            )\n            self.prefetch_loaded_tokens_by_reqid[request] = 0",
                             "                None,\n            )\n            self.prefetch_loaded_tokens_by_reqid[request] = 0",
                             "host_memory", "leaked"),
    # the completed_req drain no longer releases the window of an operation that was no longer current
    "completed_req_drops_window": (URC, ABORT, "                            (\n"
                                   "                                operation.pool_transfers\n"
                                   "                                if not operation.pool_transfers_done\n"
                                   "                                else None\n                            ),",
                                   "                            None,", "host_memory", "leaked"),
    # the shared arena allocates the windows with the KV but never binds them to their transfers
    "arena_windows_not_bound": (HCC, ARENA, "        for transfer, indices in zip(independent_transfers, allocated[1:], strict=True):\n"
                                "            transfer.host_indices = indices\n        return allocated[0]",
                                "        return allocated[0]", "host_memory", "leaked"),
    # the arena's request for a trailing window is no longer cut to the hit: a prefix that fits is refused
    "arena_window_not_cut_to_the_hit": (HCC, CodeConfig(ranks=1, sidecars=("swa",), shared_arena=2),
                                        "                num_pages = min(num_pages or 1, sidecar_hit_pages)",
                                        "                num_pages = num_pages or 1", "wait_complete_delivers",
                                        "prefetch lost"),
    # the staging already taken is not rolled back when another pool's staging fails
    "staging_not_rolled_back": (URC, MAMBA_FULL, "                    cc.append_host_mem_release(extra_pools=taken)\n"
                                "                    for t in taken:",
                                "                    for t in taken:", "host_memory", "leaked"),
}


@pytest.mark.parametrize("config, figures", [
    (SWA, (46, 309)), (ALL, (46, 344)), (SWA_SHORT, (46, 365)), (INDEXER_SHORT, (43, 306)),
    (SWA_SHRINKS, (100, 709)), (MAMBA_FULL, (4, 52)), (ABORT, (130, 1171)), (ARENA, (43, 306)),
    (ARENA_ALL, (43, 341)), (CodeConfig(ranks=1, sidecars=("swa", "indexer"), policy="best_effort"), (196, 1567)),
])
def test_0_5_23_is_clean_and_exhausted_with_sidecar_pools(config, figures):
    result = check_tree(release("0.5.23"), config, LIMITS)
    assert result.exhaustive and clean(result), (result.verdicts, result.not_modelled)
    assert (result.runs, result.states) == figures


def test_0_5_22_is_clean_with_every_sidecar_pool():
    result = check_tree(release("0.5.22"), ALL, LIMITS)
    assert result.exhaustive and clean(result)


@pytest.mark.parametrize("config, figures", [(ALL, (46, 344)), (SWA_SHRINKS, (100, 710)), (MAMBA_FULL, (1, 20)),
                                             (INDEXER_SHORT, (43, 306))])
def test_0_5_19_allocates_the_windows_at_issue_and_is_clean(config, figures):
    result = check_tree(release("0.5.19"), config, LIMITS)
    assert result.exhaustive and clean(result), (result.verdicts, result.not_modelled)
    assert (result.runs, result.states) == figures


def test_0_5_19_forfeiting_a_fetch_without_releasing_its_window_is_caught(tmp_path):
    """0.5.19 allocates the windows at issue and forfeits the fetch when one fails; dropping the
    release of the windows it already took leaks them (the gate admits the request with nothing in
    flight, so the leak is judged, not a request never admitted)."""
    srt = edited(tmp_path, release("0.5.19"), URC,
                 "            self.cache_controller.append_host_mem_release(\n"
                 "                extra_pools=[x for xfers in comp_xfers.values() for x in xfers],\n"
                 "            )\n            if anchor_lock_params is not None:",
                 "            if anchor_lock_params is not None:")
    result = check_tree(srt, MAMBA_FULL, FIRST)
    assert result.verdicts["host_memory"] == "VIOLATED" and "progress" not in result.violations


def test_a_shared_arena_on_a_release_without_its_allocation_is_not_modelled_by_name():
    result = check_tree(release("0.5.20"), ARENA, LIMITS)
    assert not result.exhaustive and "with a shared host arena" in result.not_modelled[0]


def test_delivery_is_the_hits_the_sidecar_pools_let_the_ranks_agree_on():
    config = CodeConfig(ranks=1, sidecars=("mamba",), sidecar_hits=((1,),))
    assert config.agreed_pages_of(0) == 1 and config.judges_delivery()
    result = check_tree(release("0.5.23"), config, LIMITS)
    assert result.exhaustive and result.verdicts["wait_complete_delivers"] == "VERIFIED"


@pytest.mark.parametrize("config", [SWA, SWA_SHRINKS, ABORT, MAMBA_FULL, ARENA])
def test_without_the_persistent_set_sleep_sets_keep_every_state(config):
    dfs = check_tree(release("0.5.23"), config, CodeLimits(max_seconds=120, reduce=False, strategy="dfs"))
    sleep = check_tree(release("0.5.23"), config, CodeLimits(max_seconds=120, reduce=False, strategy="sleep"))
    assert dfs.exhaustive and sleep.exhaustive
    assert sleep.verdicts == dfs.verdicts
    assert sleep.states == dfs.states and sleep.runs < dfs.runs


@pytest.mark.parametrize("name", sorted(EDITS))
def test_one_place_edits_of_the_sidecar_path_are_caught(tmp_path, name):
    rel, config, old, new, prop, words = EDITS[name]
    result = check_tree(edited(tmp_path, release("0.5.23"), rel, old, new), config, FIRST)
    assert result.verdicts[prop] == "VIOLATED", (result.verdicts, result.not_modelled)
    assert words in result.violations[prop].message + result.violations[prop].consequence
    assert not result.not_modelled


def test_a_component_method_the_stand_in_lacks_is_not_modelled_never_a_crash(tmp_path):
    srt = edited(tmp_path, release("0.5.23"), URC, "                host_indices = self.components[ct].alloc_prefetch_staging(",
                 "                host_indices = self.components[ct].alloc_prefetch_staging_v2(")
    result = check_tree(srt, SWA, LIMITS)
    assert "no_crash" not in result.violations
    assert any("components[SWA].alloc_prefetch_staging_v2" in m for m in result.not_modelled)


def test_a_behaviour_keeping_refactor_of_sync_trailing_keys_keeps_every_figure(tmp_path):
    srt = edited(tmp_path, release("0.5.23"), HCC, "            trailing_n = len(transfer.keys) if transfer.keys else 1\n"
                 "            transfer.keys = all_hashes[max(0, kv_hit_pages - trailing_n) : kv_hit_pages]\n",
                 "            trailing_n = max(1, len(transfer.keys or ()))\n"
                 "            first = kv_hit_pages - trailing_n\n"
                 "            transfer.keys = all_hashes[first if first > 0 else 0 : kv_hit_pages]\n")
    result = check_tree(srt, SWA_SHRINKS, LIMITS)
    assert result.exhaustive and clean(result) and (result.runs, result.states) == (100, 709)


@pytest.mark.parametrize("kwargs, words", [
    (dict(sidecars=("swa", "swa")), "each at most once"),
    (dict(sidecars=("kv",)), "each at most once"),
    (dict(sidecar_hits=((1,),)), "need sidecars"),
    (dict(sidecars=("swa",), host_memory_mode="buffer_only"), "cache mode"),
    (dict(sidecars=("swa",), sidecar_hits=((1, 1),)), "one count per sidecar"),
    (dict(sidecars=("swa",), sidecar_pool_pages=(1, 2)), "one size"),
    (dict(sidecars=("indexer",), shared_arena=3), "SWA or Mamba"),
    (dict(sidecars=("swa",), requests=2, shared_arena=3), "one request"),
])
def test_a_sidecar_configuration_the_world_cannot_build_is_a_clear_error(kwargs, words):
    with pytest.raises(ValueError, match=words):
        CodeConfig(ranks=1, **kwargs)
