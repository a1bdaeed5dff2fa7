"""torch.distributed's point-to-point calls for the code under test (`_pp_sync`: a stage receives
from the one before it and isends to the one after it, on the PP group): one FIFO channel per
(group, sender, receiver), its messages tagged. An isend is a scheduling point that queues a copy of the tensor and
returns a Work; a recv is enabled once its channel holds a message and copies it into the
receiver's tensor in place (the first message of the recv's tag); Work.wait is enabled once the receiver has taken that message (gloo
completes a send when the peer's recv consumed it; `_drain_async_work` relies on it for
backpressure). A receive into a tensor of another length than the one sent breaks the stages'
agreement (tp_agreement). Every step records the channel in its footprint."""

from __future__ import annotations

from collections import deque

from prefetch_check.model.code.stand_ins.errors import WorldFault

LABEL = "p2p "  # every point-to-point scheduling point's label starts so (WorldRun.ample, verdicts)
MISMATCH = ("the stages disagree on what they exchange: gloo fails the receive (a size mismatch), or the "
            "stage reads values meant for another call: a crash, a hang or diverging batches")


class InvalidPeer(ValueError, WorldFault):
    """What torch.distributed raises for a peer outside the group: the code's own error."""


class Channel:
    """The messages one rank sends another on one group and tag, in order."""

    def __init__(self, world, name: str):
        self.world, self.name = world, name
        self.pending: deque = deque()  # (message number, tag, site, values) not yet received
        self.sent = 0
        self.received = 0
        world.register(self)

    def snapshot(self) -> tuple:
        return (self.name, self.sent, self.received, tuple((n, t, tuple(v)) for n, t, _, v in self.pending))

    def first(self, tag: str):
        return next((m for m in self.pending if m[1] == tag), None)


REAPED_AGAIN = ("the stage's list of sends is never cleared: it grows every scheduler round (the scheduler "
                "process's memory with it) and each round waits again on every send the stage ever made")


class Work:
    """What an isend returns: `wait()` blocks until the receiver took message `number`. A send is
    reaped once (`_drain_async_work` waits on the round's sends, then clears its list): a second
    wait on the same Work is the list kept across rounds, which nothing else shows."""

    def __init__(self, channel: Channel, number: int):
        self.channel, self.number = channel, number
        self.waited = False

    def _done(self) -> bool:
        return all(m[0] != self.number for m in self.channel.pending)

    def wait(self, timeout=None) -> bool:
        ch = self.channel
        baton = ch.world.baton
        baton.point(f"{LABEL}wait {ch.name}#{self.number}", self._done, (ch.name,))
        baton.touch(ch.name, write=False)
        if self.waited:
            here = baton.current().point.site if baton.current() else "?"
            ch.world.fault("host_memory", f"{ch.name} message {self.number}: waited on again at {here}, a round after "
                           "its send was reaped", REAPED_AGAIN, here)
        self.waited = True
        return True

    def is_completed(self) -> bool:
        self.channel.world.baton.touch(self.channel.name, write=False)
        return self._done()


class PointToPoint:
    """The functions `torch.distributed.isend/recv` forward to (rt/executor.py's holder)."""

    def __init__(self, world, rank_of):
        self.world, self.rank_of = world, rank_of  # rank_of(): the calling thread's (global) rank
        self.channels: dict[str, Channel] = {}

    def open(self, group, src: int, dst: int) -> Channel:
        """The channel from rank src to rank dst on `group` (a harness opens the ones its code uses
        when it builds the ranks, so the state key's parts do not depend on who sent first)."""
        name = f"p2p.{group.name}.{src}->{dst}"
        ch = self.channels.get(name)
        if ch is None:
            ch = self.channels[name] = Channel(self.world, name)
        return ch

    def _peer(self, group, local, glob) -> int:
        if group is None:
            raise self.world.not_modelled("torch.distributed point-to-point on the default group")
        if local is None:
            return glob
        if not 0 <= local < len(group.ranks):  # torch refuses a peer outside the group
            raise InvalidPeer(f"group rank {local} is not in {group.name} ({len(group.ranks)} ranks)")
        return group.ranks[local]

    def isend(self, tensor, dst=None, group=None, tag=0, group_dst=None):
        ch = self.open(group, self.rank_of(), self._peer(group, group_dst, dst))
        baton = self.world.baton
        baton.point(f"{LABEL}isend {ch.name}")
        baton.touch(ch.name)
        site = baton.current().point.site if baton.current() else "?"
        number = ch.sent
        ch.sent += 1
        ch.pending.append((number, _tag(tag), site, list(tensor.data)))
        baton.observe(f"isend #{number} {tensor.data}")
        return Work(ch, number)

    def recv(self, tensor, src=None, group=None, tag=0, group_src=None):
        peer = self._peer(group, group_src, src)
        ch, tag = self.open(group, peer, self.rank_of()), _tag(tag)
        baton = self.world.baton
        baton.point(f"{LABEL}recv {ch.name}", lambda: ch.first(tag) is not None, (ch.name,))
        baton.touch(ch.name)
        message = ch.first(tag)
        ch.pending.remove(message)
        number, _, sent_at, values = message
        ch.received += 1
        if len(values) != len(tensor.data):
            here = baton.current().point.site if baton.current() else "?"
            self.world.fault("tp_agreement", f"{ch.name} message {number}: rank {self.rank_of()} receives into "
                             f"{len(tensor.data)} values at {here}, rank {peer} sent {len(values)} from {sent_at}",
                             MISMATCH, here)
        tensor.data = list(values)
        baton.observe(f"recv #{number} {values}")
        return peer


def _tag(tag) -> str:
    """A tag's stable name (the release's P2PTag member is a stub placeholder outside the path)."""
    name = getattr(tag, "_pc_name", None) or getattr(tag, "name", None) or str(tag)
    return str(name).rsplit(".", 1)[-1]
