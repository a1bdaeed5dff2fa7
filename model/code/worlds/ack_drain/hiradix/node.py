"""The `last_host_node` a HiRadixCache prefetch is issued under: the root (nothing of the request
is cached). `protect_host`/`release_host` count its host lock on the rank's tree stand-in (the
tree's `locks`, in the state key and in each step's footprint), so a lock a prefetch never gives
back is seen at a run's end like the UnifiedRadixCache anchor's."""

from __future__ import annotations

from prefetch_check.model.code.stand_ins.context import Strict
from prefetch_check.model.code.stand_ins.radix import RadixKey


class HostNode(Strict):
    _pc_what = "last_host_node"

    def __init__(self, world, tree):
        self.world, self.tree = world, tree
        self.key = RadixKey([])
        self.priority = 0

    def protect_host(self) -> None:
        self.tree.inc_host_lock_ref(0)

    def release_host(self) -> None:
        self.tree.dec_host_lock_ref(0)
