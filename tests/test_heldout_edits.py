"""Issue 29's held-out trial ("Run what users run"): one-place edits of 0.5.23 written as a grader
with a held-out set would write them, none of them in the other modules' EDITS tables, spread over
the buffer_only pipeline, the scheduler's retries and StoragePrefetchRetries, readmission, abort and
revoke, the admission deadline, host eviction, the sidecar pools and PP. Each is applied at test
time to the real release (tests/test_code_executor.py's helpers; skipped with the reason when the
release cannot be fetched) and run with check_tree on the one case of 0.5.23's own case list
(mappings/ack_drain) that catches it, by its name, so the test runs what `prefetch-check sglang`
runs. Each must be caught with the property it breaks and the words of its consequence: none may
get the release's verdicts. The edits the trial found escaping are caught by the checks added for
them (worlds/ack_drain/occupancy.py: the prefetch budget's books; worlds/deadlines.py: the deadline
restarted at a later blocked check, a lookup after the deadline expired; worlds/ack_drain/retry_judge.py
with waiting_queue.py: the re-issues counted by the stand-in, a declined lookup never retried;
stand_ins/sidecar_pools.py: a free's pool argument) and the cases added for them."""

from __future__ import annotations

import dataclasses

import pytest

from prefetch_check.model.code import check_tree
from prefetch_check.sglang.mappings.ack_drain.mapping import CASES
from tests.test_code_executor import edited, release

PIPE, RETRIES = "mem_cache/buffer_mode/pipeline.py", "mem_cache/storage_prefetch.py"
URC, HCC = "mem_cache/unified_radix_cache.py", "mem_cache/hybrid_cache/hybrid_cache_controller.py"
SCHED = "managers/scheduler.py"
BY_NAME = {case.name: case for case in CASES}

# name -> (file, the case of 0.5.23's list that catches it, old text, new text, property, words of
# its message or consequence)
EDITS = {
    # ---- buffer_only pipeline (pipeline.py)
    # an aborted staged hold keeps its host bounce
    "staged_hold_release_keeps_the_bounce": (
        PIPE, "1 rank, host_memory_mode=buffer_only, abort in round 2",
        "        self._free_staging_now(staged.host_indices, staged.aux_xfers)\n"
        "        self._cache.cache_controller.prefetch_tokens_occupied -= staged.occupied_tokens\n",
        "        self._cache.cache_controller.prefetch_tokens_occupied -= staged.occupied_tokens\n",
        "host_memory", "still held by no one"),
    # an aborted staged hold frees its bounce but keeps its occupancy grant (escaped: occupancy.py)
    "staged_hold_release_keeps_the_occupancy": (
        PIPE, "1 rank, host_memory_mode=buffer_only, abort in round 2",
        "        self._free_staging_now(staged.host_indices, staged.aux_xfers)\n"
        "        self._cache.cache_controller.prefetch_tokens_occupied -= staged.occupied_tokens\n",
        "        self._free_staging_now(staged.host_indices, staged.aux_xfers)\n",
        "host_memory", "prefetch budget lost"),
    # the load ack frees the bounce but never returns its occupancy (escaped: occupancy.py)
    "load_ack_keeps_the_occupancy": (
        PIPE, "1 rank x 2 requests, host_memory_mode=buffer_only, host pool of 2 pages (a hit parks)",
        "        cc.prefetch_tokens_occupied -= f.occupied_tokens\n        logger.info(\n",
        "        logger.info(\n", "host_memory", "prefetch_tokens_occupied is"),
    # the anchor lock's tokens never given back to the lock budget
    "anchor_lock_budget_never_returned": (
        PIPE, "1 rank, host_memory_mode=buffer_only, 1 page on the device (anchor locked)",
        "        self._cache.tree_core.dec_full_pin(lock.node_id)\n        self.anchor_locked_tokens_ -= lock.tokens\n",
        "        self._cache.tree_core.dec_full_pin(lock.node_id)\n", "anchor_release", "1 tokens"),
    # the anchor lock taken past the pipeline's cap (the cap check dropped): the pins no longer keep
    # room for the largest request (escaped: device_tree.py now judges every pin against the cap)
    "anchor_lock_past_the_cap": (
        PIPE, "1 rank x 3 pages, host_memory_mode=buffer_only, 2 on a 3-page device, evicted in round 2",
        "        if self.anchor_locked_tokens_ + anchor_tokens > self.anchor_lock_cap_tokens:\n",
        "        if False:\n", "anchor_release", "past the pipeline's anchor-lock cap"),
    # nothing usable fetched (a deadline cut): the recompute branch keeps the anchor lock (escaped:
    # no case cut a staged prefetch whose anchor was locked; docs/code-mutants.md)
    "staged_none_keeps_the_anchor_lock": (
        PIPE, "1 rank x 2 pages, host_memory_mode=buffer_only, timeout, 1 on the device (anchor locked; a cut with "
        "nothing fetched)",
        "            cache.discard_storage_prefetch_accounting(request)\n            self.release_anchor_lock(request)\n",
        "            cache.discard_storage_prefetch_accounting(request)\n", "anchor_release", "still pinned"),
    # the storage ack frees a write's staging but never returns it to the write budget (escaped: no
    # case queues enough writes to meet the cap; backup_judge.py now keeps the write staging's books)
    "write_ack_keeps_the_staging_books": (
        PIPE, "1 rank, host_memory_mode=buffer_only, write_through (a computed request written back)",
        "        self._free_staging_now(entry.host_indices, entry.aux_xfers)\n"
        "        self.write_staged_tokens_ -= entry.occupied_units\n",
        "        self._free_staging_now(entry.host_indices, entry.aux_xfers)\n",
        "host_memory", "write staging budget lost"),
    # the write flush retires a queue head that still has pages to write, as if storage already held
    # them (escaped: nothing judged that a computed node is stored; backup_judge.py now does)
    "write_flush_retires_an_unwritten_head": (
        PIPE, "2 ranks x 1 page, host_memory_mode=buffer_only, write_through, nothing stored (the write's acks "
        "drained across ranks)",
        "            if launch is None or all(\n", "            if not launch is None or all(\n",
        "progress", "never stored"),
    # the write flush drops a head whose parent is in flight, as if the parent's write had been
    # dropped (escaped: every write case queued one root-node write; the chunked-prefill cases'
    # chain of nodes reaches the parent test)
    "write_flush_drops_a_covered_child": (
        PIPE, "1 rank, host_memory_mode=buffer_only, write_through, nothing stored, prefilled in 2 chunks, host "
        "pool of 1 page (each node's write in turn)",
        "            if not self._backup_parent_covered(state, node_id):\n",
        "            if self._backup_parent_covered(state, node_id) and not state.parent_is_root:\n",
        "progress", "never stored"),
    # ---- retries (scheduler.py, storage_prefetch.py)
    # pop_ready lets a paced retry through at the cap (escaped: no case reached the cap by pop_ready)
    "pop_ready_cap_off_by_one": (
        RETRIES, "1 rank x 3 requests, retries: device match lost, rate-limited to one, a cap of 1",
        "            if req.storage_prefetch_retry_attempts >= max_attempts:\n",
        "            if req.storage_prefetch_retry_attempts > max_attempts:\n", "progress", "past the re-issue cap"),
    # a re-issue never counted against the budget (escaped: the judge read the counter the edit
    # stops; retry_judge.py now counts the scheduler's re-issues itself)
    "retry_attempt_not_counted": (
        SCHED, "1 rank x 3 requests, retries: device match lost, rate-limited to one, a cap of 1",
        "        req.storage_prefetch_retry_attempts += 1\n        max_attempts = get_memory()",
        "        max_attempts = get_memory()", "progress", "re-issued 2 times"),
    # a rate-limited lookup arms no paced retry: the request is never re-queried (escaped: the
    # retry world's poll now judges that a declined request behind the head is re-issued)
    "rate_limited_never_retried": (
        URC, "1 rank x 3 requests, retries: rate-limited to one, one admitted a round",
        "            # Paced: the limiter clears as transfers finish, not on the next pass.\n"
        "            self.storage_prefetch_retries.poll_miss(req_id, storage_hit_end)\n",
        "            # Paced: the limiter clears as transfers finish, not on the next pass.\n",
        "progress", "a prefetch lost"),
    # ---- readmission / abort / revoke (unified_radix_cache.py)
    # an abort after pages were fetched releases none of them (escaped: no case aborted after a
    # progress ACK; the case "aborted by its client in round 2" added for it)
    "abort_releases_none_of_the_fetched_pages": (
        URC, "1 rank, aborted by its client in round 2 (pages fetched)",
        "            info.host_indices[:completed_tokens],\n", "            info.host_indices[:0],\n",
        "host_memory", "still held by no one"),
    # an abort never retires the fetched prefetch: the drain later finishes it for a request that is
    # gone (escaped: request_release was judged only in the retry world; abort_judge.py)
    "abort_never_retires_the_prefetch": (
        URC, "1 rank, aborted by its client in round 2 (pages fetched)",
        "        completed_tokens, _ = self.cache_controller.terminate_prefetch(info.operation)\n"
        "        self._retire_ongoing_prefetch(\n",
        "        completed_tokens, _ = self.cache_controller.terminate_prefetch(info.operation)\n        (\n",
        "request_release", "was aborted, the cache still holds it"),
    # an abort keeps the request's admission-deadline record (escaped: no case aborted under timeout)
    "abort_keeps_the_deadline_wait": (
        URC, "1 rank, timeout (deadlines fire as choices), aborted by its client in round 2",
        "        self._storage_prefetch_wait.pop(request, None)\n        if self.linker is not None:\n",
        "        if self.linker is not None:\n", "request_release", "still holds it in _storage_prefetch_wait"),
    # an abort before the storage query takes the fetched path: it slices host slots it has none of
    # (escaped: no case aborted before the query)
    "abort_before_the_query_as_if_fetched": (
        URC, "1 rank, aborted by its client as soon as issued (before its storage query)",
        "        if info.operation.host_indices is None:\n            self.cache_controller.terminate_prefetch(info.operation)\n"
        "            self.revoke_pending_prefetch(request)\n            return\n", "",
        "no_crash", "'NoneType' object is not subscriptable"),
    # an abort leaves the request's paced retry armed (escaped: no case aborted with a retry armed)
    "abort_keeps_the_paced_retry": (
        URC, "1 rank x 2 requests, retries: rate-limited to one, aborted in round 1",
        "        self.prefetch_loaded_storage_start_by_reqid.pop(request, None)\n"
        "        self.storage_prefetch_retries.cancel(rid)\n",
        "        self.prefetch_loaded_storage_start_by_reqid.pop(request, None)\n",
        "request_release", "a retry still armed"),
    # a retired or revoked prefetch keeps its anchor's host lock
    "retire_keeps_the_anchor_lock": (
        URC, "2 ranks, rank 0 has no hits",
        "        if info.anchor_lock_params is not None:\n"
        "            self.dec_host_lock_ref(info.anchor_node_id, info.anchor_lock_params)\n", "",
        "host_memory", "host lock(s) on the prefetch's anchor"),
    # a retire adds the prefetch's span to the budget instead of giving it back (escaped: occupancy.py)
    "retire_occupancy_of_the_wrong_sign": (
        URC, "2 ranks, rank 0 has no hits",
        "            cc.prefetch_tokens_occupied\n            - self._prefetch_occupied_span(\n",
        "            cc.prefetch_tokens_occupied\n            + self._prefetch_occupied_span(\n",
        "host_memory", "prefetch budget lost"),
    # ---- the scheduler's drain (check_hicache_events): a stage dropped spins the scheduler's rounds
    # with a storage thread still to run (escaped as BOUNDED, no consequence: stutter.py now holds a
    # round that changed nothing until another thread moves, and names the spin once none can)
    "drain_never_pops_the_prefetch_acks": (
        URC, "2 ranks x 1 request",
        "        _drain_ack_prefetch()\n        _drain_backup()\n", "        _drain_backup()\n",
        "progress", "the scheduler spins"),
    "drain_never_frees_the_released_host_slots": (
        URC, "2 ranks, rank 0 cannot read page 1",
        "        _drain_backup()\n        _drain_release()\n", "        _drain_backup()\n",
        "host_memory", "still held by no one"),
    "write_acks_never_reaped": (
        URC, "1 rank, write_through (a computed request written to host and storage)",
        "        while finish_count > 0:\n            ack = cc.ack_write_queue.pop(0)\n",
        "        while finish_count > 0 and False:\n            ack = cc.ack_write_queue.pop(0)\n",
        "progress", "the scheduler spins"),
    # the hit drain no longer trims the device-resident head off the fetch: the staged bounce holds the
    # head's page where the plan loads the next one (escaped: the only trimming case had the whole
    # span covered at admission; the case of a partly covered span was added for it)
    "device_resident_head_not_trimmed": (
        URC, "1 rank, host_memory_mode=buffer_only, write_through, request 0's first page computed by another "
        "request (the device covers the head of its staged span)",
        "        self.cache_controller.trim_prefetch_full_head(operation, trim_tokens)\n", "",
        "data_integrity", "holds q0p0, not q0p1"),
    # ---- the admission deadline
    # the deadline started again at every blocked check (escaped: deadlines.py's kept budget)
    "deadline_restarted_at_each_blocked_check": (
        URC, "1 rank, timeout (deadlines fire as choices)",
        "            self.prefetch_stop_policy == \"timeout\"\n"
        "            and operation.handle not in self._storage_prefetch_wait\n        ):",
        "            self.prefetch_stop_policy == \"timeout\"\n        ):", "progress", "started again"),
    # the expiry's mark made only under best_effort: the expired request is re-issued (escaped:
    # no case re-issued after a deadline cut; deadlines.py judges a lookup after the expiry)
    "deadline_expiry_not_marked": (
        URC, "1 rank, retries under timeout: device match lost, re-issued after the deadline cut",
        "            if self.prefetch_stop_policy == \"timeout\":\n"
        "                self._mark_prefetch_deadline_expired(operation)\n",
        "            if self.prefetch_stop_policy == \"best_effort\":\n"
        "                self._mark_prefetch_deadline_expired(operation)\n",
        "progress", "issued after its deadline expired"),
    # the wait record not marked expired: prefetch_from_storage no longer refuses the re-issue
    "deadline_expiry_not_recorded": (
        URC, "1 rank, retries under timeout: device match lost, re-issued after the deadline cut",
        "            operation.handle, _StoragePrefetchWait()\n        ).expired = True\n",
        "            operation.handle, _StoragePrefetchWait()\n        ).expired = False\n",
        "progress", "issued after its deadline expired"),
    # the wait record made without starting its timer: no deadline ever runs, and a slow storage holds
    # the request for good (escaped: nothing fires a deadline nobody reads; deadlines.py now judges a
    # blocked check that reads no clock; docs/code-mutants.md, the ninth round)
    "deadline_timer_never_started": (
        URC, "1 rank, timeout (deadlines fire as choices)",
        "            wait.timer.observe(ready=False)\n            self._storage_prefetch_wait[operation.handle] = wait\n",
        "            self._storage_prefetch_wait[operation.handle] = wait\n", "progress", "no deadline runs"),
    # timeout's vote dropped: the policy falls through to best_effort's answer and admits at the first
    # check with the lookup still running (escaped: deadlines.py now judges no_early_acceptance until
    # a deadline fires, as the poll world does)
    "timeout_vote_falls_through_to_best_effort": (
        URC, "1 rank, timeout (deadlines fire as choices)",
        "        if self.prefetch_stop_policy == \"timeout\":\n            # Wall clocks differ across ranks",
        "        if self.prefetch_stop_policy == \"timeout_s\":\n            # Wall clocks differ across ranks",
        "no_early_acceptance", "no rank's deadline had fired"),
    # ---- host eviction (hybrid_cache_controller.py)
    # evict_host asked only with a shared arena: the held pages are never evicted for the hit
    "evicts_only_with_a_shared_arena": (
        HCC, "1 rank, host pool of 2 pages, both held by the tree (evict_host frees them)",
        "        if host_indices is None and not shared:\n            evict_host(hit_tokens)\n",
        "        if host_indices is None and shared:\n            evict_host(hit_tokens)\n",
        "wait_complete_delivers", "the ranks agreed on 2"),
    # the partial prefix reports the whole hit as allocated: the hash list is never cut to it
    "partial_prefix_reports_the_whole_hit": (
        HCC, "1 rank, host pool of 2 pages, both held by the tree, 1 locked (a partial prefix)",
        "            host_indices = self.alloc_prefetch_host_buffers(operation, alloc_len)\n"
        "        return host_indices, alloc_len\n",
        "            host_indices = self.alloc_prefetch_host_buffers(operation, alloc_len)\n"
        "        return host_indices, hit_tokens\n", "wait_complete_delivers", "room for 1"),
    # ---- sidecar pools (unified_radix_cache.py)
    # a sidecar's release queue freed without its pool name: the SWA slots go to the KV pool
    # (escaped: the stand-in crashed; sidecar_pools.py's group judges the pool argument)
    "extra_release_into_the_kv_pool": (
        URC, "1 rank, sidecars=swa, host pool of 1 page (the window shrinks in IO)",
        "                    cc.mem_pool_host.free(\n                        torch.cat(host_indices_list, dim=0), pool=pool_name\n"
        "                    )\n",
        "                    cc.mem_pool_host.free(torch.cat(host_indices_list, dim=0))\n",
        "host_memory", "freed into the wrong pool"),
    # ---- the drain's agreed counts (unified_radix_cache.py)
    # the ready counts MAX-reduced: a rank pops more than it holds and its scheduler waits in the
    # drain (escaped: a wait the threads later satisfy; queues.py judges a first-stage drain's wait)
    "ready_counts_max": (
        URC, "2 ranks x 1 request",
        "        else:\n            self._all_reduce(ready_counts, torch.distributed.ReduceOp.MIN)\n",
        "        else:\n            self._all_reduce(ready_counts, torch.distributed.ReduceOp.MAX)\n",
        "progress", "stalls in its drain"),
    # ---- PP (unified_radix_cache.py)
    # the later stage receives under another subsystem's tag: the first stage's counts never arrive
    "pp_recv_under_the_grammar_tag": (
        URC, "PP=2, 1 rank a stage",
        "                group_src=self.pp_rank - 1,\n                group=self.pp_group,\n"
        "                tag=P2PTag.HICACHE_PP_SYNC,\n",
        "                group_src=self.pp_rank - 1,\n                group=self.pp_group,\n"
        "                tag=P2PTag.GRAMMAR_PP_SYNC,\n", "deadlock_freedom", "the other stage never sends"),
    # the tickets' admission check goes on past a "not ready" vote: the scheduler blocks in
    # take_ready_pp_prefetch's wait for the fetch (escaped: buffer/tickets.py's poll and ReadyEvent)
    "pp_ticket_not_ready_falls_through": (
        URC, "PP=2, 1 rank a stage, host_memory_mode=buffer_only (PP tickets), 1 page",
        "        if ready_tensor.item() == 0:\n            return False\n\n", "\n",
        "progress", "blocks until the storage fetch lands"),
    # PP0 votes its ticket ready without asking it (the later stages' votes are overwritten by
    # PP0's in _pp_sync): every stage takes its ticket before the fetch landed
    "pp_first_stage_votes_ready_unasked": (
        URC, "PP=2, 1 rank a stage, host_memory_mode=buffer_only (PP tickets), 1 page",
        "        ready = self.pp_rank == 0 and self.cache_controller",
        "        ready = self.pp_rank == 0 or self.cache_controller",
        "progress", "blocks until the storage fetch lands"),
    # a later stage takes its ticket without waiting for its own fetch (escaped: the gate never
    # polled a ticket that PP0 had ready and stage 1 not; buffer/tickets.py's "behind" poll)
    "pp_ticket_taken_without_waiting": (
        HCC, "PP=2, 1 rank a stage, host_memory_mode=buffer_only (PP tickets), 1 page",
        "            return None\n        state.ready_event.wait()\n", "            return None\n",
        "tp_agreement", "host trees hold"),
    # the round's sends are reaped but the list is never cleared (escaped: p2p.py's Work reaped once)
    "pp_sends_never_cleared": (
        URC, "PP=2, 1 rank a stage",
        "        for work in self.work_list:\n            work.wait()\n        self.work_list.clear()\n",
        "        for work in self.work_list:\n            work.wait()\n", "host_memory", "waited on again"),
}


def _case(name: str):
    case = BY_NAME[name]
    return case.config, dataclasses.replace(case.limits, stop_on_first=True)


@pytest.mark.parametrize("name", sorted(EDITS))
def test_a_held_out_edit_of_0_5_23_is_caught_with_its_consequence(tmp_path, name):
    rel, case, old, new, prop, words = EDITS[name]
    config, limits = _case(case)
    result = check_tree(edited(tmp_path, release("0.5.23"), rel, old, new), config, limits)
    assert not result.not_modelled, result.not_modelled
    assert result.verdicts[prop] == "VIOLATED", (name, result.verdicts)
    found = result.violations[prop]
    assert words in found.message + found.consequence, (found.message, found.consequence)
    assert found.schedule


def test_every_case_named_is_one_of_0_5_23s():
    assert all(case in BY_NAME for _, case, *_ in EDITS.values())
