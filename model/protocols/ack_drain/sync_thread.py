"""Sync thread Y[r] (prefetch_sync_thread_func): agree on each progress ACK, in FIFO order.

A progress ACK is reduced with MIN over the ranks; the collective carries no request id,
so the k-th ACK of one rank meets the k-th of every other (upstream's stated assumption:
every rank sends as many, in the same order). The model adds what upstream does not send:
the operation's number, as MIN and as MAX (`-op` under MIN), only to see afterwards
whether the ACKs reduced together belonged to one operation (`acks_mixed`); the agreed
value is the MIN of the completed pages alone. completed_req ACKs pass without a collective.
"""

from __future__ import annotations

from prefetch_check.model.interface import Step, formats, result
from prefetch_check.model.protocols.ack_drain.state import C_ACK, PROGRESS
from prefetch_check.model.protocols.poll.wording import arrival

Y = "Y"
ACK_TAG = (C_ACK, -1)


class SyncThreadSteps:
    def sync_steps(self, r: int, rank) -> list[Step]:
        if rank.y_pc:
            return self.y_forward(rank)
        if not rank.sync_queue:
            return []
        ack = rank.sync_queue[0]
        i, kind, pages = ack
        rank = rank._replace(sync_queue=rank.sync_queue[1:])
        if kind != PROGRESS:
            return [Step(Y, "pass", self.request_of[i], rank._replace(ack_queue=rank.ack_queue + (ack,)))]
        return [Step(Y, "take", self.request_of[i], rank._replace(y_pc=ack), (ACK_TAG, (pages, i, -i)))]

    @formats("Y.pass")
    def format_y_pass(self, before, after, a):
        return f"completed_req ACK of #{before.sync_queue[0][0]}: no collective, on ack_prefetch_queue"

    @formats("Y.take")
    def format_y_take(self, before, after, a):
        i, _, pages = before.sync_queue[0]
        return f"progress ACK of #{i} ({pages} page(s)): all_reduce(MIN) arrive{arrival(after.y_coll)}"

    def y_forward(self, rank):
        agreed = result(rank, "y_coll", ACK_TAG)
        if agreed is None:
            return []
        pages, low, minus_high = agreed
        i = rank.y_pc[0]
        mixed = rank.acks_mixed or low != -minus_high
        moved = rank._replace(y_pc=(), y_coll=(), ack_queue=rank.ack_queue + ((i, PROGRESS, pages),), acks_mixed=mixed)
        return [Step(Y, "forward", self.request_of[i], moved)]

    @formats("Y.forward")
    def format_y_forward(self, before, after, a):
        pages, low, minus_high = before.y_coll[2]
        i = before.y_pc[0]
        mixed = "" if low == -minus_high else f" (reduced together with operation(s) #{low}..#{-minus_high}: ACKs of different operations)"
        return f"all_reduce(MIN) -> {pages} page(s): progress ACK of #{i} on ack_prefetch_queue{mixed}"
