"""The refinement mapping of the predicate-poll protocol (0.5.1-0.5.18): what a run of a tree's
own code in the executor's poll world (model/code/worlds/predicate_poll/harness.py: the stand-ins and each
thread's position) says about every rank, in the words of the model's rank state (state.py);
and the same view of a model state.

Why: the model may answer for a tree only where the tree's code has been shown to do what the
model does (issue 22). The conformance check (model/code/conformance/check.py, one replay loop for
both protocols) compares `model_view` of each model state with `code_view` of the code, step by
step. Both views are flat dicts "r<rank>.<field>" -> a plain value.

The fields (per rank r; q a request, which is also its operation's number: one prefetch each):
  S                    the scheduler's place: ("issue", q); ("round",) until the drain has read
                       the sizes of the queues the model's drain agrees on (Config.drain_queues);
                       ("drain",) after; ("check", q) while check_prefetch_progress(q) evaluates
                       the predicate; ("vote", q) once it arrived in the MAX vote (TP > 1) or
                       can_terminate_prefetch returned (TP = 1); ("min", q) once
                       terminate_prefetch returned, ("insert", q) instead where no MIN of
                       completed_tokens follows (0.5.1.x under wait_complete); ("dead",)
  P                    the operation the prefetch thread took off prefetch_queue and has not
                       handed on (revoke queue, prefetch_buffer or prefetch_hit_queue), -1, or
                       "dead"; with hit-time allocation it holds it once it read the terminated
                       flag (the model's P.take reads it with the pop)
  IO                   the operation the IO thread took off prefetch_buffer, until it asks for
                       the next one; -1; "dead"
  S.coll, P.coll       (TP > 1) what the thread waits with in its group's all_reduce (reduced
                       once every rank arrived), or None: S ("round", k) in the round's k-th
                       collective before the drain (Config.round_collectives: which call
                       of the round it is says k, its value nothing), the drain (True), the vote
                       ("vote", not_can_terminate, terminated) or ("min", completed pages); P its
                       hit pages
  prefetch_queue, prefetch_buffer, prefetch_hit_queue (hit-time allocation),
  prefetch_revoke_queue (where the prefetch thread revokes)   the requests on them, in order
  host_mem_release_queue   pages queued for release (0 where threads free at once)
  #q.hash_value, #q.completed   len(hash_value) and completed_tokens, in pages
  #q.slots             host_indices per page, as in the ack-drain mapping: None (not allocated),
                       H held, R given back, T the host tree owns it, X given back twice
  #q.written           leading pages IO wrote into the operation's slots
  #q.terminated        the terminated flag (`_done_flag` in 0.5.1-0.5.1.post3)
  q.ongoing, q.tree, q.ready   whether ongoing_prefetch has q, the pages of q in the host tree,
                       whether the scheduler's check said q is ready

Left out, with no counterpart in the code: the operation's stage (the queues and host_indices
say it), the IO thread's page and phase (its writes and counts say them), `io_failed`,
`timed_out` (the executor's clock does not move), `allocated` (host_indices says it), the
scheduler collective's values of the drain (what the drain pops says them), and the code's
ack_backup_queue, write and load queues (empty in this world; the model has none).
"""

from __future__ import annotations

from collections import Counter

from prefetch_check.model.protocols.ack_drain.refinement import SLOT_LETTERS, _given_back_twice, _leading, owner
from prefetch_check.model.protocols.poll.state import (
    C_COMPLETED, C_DRAIN, C_ROUND, C_TERMINATE, S_CHECK, S_DRAIN, S_DRAIN_WAIT, S_INSERT, S_ISSUE, S_MAX_WAIT,
    S_MIN_WAIT, S_ROUND_WAIT,
)

S_PLACES = {S_ISSUE: "issue", S_DRAIN: "round", S_ROUND_WAIT: "round", S_DRAIN_WAIT: "drain", S_CHECK: "check",
            S_MAX_WAIT: "vote", S_MIN_WAIT: "min", S_INSERT: "insert"}
ROUND_PLACES = (S_DRAIN, S_ROUND_WAIT, S_DRAIN_WAIT)  # places named without a request
GROUPS = {"S": "S-tp", "P": "P-hits"}  # the poll world's group of each thread
CODE_QUEUES = {"revoke": "prefetch_revoke_queue", "hit": "prefetch_hit_queue", "release": "host_mem_release_queue"}


# ---------------------------------------------------------------- the model's side


def model_view(protocol, state) -> dict:
    """The view of a global model state (a tuple of ranks)."""
    out = {}
    for r, rank in enumerate(state):
        for k, v in model_rank_view(protocol, rank).items():
            out[f"r{r}.{k}"] = v
    return out


def model_rank_view(protocol, rank) -> dict:
    cfg = protocol.config
    kind, q = rank.s_pc
    v = {
        "S": (S_PLACES[kind], q) if kind not in ROUND_PLACES else (S_PLACES[kind],),
        "P": rank.p_pc,
        "IO": rank.i_pc[0] if rank.i_pc else -1,
        "prefetch_queue": tuple(rank.prefetch_queue),
        "prefetch_buffer": tuple(rank.prefetch_buffer),
        "host_mem_release_queue": rank.release_queue,
    }
    if cfg.revoke_queue_exists:
        v["prefetch_revoke_queue"] = tuple(rank.revoke_queue)
    if cfg.alloc_at == "hit":
        v["prefetch_hit_queue"] = tuple(rank.hit_queue)
    if cfg.ranks > 1:
        v["S.coll"] = _model_s_coll(rank.s_coll)
        v["P.coll"] = rank.p_coll[2][0] if rank.p_coll else None
    for q, op in enumerate(rank.ops):
        if op.issued:
            v[f"#{q}.hash_value"] = op.hash_value
            v[f"#{q}.slots"] = "".join(SLOT_LETTERS[s] for s in op.slots) if op.allocated else None
            v[f"#{q}.written"] = op.written
            v[f"#{q}.completed"] = op.completed
            v[f"#{q}.terminated"] = op.terminated
        v[f"q{q}.ongoing"] = op.ongoing
        v[f"q{q}.tree"] = max(op.inserted, 0) // cfg.page_size
        v[f"q{q}.ready"] = op.ready
    return v


def _model_s_coll(reg):
    if not reg:
        return None
    (kind, k), _, value = reg
    if kind == C_DRAIN:
        return True
    if kind == C_ROUND:
        return ("round", k)
    if kind == C_TERMINATE:
        return ("vote",) + tuple(value)
    if kind == C_COMPLETED:
        return ("min", value[0])
    return None


# ---------------------------------------------------------------- the code's side


def code_view(protocol, run) -> dict:
    """The view of a poll conformance run (model/code/worlds/predicate_poll/conformance_run.py: the poll world's
    run with the scheduler's place, what each thread holds and the pages written recorded).
    Reads the stand-ins without scheduling points."""
    ops = operations_by_rank(run)
    out = {}
    for rank in run.ranks:
        for k, v in _code_rank_view(protocol, run, rank, ops[rank.index]).items():
            out[f"r{rank.index}.{k}"] = v
    return out


def operations_by_rank(run) -> dict[int, list]:
    """Per rank, its PrefetchOperations in creation order (the hooks register each one)."""
    out: dict[int, list] = {rank.index: [] for rank in run.ranks}
    for part in run.world.parts:
        op = getattr(part, "__dict__", {}).get("op")
        label = getattr(op, "__dict__", {}).get("_pc_label") if op is not None else None
        if label:
            out[int(label[1:label.index(".")])].append(op)
    return out


def request_of(op) -> int:
    """The request an operation belongs to: the harness names request q `req<q>`."""
    return int(str(op.__dict__.get("request_id"))[3:])


def _code_rank_view(protocol, run, rank, ops: list) -> dict:
    cfg, ps = protocol.config, protocol.config.page_size
    threads = {m.role: m for m in run.baton.threads if m.rank == rank.index}
    cc = rank.cc
    num = lambda op: request_of(op) if op is not None else -1  # noqa: E731
    rid = lambda x: int(str(x)[3:])  # noqa: E731  (a request id on the revoke queue)

    def held(role):
        if threads[role].status == "dead":
            return "dead"
        if role == "prefetch" and not rank.decided:
            return -1
        return num(rank.holding.get(role))

    buffer = cc.__dict__.get("prefetch_buffer")  # the prefetch thread makes it when it starts
    v = {
        "S": ("dead",) if threads["scheduler"].status == "dead" else scheduler_place(protocol, run, rank, threads["scheduler"]),
        "P": held("prefetch"),
        "IO": held("io"),
        "prefetch_queue": tuple(num(op) for op in cc.prefetch_queue.items),
        "prefetch_buffer": tuple(num(op) for op in buffer.items) if buffer is not None else (),
        "host_mem_release_queue": sum(len(t.data) for t in cc.host_mem_release_queue.items) // ps,
    }
    if cfg.revoke_queue_exists:
        v["prefetch_revoke_queue"] = tuple(rid(x) for x in cc.prefetch_revoke_queue.items)
    if cfg.alloc_at == "hit":
        v["prefetch_hit_queue"] = tuple(num(op) for op in cc.prefetch_hit_queue.items)
    if cfg.ranks > 1:
        v["S.coll"] = _code_s_coll(protocol, run, rank, threads["scheduler"])
        hits = waits_with(run, threads["prefetch"], GROUPS["P"])
        v["P.coll"] = None if hits is None else hits[0] // ps
    queued = Counter(s for t in cc.host_mem_release_queue.items for s in t.data)
    queued.update(rank.releasing)
    twice = _given_back_twice(run, rank.index)
    for op in ops:
        q = num(op)
        d = op.__dict__
        if d.get("host_indices") is not None:  # the allocation, as first seen (before publish truncates it)
            rank.allocated.setdefault(d["_pc_label"], d["host_indices"])
        v[f"#{q}.hash_value"] = len(d.get("hash_value") or [])
        v[f"#{q}.slots"] = _slots(rank.allocated.get(d["_pc_label"]), op, ops, rank.pool, queued, twice, ps)
        v[f"#{q}.written"] = _leading(rank.writes.get(d["_pc_label"], set()))
        v[f"#{q}.completed"] = (d.get("completed_tokens") or 0) // ps
        v[f"#{q}.terminated"] = bool(d.get("_terminated_flag", d.get("_done_flag")))
    for q, handle in enumerate(rank.handles):
        v[f"q{q}.ongoing"] = handle in rank.cache.ongoing_prefetch
        v[f"q{q}.tree"] = rank.tree.held.get(q, 0) // ps
        v[f"q{q}.ready"] = rank.ready[q]
    return v


def scheduler_place(protocol, run, rank, thread) -> tuple:
    """The model's scheduler place of the code's scheduler: its loop's place (rank.pos), refined
    inside check_prefetch_progress by how far it got (rank.phase, set by the run's recorders)."""
    pos = rank.pos
    if pos[0] != "check":
        return pos
    q = pos[1]
    if rank.phase == "terminated":
        return ("insert", q) if protocol.skips_completed_min() else ("min", q)
    if rank.phase == "voted" or rank.phase == "voting" and waits_with(run, thread, GROUPS["S"]) is not None:
        return ("vote", q)
    return pos


def _code_s_coll(protocol, run, rank, thread):
    value = waits_with(run, thread, GROUPS["S"])
    if value is None:
        return None
    place = scheduler_place(protocol, run, rank, thread)
    if place[0] == "drain":
        return True
    if place[0] == "round":  # the round's k-th collective before the drain (writing_check, loading_check)
        return ("round", run.groups[GROUPS["S"]].calls[rank.index] - rank.round_start)
    if place[0] == "vote":
        return ("vote",) + tuple(value[:2])
    if place[0] == "min":
        return ("min", value[0] // protocol.config.page_size)
    return ("other",) + tuple(value)  # a collective the model's scheduler has not here


def waits_with(run, thread, group_name: str):
    """The values `thread` waits with in its group's all_reduce (reduced once every rank
    arrived), else None."""
    if thread.status != "parked" or thread.point is None or not thread.point.label.endswith(f"leave {group_name}"):
        return None
    group = run.groups[group_name]
    arrived = group.arrived.get(group.calls[thread.rank], {})
    if thread.rank not in arrived:
        return None
    mine = arrived[thread.rank]
    if len(arrived) < len(group.ranks):
        return tuple(mine[3])
    reduce = {"MIN": min, "MAX": max, "SUM": sum}.get(mine[1], min)
    width = min(len(a[3]) for a in arrived.values())
    return tuple(reduce(a[3][i] for a in arrived.values()) for i in range(width))


def _slots(indices, op, ops: list, pool, queued: Counter, twice: set, ps: int):
    """Per page of the operation's allocation (`indices`: host_indices as allocated, before the
    prefetch thread truncates them to the hits), as in the ack-drain mapping: a page no longer in
    the operation's host_indices, free, or queued for release is given back (R)."""
    if indices is None:
        return None
    out = []
    for s in indices.data[::ps]:
        mine = owner(ops, s) is op
        if s in twice or mine and (queued[s] > 1 or queued[s] and pool.status[s] in ("tree", "free")):
            out.append("X")
        elif not mine or pool.status[s] == "free" or queued[s]:
            out.append("R")
        else:
            out.append("T" if pool.status[s] == "tree" else "H")
    return "".join(out)
