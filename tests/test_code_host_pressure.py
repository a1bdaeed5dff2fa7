"""Host memory pressure (CodeConfig.host_held_pages): the tree holds an earlier request's host-only
pages, the prefetch's host allocation fails, and the release's own evict_host (tree_core's
eviction, then components[FULL].free_host_values) makes room before the retry and the partial
prefix; anchored at the held pages, the release's own anchor lock keeps eviction off them. 0.5.23
and 0.5.19 are clean and exhausted, their eviction and partial-prefix lines run;
one-place edits of that path, applied here, are caught with their consequence; a behaviour-keeping
refactor keeps every figure."""

from __future__ import annotations

import pytest

from prefetch_check.model.code import CodeConfig, CodeLimits, check_tree
from tests.test_code_executor import clean, edited, release

LIMITS = CodeLimits(max_seconds=60)
FIRST = CodeLimits(max_seconds=60, stop_on_first=True)
URC, HCC = "mem_cache/unified_radix_cache.py", "mem_cache/hybrid_cache/hybrid_cache_controller.py"
# the tree holds 2 evictable pages of a pool of 2: the allocation fails, evict_host frees both, the retry fits
EVICTABLE = CodeConfig(ranks=1, pages=2, host_pages=2, host_held_pages=2)
# one of them locked: eviction frees one page, the retry fails, the partial prefix takes the page that fits
LOCKED = CodeConfig(ranks=1, pages=2, host_pages=2, host_held_pages=2, host_locked_pages=1)
# the same with pages of 2 tokens (the partial prefix's page alignment matters)
LOCKED_PAGES_OF_2 = CodeConfig(ranks=1, pages=2, page_size=2, host_pages=2, host_held_pages=2, host_locked_pages=1)
# the held pages are the request's own prefix, its prefetch anchored at them: the release's anchor lock
# keeps eviction off them, and of a pool of 3 the partial prefix takes the 1 page left
ANCHORED = CodeConfig(ranks=1, pages=2, host_pages=3, host_held_pages=2, host_anchored=True)
ANCHOR_LOCK = ("            else self.inc_host_lock_ref(last_host_node_id).to_dec_params()\n", "            else None\n")

# release -> name -> (file, configuration, old text, new text, the property that catches it)
EDITS = {
    "0.5.23": {
        # evict_host drops the eviction result: the tree forgot the pages, nobody frees them
        "evict_host_frees_nothing": (
            URC, EVICTABLE, "        self._apply_eviction_result(result)\n        return result.tracker",
            "        self._apply_cache_actions(result.cache_actions)\n        return result.tracker", "host_memory"),
        # each evicted host value is freed twice: two later allocations share its slots
        "evicted_values_freed_twice": (
            URC, EVICTABLE, "            self.components[ct].free_host_values(host_frees.pop(ct))\n",
            "            self.components[ct].free_host_values(host_frees.pop(ct) * 2)\n", "host_memory"),
        # the eviction asks for one page less than the hit: the retry fails, a page is lost
        "evicts_one_page_too_few": (
            HCC, EVICTABLE, "            evict_host(hit_tokens)\n", "            evict_host(hit_tokens - self.page_size)\n",
            "wait_complete_delivers"),
        # the partial prefix one token past the page boundary: the pool's whole-page assertion fires
        "partial_prefix_alignment_off_by_one": (
            HCC, LOCKED_PAGES_OF_2, "            alloc_len = min(hit_tokens, available - available % self.page_size)\n",
            "            alloc_len = min(hit_tokens, available - available % self.page_size + 1)\n", "no_crash"),
        # a partial prefix of exactly the threshold is refused: the page that fits is lost
        "partial_prefix_threshold_strict": (
            HCC, LOCKED, "        if alloc_len >= min_tokens:\n", "        if alloc_len > min_tokens:\n",
            "wait_complete_delivers"),
        # the prefetch takes no host lock on its anchor: eviction frees the prefix the fetch extends
        "anchor_lock_dropped": (URC, ANCHORED, *ANCHOR_LOCK, "data_integrity"),
    },
    "0.5.19": {
        "evict_host_frees_nothing": (
            URC, EVICTABLE, "        self._free_values(result.device_frees, result.host_frees)\n        return result.tracker",
            "        return result.tracker", "host_memory"),
        "eviction_skipped": (
            URC, EVICTABLE, "                self.evict_host(alloc_len)\n", "                pass\n", "wait_complete_delivers"),
        "partial_prefix_alignment_off_by_one": (
            URC, LOCKED_PAGES_OF_2, "                    available_size - (available_size % self.page_size),\n",
            "                    available_size - (available_size % self.page_size) + 1,\n", "no_crash"),
        "anchor_lock_dropped": (URC, ANCHORED, *ANCHOR_LOCK, "data_integrity"),
    },
}
# the lines of the release's eviction and allocation-failure path each clean case must run
LINES = {
    "0.5.23": {URC: (1431, 1441, 1442, 1443), HCC: (807, 808, 809, 825, 826, 827, 828)},
    "0.5.19": {URC: (1109, 1119, 1120, 1121, 2305, 2306, 2310, 2311, 2315, 2316)},
}


@pytest.mark.parametrize("version", ["0.5.23", "0.5.19"])
def test_the_releases_eviction_runs_against_the_trees_pages_and_is_clean(version):
    srt = release(version)
    ran: dict[str, set] = {}
    for config in (EVICTABLE, LOCKED, LOCKED_PAGES_OF_2, ANCHORED):
        result = check_tree(srt, config, LIMITS, coverage={})
        assert result.exhaustive and not result.not_modelled, (result.bound, result.not_modelled)
        assert clean(result), result.verdicts
        assert "wait_complete_delivers" not in result.not_judged  # judged: the room the locked pages leave
        for rel, lines in result.coverage["lines"].items():
            ran.setdefault(rel, set()).update(lines)
    for rel, lines in LINES[version].items():
        assert set(lines) <= ran.get(rel, set()), (rel, sorted(set(lines) - ran.get(rel, set())))


@pytest.mark.parametrize("version,name", [(v, n) for v in sorted(EDITS) for n in sorted(EDITS[v])])
def test_a_one_place_edit_of_the_eviction_path_is_caught(tmp_path, version, name):
    rel, config, old, new, prop = EDITS[version][name]
    result = check_tree(edited(tmp_path, release(version), rel, old, new), config, FIRST)
    assert result.verdicts[prop] == "VIOLATED", result.verdicts
    found = result.violations[prop]
    assert found.consequence and found.schedule


def test_a_retry_skipped_after_eviction_keeps_what_is_delivered_in_cache_mode(tmp_path):
    """Without the retry the partial branch asks the pool again for the whole hit, which eviction
    made room for: the same delivery (not a miss of the judge; an edit with no consequence here)."""
    srt = release("0.5.23")
    skipped = edited(tmp_path, srt, HCC,
                     "            host_indices = self.alloc_prefetch_host_buffers(operation, hit_tokens)\n        if host_indices is not None or not allow_partial:",
                     "            pass\n        if host_indices is not None or not allow_partial:")
    result = check_tree(skipped, EVICTABLE, LIMITS)
    assert result.exhaustive and clean(result), result.verdicts


REFACTORS = {
    "partial_prefix": (HCC, (LOCKED, LOCKED_PAGES_OF_2),
                       "            alloc_len = min(hit_tokens, available - available % self.page_size)\n",
                       "            alloc_len = min(hit_tokens, available // self.page_size * self.page_size)\n"),
    "evict_host": (URC, (EVICTABLE, ANCHORED),
                   "        self._apply_eviction_result(result)\n        return result.tracker.get(component_type, 0)\n",
                   "        evicted = result.tracker.get(component_type, 0)\n"
                   "        self._apply_eviction_result(result)\n        return evicted\n"),
}


@pytest.mark.parametrize("name", sorted(REFACTORS))
def test_a_refactor_of_the_eviction_path_keeps_every_figure(tmp_path, name):
    rel, configs, old, new = REFACTORS[name]
    srt = release("0.5.23")
    refactored = edited(tmp_path, srt, rel, old, new)
    for config in configs:
        a, b = check_tree(srt, config, LIMITS), check_tree(refactored, config, LIMITS)
        assert (a.verdicts, a.runs, a.states) == (b.verdicts, b.runs, b.states)


def test_host_pressure_settings_outside_the_world_are_refused():
    with pytest.raises(ValueError, match="host_held_pages needs host_memory_mode='cache'"):
        CodeConfig(host_memory_mode="buffer_only", host_held_pages=1)
    with pytest.raises(ValueError, match="host_locked_pages 2"):
        CodeConfig(host_held_pages=1, host_locked_pages=2)
    with pytest.raises(ValueError, match="host_anchored: one request"):
        CodeConfig(requests=2, host_held_pages=1, host_anchored=True)
