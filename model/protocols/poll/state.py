"""The protocol state: nested tuples of small ints, immutable and hashable.

A global state is a tuple with one `Rank` per tensor-parallel rank. Everything a
thread can observe lives in its own rank's tuple; ranks meet only through the
collective registers (`s_coll`, `p_coll`), which hold what each rank brought to the
current all_reduce (see `model/engine/collectives.py`).

Field names follow SGLang's (`hash_value`, `completed_tokens`, `ongoing_prefetch`...)
so a reader can hold the model against the upstream source.
"""

from __future__ import annotations

from typing import NamedTuple

from prefetch_check.model.interface import DONE, WAITING  # noqa: F401  (the registers' phases)
from prefetch_check.model.protocols.host_slot_status import DOUBLE, HELD, IN_TREE, RELEASED, give_back  # noqa: F401

# host slot status, one entry per page of an issued operation: HELD, RELEASED, IN_TREE, DOUBLE

# ---- prefetch-thread stage of an operation ----
QUEUED = 0  # on prefetch_queue (or never issued)
QUERIED = 1  # taken, hits queried, waiting in all_reduce(MIN) of hits
REVOKED = 2
PUBLISHED = 3  # on prefetch_buffer (host slots reserved), for the IO thread
HIT_QUEUED = 4  # alloc_at = "hit": hash_value set, on prefetch_hit_queue, no host slots yet
DROPPED = 5  # alloc_at = "hit": popped off prefetch_hit_queue after leaving ongoing_prefetch (skipped)

# ---- scheduler program counter: (kind, request) ----
S_ISSUE = 0  # about to issue request q
S_DRAIN = 1  # top of a scheduler round: drain the control queues
S_DRAIN_WAIT = 2  # arrived in the drain all_reduce(MIN)
S_CHECK = 3  # about to run check_prefetch_progress(q)
S_MAX_WAIT = 4  # arrived in the all_reduce(MAX) of [not can_terminate, terminated]
S_MIN_WAIT = 5  # terminated q, arrived in the all_reduce(MIN) of completed_tokens
S_INSERT = 6  # terminated q, about to insert its own completed_tokens (completed_min = "except_wait_complete")
S_ROUND_WAIT = 7  # (S_ROUND_WAIT, k): arrived in the round's k-th collective before the drain (`Config.round_collectives`)
# (S_DRAIN, k): at the top of a round, k of the round's collectives before the drain made (k = 0 without them)

# ---- IO thread phase within a page ----
IO_READ = 0  # read page from storage, then write it into its host slots
IO_COUNT = 1  # page written: increment(page_size) under the op lock
IO_RELEASE = 2  # loop over: release host slots [completed_tokens, hits)

# ---- collective kinds; a tag is (kind, request), a register () or (tag, WAITING | DONE, value) ----
C_HITS = 0  # prefetch thread: MIN of hit pages
C_DRAIN = 1  # scheduler: MIN of the sizes of the queues it drains (`Config.drain_queues`)
C_TERMINATE = 2  # scheduler: MAX of (not can_terminate, terminated)
C_COMPLETED = 3  # scheduler: MIN of completed tokens
C_ROUND = 4  # scheduler: a per-round MIN before the drain (writing_check / loading_check; `Config.round_collectives`)

NOT_INSERTED = -1


class Op(NamedTuple):
    """One PrefetchOperation on one rank, plus the scheduler's view of its request."""

    issued: bool = False  # an operation exists on this rank
    ongoing: bool = False  # request id is in ongoing_prefetch
    ready: bool = False  # scheduler resolved the request on this rank
    stage: int = QUEUED  # prefetch-thread stage
    hash_value: int = 0  # len(hash_value), in pages; 0 until publish
    written: int = 0  # leading pages whose data is in host memory
    completed: int = 0  # completed_tokens // page_size
    terminated: bool = False
    timed_out: bool = False
    io_failed: bool = False  # the IO thread met a failing page
    slots: tuple[int, ...] = ()  # per page: HELD / RELEASED / IN_TREE / DOUBLE
    inserted: int = NOT_INSERTED  # tokens handed to the radix tree
    allocated: bool = False  # host_indices is set (at issue, or by the drain with alloc_at = "hit")


class Rank(NamedTuple):
    """Everything one tensor-parallel rank holds.

    The scheduler's program counter and collective register come last on purpose:
    symmetry reduction sorts ranks as tuples, so ranks are ordered first by what
    the prefetch and IO threads see, and a scheduler-only step (the only kind that
    can repeat forever) permutes only ranks whose other threads look alike.
    """

    p_pc: int  # request the prefetch thread works on, or -1 when idle
    i_pc: tuple[int, ...]  # () idle, else (request, page, IO_READ | IO_COUNT | IO_RELEASE)
    prefetch_queue: tuple[int, ...]
    prefetch_buffer: tuple[int, ...]
    revoke_queue: tuple[int, ...]
    hit_queue: tuple[int, ...]  # prefetch_hit_queue (alloc_at = "hit"), popped by the drain
    release_queue: int  # entries (pages) on host_mem_release_queue
    p_coll: tuple  # prefetch-thread collective register
    ops: tuple[Op, ...]
    s_coll: tuple  # scheduler collective register
    s_pc: tuple[int, int]


def initial_rank(requests: int) -> Rank:
    """A rank before its scheduler has issued anything."""
    return Rank(
        s_pc=(S_ISSUE, 0),
        p_pc=-1,
        i_pc=(),
        prefetch_queue=(),
        prefetch_buffer=(),
        revoke_queue=(),
        hit_queue=(),
        release_queue=0,
        s_coll=(),
        p_coll=(),
        ops=(Op(),) * requests,
    )


def set_op(rank: Rank, q: int, op: Op, **rank_changes) -> Rank:
    ops = rank.ops[:q] + (op,) + rank.ops[q + 1 :]
    return rank._replace(ops=ops, **rank_changes)


