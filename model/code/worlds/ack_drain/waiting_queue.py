"""The waiting-queue stand-in: the scheduler object the tree's own retry, re-issue and readmission
methods (scheduler_methods.py) run on, its requests, and one scheduling round reduced to the
prefetch path's calls (SCH get_new_batch_prefill: drain, due retries, then per waiting request
check_prefetch_progress, the device-hit-loss re-query, admission up to `batch`).

Stood in (not the prefetch path): Req (rid, handle, the match lengths the device tree gives),
the device radix tree (a match of `device_pages` pages at the first lookup, lost before
admission when asked), add_one_req (admits while the batch has room), the abort message to the
tokenizer (recorded: the request is aborted), the finished request's cache bookkeeping
(tree_cache.finish on ABORT is release_aborted_request, base_prefix_cache.py). The priority and
queue-limit checks run as written, on the server settings of CodeConfig.arrival
(`QUEUE_SETTINGS`; by default none: every request accepted)."""

from __future__ import annotations

import itertools
from typing import Optional

from prefetch_check.model.code.rt import stubs
from prefetch_check.model.code.stand_ins.errors import NotModelled, caller_site
from prefetch_check.model.code.worlds.ack_drain.scheduler_methods import (CacheRequestOutcome, DisaggregationMode,
                                                                           Memory, scheduler_methods)
from prefetch_check.model.code.worlds.common import ROOT_NODE


class _Trace:
    def abort(self, abort_info=None):
        pass


class _TimeStats:
    """The request's timestamps: the waiting-queue entry is a count of entries (the queue limit
    aborts the newest of the least preferred), from the scheduler's own clock."""

    def __init__(self, clock=None):
        self.clock = clock or itertools.count(1)
        self.wait_queue_entry_time = 0
        self.trace_ctx = _Trace()

    def set_wait_queue_entry_time(self):
        self.wait_queue_entry_time = next(self.clock)

    def observe_storage_prefetch_ready(self, ready):
        pass


class _KV:
    """The request's KV bookkeeping, as buffer mode's staging writes it."""

    cache_protected_len = 0


class Req:
    """A request as the retry methods read it. `fill_ids` ends with one token past the prefetched
    pages (the matched length stops one short of the input: Req._compute_max_prefix_len)."""

    def __init__(self, q: int, rid: str, fill_ids: list[int], page_size: int, device_pages: int, by_handle: bool,
                 roots: tuple[str, ...] = (), clock=None, priority=None):
        self.roots = roots  # where the tree's files are: a read of an attribute we lack names its line
        self.q, self.rid = q, rid
        self.cache_request_handle = stubs.CacheRequestHandle(rid, 0) if by_handle else rid
        self.full_untruncated_fill_ids = fill_ids
        self.page_size, self.device_pages = page_size, device_pages
        self.device_lost = False  # the device match was evicted while the request waited
        self.storage_prefetch_retry_attempts = 0
        self.reissued = 0  # our own count of _retry_storage_prefetch calls since it entered the queue (retry_judge.py)
        self.declined = None  # retry polls it waited behind the head since the rate limiter declined its lookup
        self.retry_missed = False  # it waited behind the head past its retry's pacing, budget left, not re-queried
        self.refetch_missed = False  # a retry poll did not re-issue its armed refetch, and nothing re-issued it since
        self.storage_prefetch_last_match_len = None
        self.staged_prefetch_plan = None
        self.prefix_len = self.host_hit_length = 0
        self.last_node = self.last_host_node = self.best_match_node = ROOT_NODE
        self.match = None  # buffer_only: (prefix_len, last_node) from the device tree (buffer/admission.py)
        # what buffer mode's admission reads and writes (buffer/admission.py, the pipeline's staging)
        self.storage_hit_length, self.storage_hit_start, self.host_hit_is_storage = 0, None, False
        self.swa_host_hit_length = self.mamba_host_hit_length = self.host_loaded_length = 0
        self.kv = _KV()
        self.extra_key = self.cache_salt = None
        self.session = None
        self.time_stats = _TimeStats(clock)
        self.priority = priority  # None: the server's default (_set_or_validate_priority)

    def __getattr__(self, name: str):
        """An attribute of SGLang's Req this stand-in does not have (another release's scheduler
        reads more of it): not modelled, never a crash of the code under test."""
        if name.startswith("__"):
            raise AttributeError(name)
        raise NotModelled(f"Req.{name} (the retry world's request stand-in)", caller_site(self.__dict__.get("roots", ())))

    def init_next_round_input(self, tree_cache=None, cow_mamba=True):
        """The device tree's match (stand-in): `device_pages` pages until lost, or in buffer_only
        the device tree's; the host tree's match is not modelled (the lookup anchors at the root)."""
        if self.match is not None:
            self.prefix_len, self.last_node = self.match()
            self.best_match_node, self.host_hit_length = self.last_node, 0  # buffer_only: no host tree to hit
            return
        self.prefix_len = 0 if self.device_lost else self.device_pages * self.page_size

    @property
    def prefix_indices(self):
        """The device match's slots as 0.5.20-0.5.21's scheduler reads them (`len(req.prefix_indices)`;
        0.5.22 on reads `prefix_len`): only their number is the path's."""
        return range(self.prefix_len)

    def _compute_max_prefix_len(self, input_len: int) -> int:
        return input_len - 1

    def release_mm_inputs_on_abort(self):
        pass


# per CodeConfig.arrival, the server settings the scheduler's queue checks read (server_args:
# max_queued_requests, enable_priority_scheduling, abort_on_priority_when_disabled; `queue_cap`: the cap
# is the requests before the late one) and the late request's priority
QUEUE_SETTINGS = {
    "preempts": dict(queue_cap=True, enable_priority_scheduling=True, priority=1),
    "rejected": dict(queue_cap=True),
    "priority_refused": dict(abort_on_priority_when_disabled=True, priority=1),
}


class _Stub:
    """A server component the queue checks call and the prefetch path does not read (the beam
    coordinator's retire_group: no beam search)."""

    def retire_group(self, req):
        pass


class _Channel:
    """ipc_channels.send_to_tokenizer (0.5.22 sends an abort through it): the scheduler's send_abort_output."""

    def __init__(self, sch):
        self.send_to_tokenizer = self
        self.send_output = sch.send_abort_output


class SchedulerStandIn:
    """The scheduler object: the attributes the tree's methods read, the methods bound from the tree."""

    def __init__(self, srt, cache, poll_interval: int, max_attempts: int, observe=lambda what: None,
                 staging=None, host_memory_mode: str = "cache"):
        self.tree_cache = cache
        self.staging = staging  # buffer_only: the admission's staging steps (buffer/admission.py Staging)
        self.poll_interval, self.max_attempts = poll_interval, max_attempts
        self.check = lambda req: cache.check_prefetch_progress(req.cache_request_handle)  # the world may judge it
        self.observe = observe  # the scheduler thread's observation (our re-issue count enters the state key)
        self.waiting_queue: list[Req] = []
        self.sent: list[Req] = []  # every request the client sent (retry_judge.py judges them at the end)
        self.aborted: list[Req] = []  # the requests the client aborted, or the scheduler did (send_abort_output)
        self.revived: list[Req] = []  # aborted requests admitted after their abort (retry_judge.py)
        self.enable_hicache_storage = True
        self.enable_lmcache = False
        self.disaggregation_mode = DisaggregationMode.NULL
        self.processed_tokens_counter = 0
        self.entries = itertools.count(1)  # the waiting-queue entry clock (_TimeStats)
        self.expecting = False  # a request arrives in a later round (CodeConfig.arrival_round)
        self.max_queued_requests, self.enable_priority_scheduling = None, False
        self.schedule_low_priority_values_first = self.abort_on_priority_when_disabled = False
        self.rust_server, self.beam_coordinator, self.ipc_channels = None, _Stub(), _Channel(self)
        self.methods = scheduler_methods(srt, Memory(poll_interval, max_attempts, host_memory_mode))
        if not hasattr(cache, "finish"):
            cache.finish = self._finish

    def has(self, name: str) -> bool:
        return name in self.methods

    def call(self, name: str, *args):
        return self.methods[name](self, *args)

    # ---- what _add_request_to_queue reads besides the path
    def serve(self, arrival: str, before: int) -> Optional[int]:
        """Take the server settings of CodeConfig.arrival (QUEUE_SETTINGS) for a run whose last
        request arrives late, after `before` others; the late request's priority."""
        settings = dict(QUEUE_SETTINGS[arrival])
        if settings.pop("queue_cap", False):
            self.max_queued_requests = before
        priority = settings.pop("priority", None)
        for name, value in settings.items():
            setattr(self, name, value)
        return priority

    def _set_or_validate_priority(self, req) -> bool:
        return self.call("_set_or_validate_priority", req) if self.has("_set_or_validate_priority") else True

    def _abort_on_queued_limit(self, req) -> bool:
        return self.call("_abort_on_queued_limit", req) if self.has("_abort_on_queued_limit") else False

    def send_abort_output(self, abort_req, req) -> None:
        """The abort the scheduler sends the client for a request it ends itself (the queue is
        full, a higher priority arrived, a priority was refused): that request is aborted."""
        if req not in self.aborted:
            self.aborted.append(req)
        self.observe(f"req{req.q} aborted by the scheduler: {abort_req.finished_reason.get('message', '')}")

    def _prefetch_kvcache(self, req, storage_hit_end=None):
        """The tree's issue; a lookup the rate limiter declined (the cache's own outcome count)
        starts the wait its paced retry is judged on."""
        stats = getattr(self.tree_cache, "_prefetch_outcome_stats", None) or {}
        before = stats.get("declined_rate_limited", 0)
        out = self.call("_prefetch_kvcache", req, storage_hit_end)
        req.declined = 0 if stats.get("declined_rate_limited", 0) > before else None
        if req.declined is not None:
            self.observe(f"req{req.q}'s lookup declined by the rate limiter")
        return out

    def _retry_storage_prefetch(self, req, storage_hit_end=None):
        """The tree's re-issue, counted here (the retry budget's judge must not trust the counter
        the code under test keeps)."""
        req.reissued += 1
        req.declined, req.refetch_missed = None, False  # a later re-issue (the device-hit-loss re-query) makes up for it
        self.observe(f"req{req.q} re-issued ({req.reissued})")
        return self.call("_retry_storage_prefetch", req, storage_hit_end)

    def _prefetch_after_device_hit_loss(self, req):
        return self.call("_prefetch_after_device_hit_loss", req)

    def _release_aborted_request(self, req):
        return self.call("_release_aborted_request", req)

    def _process_storage_prefetch_retries(self):
        """The tree's retry poll. The retry policy's promise, judged here: a request whose lookup
        the rate limiter declined and which has waited behind the queue head for the poll interval
        (storage_prefetch.py paces a miss: due `interval` polls after the first poll that sees it)
        is re-issued at this poll, unless its re-issue budget is spent. The head's miss is dropped
        by design ("a speculative miss must never delay the queue head"), so only requests that
        stayed behind it are judged."""
        head = self.waiting_queue[0] if self.waiting_queue else None
        for req in self.waiting_queue:
            if req.declined is not None:
                req.declined = None if req is head else req.declined + 1
        armed = getattr(self.tree_cache.storage_prefetch_retries, "_pending", {})
        refetch = {req: req.reissued for req in self.waiting_queue
                   if getattr(armed.get(req.rid), "immediate", False) and req.reissued < self.max_attempts}
        out = self.call("_process_storage_prefetch_retries")
        for req, before in refetch.items():
            if req.reissued == before and not req.refetch_missed:
                req.refetch_missed = True
                self.observe(f"req{req.q}'s refetch missed")
        for req in self.waiting_queue:
            if (req.declined is not None and req.declined > self.poll_interval > 0
                    and req.reissued < self.max_attempts and not req.retry_missed):
                req.retry_missed = True
                self.observe(f"req{req.q}'s retry missed")
        return out

    def _add_request_to_queue(self, req, is_retracted=False):
        if is_retracted:  # a retracted request starts its re-issue budget over (SCH _add_request_to_queue)
            req.reissued, req.declined = 0, None
        return self.call("_add_request_to_queue", req, is_retracted)

    def _finish(self, handle, outcome):
        """base_prefix_cache.finish: an aborted request's cache state is released."""
        if outcome is CacheRequestOutcome.ABORT:
            self.tree_cache.release_aborted_request(handle)

    # ---- one round's admission (get_new_batch_prefill, reduced to the prefetch path's calls)
    def admit(self, batch: int) -> list[Req]:
        """The requests admitted this round: checked in queue order, up to `batch`."""
        admitted, staging = [], self.staging
        for req in list(self.waiting_queue):
            if not self.check(req):
                continue
            if staging is not None:
                staging.loaded(req)
            req.init_next_round_input(self.tree_cache)
            if self._prefetch_after_device_hit_loss(req):
                continue
            if staging is not None and not staging.staged(req):  # its staged span shrank: a refetch is armed
                continue
            if len(admitted) >= batch:  # add_one_req: no room left (NO_TOKEN) ends the round's admission
                break
            if staging is not None and not staging.load_back(req):
                continue
            admitted.append(req)
            if req in self.aborted:  # retry_judge.py: the client was told it ended
                self.observe(f"req{req.q} admitted after its abort")
                self.revived.append(req)
        retries = getattr(self.tree_cache, "storage_prefetch_retries", None)
        if retries is not None:
            for req in admitted:
                retries.cancel(req.rid)
        self.waiting_queue = [r for r in self.waiting_queue if r not in admitted]
        return admitted
