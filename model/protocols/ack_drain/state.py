"""The state of one rank under the ack-drain protocol: nested tuples of small ints.

Field names follow SGLang's (`ongoing_prefetch`, `prefetch_hit_queue`, `ack_prefetch_queue`,
`host_mem_release_queue`, `completed_tokens`...). Every page count is in pages; the
threshold alone is in tokens, as upstream compares it.

A request may issue several prefetches over its life (it is preempted after its check and
admitted again under the same request id): each is an operation of its own, numbered
`base(q) + generation`, the same number on every rank.
"""

from __future__ import annotations

from typing import NamedTuple

from prefetch_check.model.interface import DONE, WAITING  # noqa: F401  (the registers' phases)
from prefetch_check.model.protocols.host_slot_status import DOUBLE, HELD, IN_TREE, RELEASED, give_back  # noqa: F401

# host slot status, one entry per allocated page: HELD, RELEASED, IN_TREE, DOUBLE

# ---- the stage of an operation ----
QUEUED = 0  # created by issue, on prefetch_queue
QUERYING = 1  # taken by the prefetch thread, in all_reduce(MIN hits)
HIT = 2  # on prefetch_hit_queue, waiting for the drain to allocate host memory
LOADING = 3  # host memory allocated: on prefetch_buffer or being loaded
REVOKED = 4  # the drain dropped it (revoked, skipped, below threshold, no memory)

# ---- scheduler program counter: (kind, request, checks done this round) ----
S_ISSUE = 0  # about to issue request q (the first prefetches, in order)
S_ROUND = 1  # top of a round: aborts due now, then the drain
S_DRAIN_WAIT = 2  # arrived in the drain all_reduce(MIN)
S_CHECK = 3  # walking the waiting requests: q is next
S_VOTE_WAIT = 4  # arrived in the check's all_reduce(MAX)
S_CRASHED = 5  # the scheduler thread died (an exception)

# ---- IO thread: (op, page, pages counted, all_success, phase) ----
IO_READ = 0  # read page `page` (the next of the current batch)
IO_ACK = 1  # the batch is over: send a progress ACK with the pages counted so far
IO_DONE = 2  # every batch done: send completed_req
DEAD = -2  # a thread ended by an exception (p_pc / i_pc / y_pc)

# ---- ACKs on prefetch_sync_queue / ack_prefetch_queue: (op, kind, pages) ----
PROGRESS = 0
COMPLETED_REQ = 1

# ---- collective kinds; a tag is (kind, subject) ----
C_DRAIN = 0  # scheduler: MIN of [hit queue, ACK queue, release queue] sizes
C_VOTE = 1  # scheduler: MAX of should_terminate
C_HITS = 2  # prefetch thread: MIN of hit pages
C_ACK = 3  # sync thread: MIN of a progress ACK's completed pages (paired by position: no subject)

NO_OP = -1


class Op(NamedTuple):
    """One PrefetchOperation on one rank."""

    issued: bool = False
    stage: int = QUEUED
    hash_value: int = 0  # len(hash_value), in pages: the agreed hits, then the allocated length
    slots: tuple = ()  # per allocated page: HELD / RELEASED / IN_TREE / DOUBLE; () = host_indices None
    written: int = 0  # leading pages whose data is in host memory
    completed: int = 0  # completed_tokens // page_size, as the ACK drain set it
    terminated: bool = False
    timed_out: bool = False
    wait_started: bool = False  # 0.5.23: the admission deadline's clock runs
    disturbed: bool = False  # a read came back short, or a storage call raised, on this rank


class Req(NamedTuple):
    """The scheduler's view of one request on one rank."""

    gen: int = 0  # the generation of its latest prefetch
    ongoing: int = NO_OP  # the operation ongoing_prefetch[rid] holds, or NO_OP
    ready: bool = False  # the scheduler admitted it: the check said done (and nothing is pending)
    tree: int = 0  # pages of the request in the host radix tree
    aborted: bool = False  # its abort was processed (release_aborted_request)
    cut: bool = False  # the abort came while the request was not done


class Rank(NamedTuple):
    """Everything one rank holds. The scheduler's own fields come last: rank symmetry sorts ranks
    as tuples, so ranks are ordered first by what the other threads see (model/engine/symmetry.py)."""

    p_pc: int  # operation the prefetch thread works on, -1 idle, DEAD
    i_pc: tuple  # () idle, (DEAD,), or (op, page, counted, all_success, phase)
    y_pc: tuple  # () idle, (DEAD,), or the ACK in all_reduce(MIN)
    prefetch_queue: tuple
    hit_queue: tuple
    prefetch_buffer: tuple
    sync_queue: tuple  # ACKs from the IO thread to the sync thread
    ack_queue: tuple  # ACKs from the sync thread to the scheduler
    release_queue: int  # entries (pages) on host_mem_release_queue
    acks_mixed: bool  # a progress ACK was reduced together with another operation's ACK
    stale: tuple  # () or (operation, newer operation of the same request it acted on), the first time
    p_coll: tuple
    y_coll: tuple
    ops: tuple
    reqs: tuple
    s_coll: tuple
    s_pc: tuple
    round: int  # drains so far (only counted while an abort is still due)


def initial_rank(ops: int, requests: int) -> Rank:
    return Rank(
        p_pc=-1, i_pc=(), y_pc=(), prefetch_queue=(), hit_queue=(), prefetch_buffer=(), sync_queue=(), ack_queue=(),
        release_queue=0, acks_mixed=False, stale=(), p_coll=(), y_coll=(), ops=(Op(),) * ops, reqs=(Req(),) * requests,
        s_coll=(), s_pc=(S_ISSUE, 0, 0), round=0,
    )


def set_op(rank: Rank, i: int, op: Op, **changes) -> Rank:
    return rank._replace(ops=rank.ops[:i] + (op,) + rank.ops[i + 1 :], **changes)


def set_req(rank: Rank, q: int, req: Req, **changes) -> Rank:
    return rank._replace(reqs=rank.reqs[:q] + (req,) + rank.reqs[q + 1 :], **changes)


