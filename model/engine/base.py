"""What the readable and the compiled model of a protocol share: how actions and actors are
named, the protocol's words for viewers, and its properties."""

from __future__ import annotations


class ProtocolModel:
    """An explorer model of a `RankProtocol`; subclasses say what a state is."""

    group_name = "rank"  # for viewers: an actor is (rank, thread letter)

    def __init__(self, protocol, properties: list):
        self.protocol = protocol
        self.config = protocol.config
        self.thread_names = protocol.thread_names()  # for viewers: S -> scheduler, ...
        self._properties = properties

    def properties(self):
        return self._properties

    def actor(self, action):
        return action.actor

    def action_id(self, action) -> str:
        return action.id

    def action_kind(self, action) -> str:
        return action.kind

    def action_kinds(self):
        return self.protocol.possible_kinds()
