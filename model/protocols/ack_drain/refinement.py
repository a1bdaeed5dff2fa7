"""The refinement mapping of the ack-drain protocol: what a run of a tree's own code (the
executor's stand-ins and each thread's position) says about every rank, in the words of the
model's rank state (state.py); and the same view of a model state.

Why: the model may answer for a tree only where the tree's code has been shown to do what the
model does (issue 22). The conformance check (model/code/conformance/check.py) replays model schedules
on the code and compares `model_view` of each model state with `code_view` of the code, step by
step: a code step that changes nothing of the view is a stuttering step, and a model step may
match a run of code steps. Both views are flat dicts "r<rank>.<field>" -> a plain value.

The fields (per rank r; i an operation, numbered as the model does: the request's base plus its
prefetch's generation; q a request):
  S                    the scheduler's place: ("issue", q), ("round",) until the drain has read
                       the sizes of the three queues it pops, ("drain",) after, ("walk", q) while
                       it checks q (or admits it again), ("dead",)
  P, IO                the operation the thread holds (taken from its input queue, not yet handed
                       on: P to prefetch_hit_queue, IO's completed_req to prefetch_sync_queue),
                       -1, or "dead"; P holds it once it has read the operation's terminated
                       flag (the model's P.take pops and reads it in one step)
  Y                    the progress ACK the sync thread holds: (i, pages), or ()
  S.coll, P.coll, Y.coll   (TP > 1) whether the scheduler waits in the drain's all_reduce; the
                       value the prefetch / sync thread waits with (the reduced value once every
                       rank arrived), or None
  prefetch_queue, prefetch_hit_queue, prefetch_buffer   the operations on them, in order
  prefetch_sync_queue, ack_prefetch_queue   ACKs: (i, "progress", pages) or (i, "completed_req")
  host_mem_release_queue   pages queued for release
  #i.hash_value        len(hash_value), in pages
  #i.slots             host_indices per page: None, or a string of H (held), R (given back:
                       freed, queued for release or taken off the queue by the drain that frees
                       it, or taken by a later operation), T (the host
                       tree owns it), X (given back twice: freed twice, queued twice, or queued
                       while the tree owns it)
  #i.written, #i.completed   leading pages written into their slots; completed_tokens in pages
  #i.terminated        the terminated flag
  q.ongoing, q.tree, q.ready   the operation ongoing_prefetch holds for q (-1: none), the pages of
                       q in the host tree, whether the scheduler admitted q

Left out, with no counterpart in the code: the model's operation stages (the queues and
host_indices say it), the IO thread's batch and page counters (its writes and ACKs say them),
`disturbed`, `timed_out`, `wait_started`, the observers `acks_mixed` and `stale`, the
scheduler's check counter and round number, `Req.gen`, `aborted` and `cut`.
"""

from __future__ import annotations

from collections import Counter

from prefetch_check.model.protocols.ack_drain.state import (
    C_DRAIN, DEAD, NO_OP, PROGRESS, S_CHECK, S_CRASHED, S_DRAIN_WAIT, S_ISSUE, S_ROUND, S_VOTE_WAIT,
)

SLOT_LETTERS = "HRTX"  # HELD, RELEASED, IN_TREE, DOUBLE (host_slot_status.py)
S_PLACES = {S_ISSUE: "issue", S_ROUND: "round", S_DRAIN_WAIT: "drain", S_CHECK: "walk", S_VOTE_WAIT: "vote"}
GROUPS = {"S": "S-tp", "P": "P-hits", "Y": "Y-completion"}  # the executor's group of each thread


# ---------------------------------------------------------------- the model's side


def model_view(protocol, state) -> dict:
    """The view of a global model state (a tuple of ranks)."""
    out = {}
    for r, rank in enumerate(state):
        for k, v in model_rank_view(protocol, rank).items():
            out[f"r{r}.{k}"] = v
    return out


def model_rank_view(protocol, rank) -> dict:
    kind, q, _ = rank.s_pc
    v = {
        "S": ("dead",) if kind == S_CRASHED else (S_PLACES[kind], q) if kind in (S_ISSUE, S_CHECK, S_VOTE_WAIT)
        else (S_PLACES[kind],),
        "P": "dead" if rank.p_pc == DEAD else rank.p_pc,
        "IO": "dead" if rank.i_pc == (DEAD,) else rank.i_pc[0] if rank.i_pc else -1,
        "Y": (rank.y_pc[0], rank.y_pc[2]) if rank.y_pc else (),
        "prefetch_queue": tuple(rank.prefetch_queue),
        "prefetch_hit_queue": tuple(rank.hit_queue),
        "prefetch_buffer": tuple(rank.prefetch_buffer),
        "prefetch_sync_queue": tuple(_model_ack(a) for a in rank.sync_queue),
        "ack_prefetch_queue": tuple(_model_ack(a) for a in rank.ack_queue),
        "host_mem_release_queue": rank.release_queue,
    }
    if protocol.ranks > 1:
        v["S.coll"] = bool(rank.s_coll) and rank.s_coll[0][0] == C_DRAIN
        v["P.coll"] = rank.p_coll[2][0] if rank.p_coll else None
        v["Y.coll"] = rank.y_coll[2][0] if rank.y_coll else None
    for i, op in enumerate(rank.ops):
        if not op.issued:
            continue
        v[f"#{i}.hash_value"] = op.hash_value
        v[f"#{i}.slots"] = "".join(SLOT_LETTERS[s] for s in op.slots) if op.slots else None
        v[f"#{i}.written"] = op.written
        v[f"#{i}.completed"] = op.completed
        v[f"#{i}.terminated"] = op.terminated
    for q, req in enumerate(rank.reqs):
        v[f"q{q}.ongoing"] = -1 if req.ongoing == NO_OP else req.ongoing
        v[f"q{q}.tree"] = req.tree
        v[f"q{q}.ready"] = req.ready
    return v


def _model_ack(ack) -> tuple:
    i, kind, pages = ack
    return (i, "progress", pages) if kind == PROGRESS else (i, "completed_req")


# ---------------------------------------------------------------- the code's side


def code_view(protocol, run) -> dict:
    """The view of a conformance run of the tree's code (model/code/worlds/ack_drain/conformance_run.py's ConformRun:
    the executor's Run with the scheduler's place, what each thread holds and the pages written
    recorded). Reads the stand-ins without scheduling points."""
    ops = _operations(run)
    out = {}
    for rank in run.ranks:
        for k, v in _code_rank_view(protocol, run, rank, ops[rank.index]).items():
            out[f"r{rank.index}.{k}"] = v
    return out


def _operations(run) -> dict[int, list]:
    """Per rank, its PrefetchOperations in creation order (the hooks register each one)."""
    out: dict[int, list] = {rank.index: [] for rank in run.ranks}
    for part in run.world.parts:
        op = getattr(part, "__dict__", {}).get("op")  # an OpPart (stand-ins raise on unknown names)
        label = getattr(op, "__dict__", {}).get("_pc_label") if op is not None else None
        if label:
            out[int(label[1:label.index(".")])].append(op)
    return out


def operations(run, r: int) -> list:
    """Rank r's PrefetchOperations in creation order."""
    return _operations(run)[r]


def request_of(op) -> int:
    """The request an operation belongs to: the harness names request q `req<q>`."""
    d = op.__dict__
    rid = getattr(d.get("handle"), "rid", None) or d.get("request_id")
    return int(str(rid)[3:])


def _numbering(protocol, ops: list) -> dict[int, int]:
    """id(operation) -> the model's operation index (request base + generation)."""
    out, gens = {}, {}
    for op in ops:
        q = request_of(op)
        gen = gens.get(q, 0)
        gens[q] = gen + 1
        out[id(op)] = protocol.op_index(q, gen) if gen < protocol.config.requests[q].generations else -100 - gen
    return out


def _code_rank_view(protocol, run, rank, ops: list) -> dict:
    ps = protocol.config.page_size
    index = _numbering(protocol, ops)
    num = lambda op: index.get(id(op), "?") if op is not None else -1  # noqa: E731
    threads = {m.role: m for m in run.baton.threads if m.rank == rank.index}
    cc = rank.cc

    def held(role):
        if threads[role].status == "dead":
            return "dead"
        if role == "prefetch" and not rank.decided:  # taken, its terminated flag not read yet
            return -1
        return num(rank.holding.get(role))

    ack_held = rank.holding.get("sync")
    v = {
        "S": ("dead",) if threads["scheduler"].status == "dead" else rank.pos,
        "P": held("prefetch"),
        "IO": held("io"),
        "Y": (num(ack_held.__dict__["operation"]), ack_held.__dict__["completed_tokens"] // ps)
        if ack_held is not None and ack_held.__dict__.get("completed_tokens") is not None else (),
        "prefetch_queue": tuple(num(op) for op in cc.prefetch_queue.items),
        "prefetch_hit_queue": tuple(num(op) for op in cc.prefetch_hit_queue.items),
        "prefetch_buffer": tuple(num(op) for op in cc.prefetch_buffer.items),
        "prefetch_sync_queue": tuple(_code_ack(a, num, ps) for a in cc.prefetch_sync_queue.items),
        "ack_prefetch_queue": tuple(_code_ack(a, num, ps) for a in cc.ack_prefetch_queue.items),
        "host_mem_release_queue": sum(len(t.data) for t in cc.host_mem_release_queue.items) // ps,
    }
    if protocol.ranks > 1:
        # the drain's collective (the model's S.coll); the timeout vote's is the place "vote"
        v["S.coll"] = _waits_in(run, threads["scheduler"], "S") is not None and rank.pos[0] != "vote"
        v["P.coll"] = _waits_in(run, threads["prefetch"], "P")
        v["Y.coll"] = _waits_in(run, threads["sync"], "Y")
        v["P.coll"] = None if v["P.coll"] is None else v["P.coll"] // ps
        v["Y.coll"] = None if v["Y.coll"] is None else v["Y.coll"] // ps
    queued = Counter(s for t in cc.host_mem_release_queue.items for s in t.data)
    queued.update(rank.releasing)
    twice = _given_back_twice(run, rank.index)
    for op in ops:
        i = num(op)
        d = op.__dict__
        v[f"#{i}.hash_value"] = len(d.get("hash_value") or [])
        v[f"#{i}.slots"] = _slots(op, ops, rank.pool, queued, twice, ps)
        v[f"#{i}.written"] = _leading(rank.writes.get(d["_pc_label"], set()))
        v[f"#{i}.completed"] = (d.get("completed_tokens") or 0) // ps
        v[f"#{i}.terminated"] = bool(d.get("_terminated_flag"))
    for q, handle in enumerate(rank.handles):
        entry = rank.cache.ongoing_prefetch.get(handle)
        v[f"q{q}.ongoing"] = num(operation_of(entry)) if entry is not None else -1
        v[f"q{q}.tree"] = rank.tree.held.get(q, 0) // ps
        v[f"q{q}.ready"] = rank.ready[q]
    return v


def operation_of(entry):
    """The operation an ongoing_prefetch entry holds (0.5.20+: `.operation`; 0.5.19: a tuple)."""
    found = getattr(entry, "operation", None)
    if found is None and isinstance(entry, tuple):
        found = next((x for x in entry if "_pc_label" in getattr(x, "__dict__", {})), None)
    return found


def _code_ack(ack, num, ps: int) -> tuple:
    d = ack.__dict__
    i = num(d.get("operation"))
    if d.get("completed_req"):
        return (i, "completed_req")
    if d.get("completed_tokens") is not None:
        return (i, "progress", d["completed_tokens"] // ps)
    return (i, "other")  # e.g. a pool_hits ACK: the model sends none


def _waits_in(run, thread, letter: str):
    """The value `thread` waits with in its group's all_reduce (reduced once all arrived), else None."""
    if thread.status != "parked" or thread.point is None or not thread.point.label.endswith(f"leave {GROUPS[letter]}"):
        return None
    group = run.groups[GROUPS[letter]]
    arrived = group.arrived.get(group.calls[thread.rank], {})
    values = [a[3][0] for a in arrived.values()]
    if thread.rank not in arrived:
        return None
    if len(arrived) == len(group.ranks):
        reduce = {"MIN": min, "MAX": max, "SUM": sum}.get(arrived[thread.rank][1], min)
        return reduce(values)
    return arrived[thread.rank][3][0]


def _given_back_twice(run, r: int) -> set:
    """Slots the host pool saw freed twice (or freed while the tree owned them) on rank r."""
    out = set()
    for f in run.world.faults:
        if f.prop == "host_memory" and f.message.startswith(f"rank {r}: host slot "):
            out.add(int(f.message.split()[4]))
    return out


def _slots(op, ops: list, pool, queued: Counter, twice: set, ps: int):
    indices = op.__dict__.get("host_indices")
    if indices is None:
        return None
    out = []
    for s in indices.data[::ps]:
        mine = owner(ops, s) is op
        if s in twice or mine and (queued[s] > 1 or queued[s] and pool.status[s] in ("tree", "free")):
            out.append("X")  # freed twice, queued twice, or queued while the tree owns it (or freed)
        elif not mine or pool.status[s] == "free" or queued[s]:
            out.append("R")
        else:
            out.append("T" if pool.status[s] == "tree" else "H")
    return "".join(out)


def owner(ops: list, slot: int):
    """The operation a host slot is currently allocated to: the latest-created one whose
    host_indices hold it (an earlier one gave it back before a later one could be given it)."""
    for op in reversed(ops):
        indices = op.__dict__.get("host_indices")
        if indices is not None and slot in indices.data:
            return op
    return None


def _leading(pages: set) -> int:
    n = 0
    while n in pages:
        n += 1
    return n
