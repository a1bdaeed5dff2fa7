"""The scheduler loop of the retry world (CodeConfig.retries): the tree's own Scheduler methods
(scheduler_methods.py) issue, re-issue and readmit, on the waiting-queue stand-in
(waiting_queue.py). Each round: the drain (check_hicache_events), in reset_round the cache's reset
(cache_reset.py), the due retries
(_process_storage_prefetch_retries, as SCH _process_hicache_events runs them), the client's aborts,
then admission; an admitted request is retracted and readmitted (`_add_request_to_queue(req,
is_retracted=True)`) up to `readmissions` times; with `rid_reuse` the client sends a new request
under an aborted request's rid; with `arrival_round` the last request arrives in that round, after
the client's aborts (SCH process_input_requests), under the server's queue settings of
CodeConfig.arrival: it may abort a waiting request whose prefetch is in flight, or be refused."""

from __future__ import annotations

from pathlib import Path

from prefetch_check.model.code.stand_ins.errors import NotModelled
from prefetch_check.model.code.worlds.ack_drain.scheduler_methods import RETRY, SCHEDULER
from prefetch_check.model.code.worlds.ack_drain.waiting_queue import Req, SchedulerStandIn

CACHE = "mem_cache/unified_radix_cache.py"
NEEDED = ("_prefetch_kvcache", "_add_request_to_queue", "_release_aborted_request") + RETRY


def scheduler_of(run, rank, staging=None) -> SchedulerStandIn:
    """Rank's scheduler object, with the tree's methods; a release without them is not modelled."""
    cfg = run.config
    srt = Path(run.modules[CACHE].__file__).resolve().parents[1]
    sch = SchedulerStandIn(srt, rank.cache, cfg.retry_interval, cfg.retry_attempts, run.baton.observe, staging,
                           cfg.host_memory_mode)
    missing = [n for n in NEEDED if not sch.has(n)]
    if missing or getattr(rank.cache, "storage_prefetch_retries", None) is None:
        raise NotModelled(f"Scheduler.{(missing or ['storage_prefetch_retries'])[0]} (the retry world runs "
                          "0.5.23's StoragePrefetchRetries path)", f"{SCHEDULER}")
    return sch


def drive(run, rank, staging=None) -> None:
    """Rank's scheduler loop; `staging`: buffer_only's admission steps (buffer/admission.py)."""
    cfg, cache = run.config, rank.cache
    sch = scheduler_of(run, rank, staging)
    run.schedulers[rank.index] = sch
    by_handle = not isinstance(rank.handles[0], str)
    page = cfg.page_size

    late = cfg.requests - 1 if cfg.arrival_round is not None else None
    late_priority = sch.serve(cfg.arrival, late) if late is not None else None
    sch.expecting = late is not None  # a round is due until the late request arrives (pending)

    def request(q: int) -> Req:
        req = Req(q, f"req{q}", run.tokens(q) + [q * 1000 + 999], page, cfg.lost_device_pages, by_handle,
                  run.baton.roots, sch.entries, late_priority if q == late else None)
        if staging is not None:  # its device match is the device tree's
            req.match = lambda req=req: staging.match(req)
        sch.sent.append(req)
        return req

    def sync() -> None:
        rank.waiting[:] = [r.q for r in sch.waiting_queue]

    deadlines = run.deadlines
    if deadlines is not None:  # timeout: each check judged by the deadlines (worlds/deadlines.py)
        sch.check = lambda req: deadlines.check(rank, req.q, req.cache_request_handle,
                                                lambda: cache.check_prefetch_progress(req.cache_request_handle))

    for q in range(late if late is not None else cfg.requests):
        req = request(q)
        sch._add_request_to_queue(req)
        req.device_lost = cfg.lost_device_pages > 0  # evicted from the device while it waits
    sync()
    readmitted = [0] * cfg.requests
    while True:
        run.enter_round(rank)
        run.round_begins(rank)
        if deadlines is not None:
            deadlines.round_starts(rank)
        cache.check_hicache_events()
        run.after_events(rank)  # the cache's reset (cache_reset.py) comes here, before the retries' poll
        sch._process_storage_prefetch_retries()
        if rank.rounds == cfg.abort_round:  # SCH's abort path: _release_aborted_request -> tree_cache.finish
            for req in list(sch.waiting_queue):
                run.happened("abort_round")
                run.world.draining.pop(rank.index, None)
                sch._release_aborted_request(req)
                sch.waiting_queue.remove(req)
                sch.aborted.append(req)
                run.baton.observe(f"aborted req{req.q}")
                if cfg.rid_reuse:  # the client sends a new request under the same rid
                    sch._add_request_to_queue(request(req.q))
                    run.baton.observe(f"req{req.q}'s rid reused by a new request")
        run.world.draining.pop(rank.index, None)  # what follows is the scheduler's own, not the drain's
        if rank.rounds == cfg.arrival_round:
            run.happened("arrival_round")
            sch.expecting = False
            req = request(late)
            sch._add_request_to_queue(req)
            req.device_lost = cfg.lost_device_pages > 0
        for req in sch.admit(cfg.batch or cfg.requests):
            q = req.q
            held = run.held_tokens(rank, q)
            rank.resolved[q] = min(rank.resolved.get(q, held), held)  # the shortest admission is judged
            rank.admitted_round.setdefault(q, rank.rounds)  # the ranks' first admissions must agree
            run.baton.observe(f"admitted req{q} with {held} tokens {run.HELD_WHERE}")
            if deadlines is not None:
                deadlines.admitted(rank, q)
            if readmitted[q] < cfg.readmissions:  # retracted: SCH re-adds it to the queue
                readmitted[q] += 1
                sch._add_request_to_queue(req, True)
                run.baton.observe(f"req{q} retracted and readmitted ({readmitted[q]})")
        sync()
        run.round_ends(rank)


def pending(run) -> bool:
    """Whether some rank's scheduler still has a retry to pace, a waiting request no prefetch
    holds (the next round admits or re-issues it) or a request still to arrive (arrival_round):
    rounds go on while so."""
    for rank in run.ranks:
        sch = run.schedulers.get(rank.index)
        if sch is None:
            continue
        if sch.expecting:
            return True
        armed = getattr(sch.tree_cache.storage_prefetch_retries, "_pending", {})
        if any(r.rid in armed or r.cache_request_handle not in sch.tree_cache.ongoing_prefetch
               for r in sch.waiting_queue):
            return True
    return False
