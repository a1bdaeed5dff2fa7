"""What a run of the retry world (CodeConfig.retries) is judged for beyond the prefetch path's
properties, at the end of a run where every request was admitted or aborted:

- request_release: a request aborted (by its client, or by the scheduler for another's arrival:
  the queue full, a higher priority, a refused priority) is never admitted after, nor left in the
  waiting queue; a request that left the waiting queue (admitted, or aborted) leaves nothing of
  itself in the cache: no paced retry armed under its rid
  (StoragePrefetchRetries' entries are cancelled at admission, at abort and at expiry) and, once
  aborted, nothing the cache keeps per request (release_aborted_request drops its operation, its
  deadline and its loaded-token records). A rid a new request reuses is that request's, not a
  leftover;
- progress: the retry policy's bound, StoragePrefetchRetries' own contract ("a request past its
  re-issue budget is admitted with what the device holds"): no request re-issued more often
  than hicache_storage_prefetch_retry_max_attempts (CodeConfig.retry_attempts) since it entered
  the waiting queue (a retracted request starts over, as _add_request_to_queue resets it). The
  re-issues are counted by the scheduler stand-in at each _retry_storage_prefetch call, not read
  from the request's storage_prefetch_retry_attempts: a counter the code stops advancing must not
  hide the re-issues it no longer counts;
- progress: the retry policy's other promise, a lookup the rate limiter declined is retried once
  the poll interval has passed (prefetch_from_storage: "Paced: the limiter clears as transfers
  finish"), judged on a request that waited behind the queue head that long with re-issues left
  (waiting_queue.py's retry poll);
- progress: an immediate refetch (StoragePrefetchRetries.refetch: buffer_only's anchor lost before
  the IO commit, or a staged span whose device anchor shrank before admission) armed for a waiting
  request with re-issues left is re-issued at the next retry poll (pop_ready passes immediate
  retries whatever the pacing, the queue head's too: only a speculative miss is dropped there),
  judged by what it costs: a request whose missed refetch no later re-issue (the device-hit-loss
  re-query) made up for."""

from __future__ import annotations

from prefetch_check.model.code.rt.verdicts import Finding

PROPERTY = "request_release"
LEFT = ("cache state of a request that is gone: the paced-retry set and the ongoing prefetches grow with "
        "every such request, and a client that reuses the rid inherits the leftover")
PAST_CAP = ("storage lookups past the re-issue cap: the retry policy no longer bounds the lookups a waiting "
            "request costs the storage backend")
# what the cache keeps per request (0.5.23's UnifiedRadixCache) and release_aborted_request drops;
# an attribute a tree lacks is skipped (the stand-in admission does not pop the loaded-token
# records of an admitted request, so only aborted requests are judged by them)
HELD_BY_REQUEST = ("ongoing_prefetch", "_storage_prefetch_wait", "prefetch_loaded_tokens_by_reqid",
                   "prefetch_loaded_storage_start_by_reqid", "_storage_prefetch_hit_remaining_by_reqid")
MISSED = ("a prefetch lost: a request the rate limiter declined is admitted without the storage lookup the "
          "retry policy promises once the limiter clears (slower but correct output)")
REFETCH_MISSED = ("a prefetch lost: the span a request's staged prefetch or anchor lost is not fetched again "
                  "as the retry policy promises; the request is admitted with less of its prefix (slower but "
                  "correct output)")
REVIVED = ("an aborted request still scheduled: the server computes a request its client was told has ended, "
           "with the KV cache and batch room of a live one")
NOT_RETRIES = "the scheduler's retry path or a client's abort: CodeConfig(retries=True) or CodeConfig(abort_round=N)"


def judge(run, terminal: bool, found: list[Finding]) -> list[Finding]:
    """The findings of a retry-world run's end (none before, or where the run already failed)."""
    if not terminal or not run.config.retries:
        return []
    if any(f.prop in ("not_modelled", "deadlock_freedom", "no_crash") for f in found):
        return []
    out, steps, cap = [], len(run.baton.steps), run.config.retry_attempts
    for rank in run.ranks:
        sch = run.schedulers.get(rank.index)
        if sch is None:
            continue
        cache, waiting = sch.tree_cache, sch.waiting_queue
        for req in sch.sent:
            if req.reissued > cap:
                out.append(Finding("progress", f"rank {rank.index}: req{req.q} re-issued {req.reissued} times "
                                   f"since it entered the waiting queue, past the cap of {cap}", PAST_CAP, "", steps))
            if req.retry_missed:
                out.append(Finding("progress", f"rank {rank.index}: req{req.q}'s lookup was declined by the rate "
                                   "limiter and it waited behind the queue head past its retry interval with "
                                   "re-issues left, never re-queried", MISSED, "", steps))
            if req.refetch_missed:
                out.append(Finding("progress", f"rank {rank.index}: req{req.q} was armed for an immediate refetch "
                                   "(its staged span or anchor lost), the next retry poll did not re-issue it with "
                                   "re-issues left, and nothing re-issued it after", REFETCH_MISSED, "", steps))
        rids = {r.rid for r in waiting}
        for rid in sorted(getattr(cache.storage_prefetch_retries, "_pending", {})):
            if rid not in rids:
                out.append(Finding(PROPERTY, f"rank {rank.index}: a retry still armed for {rid}, which left the "
                                   "waiting queue", LEFT, "", steps))
        for req in sch.aborted:
            if req in sch.revived or req in waiting:
                where = "was admitted after it" if req in sch.revived else "is still in the waiting queue"
                out.append(Finding(PROPERTY, f"rank {rank.index}: req{req.q} was aborted and {where}", REVIVED, "",
                                   steps))
        live = {r.cache_request_handle for r in sch.sent if r not in sch.aborted}  # a reused rid's new request
        for req in sch.aborted:
            handle = req.cache_request_handle
            kept = held_by(cache, handle)
            if kept and handle not in live:
                out.append(Finding(PROPERTY, f"rank {rank.index}: req{req.q} was aborted, the cache still holds it in "
                                   f"{', '.join(kept)}", LEFT, "", steps))
    return out


def held_by(cache, handle) -> list[str]:
    """The per-request records of the cache (HELD_BY_REQUEST) that still hold `handle`."""
    return [name for name in HELD_BY_REQUEST if handle in (getattr(cache, name, None) or {})]
