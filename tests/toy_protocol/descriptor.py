"""The toy protocol as every command sees it: what `register(DESCRIPTOR)` makes known."""

from prefetch_check.model.protocols.registry import Descriptor

DESCRIPTOR = Descriptor(
    name="toy",
    protocol="toy_protocol.protocol:ToyProtocol",
    covers="no release (a test's toy)",
    scenario="toy_protocol.params",
    predicates="toy_protocol.predicates",
    mutants="toy_protocol.mutants",
    uniform="toy_protocol.config:uniform_toy_config",
    world="toy_protocol.world.pack:PACK",  # the executor's world: the one line that registers it
)
