"""The poll protocol's two explorer models, for tests that search or replay directly."""

from __future__ import annotations

from prefetch_check.model.engine.compiled import CompiledModel
from prefetch_check.model.engine.readable import ReadableModel
from prefetch_check.model.protocols.poll.protocol import PollProtocol

ACTION_KINDS = PollProtocol.action_kinds()


def readable(config, predicate="fixed", protocol=PollProtocol, **kwargs) -> ReadableModel:
    """The reference model: states are tuples of `Rank`s."""
    return ReadableModel(protocol(config, predicate, **kwargs))


def compiled(config, predicate="fixed", protocol=PollProtocol, **kwargs) -> CompiledModel:
    """The model the searches run on: states are tuples of rank codes."""
    return CompiledModel(protocol(config, predicate, **kwargs))
