"""The cache's FULL component (`components[ComponentType.FULL]`), as far as host eviction uses it:
the release's `_drain_host_frees` hands it the host values the tree evicted, and it frees each
into the host pool (upstream's FullComponent.free_host_values frees them into the KV pool of the
host pool group, which is the one pool here). A split of a node with a write-through pending is
routed to it too (0.5.23), which upstream's FULL takes as nothing to do (its buffer-write
dependencies are a custom component's)."""

from __future__ import annotations

from prefetch_check.model.code.stand_ins.context import Strict


class FullComponent(Strict):
    _pc_what = "components[FULL]"

    def __init__(self, world, pool):
        self.world, self.pool = world, pool

    def free_host_values(self, host_values: list) -> None:
        for value in host_values:
            self.pool.free(value)

    def apply_component_action(self, action) -> None:
        if type(action).__name__ != "UpdatePendingBackupOnNodeSplit":
            raise self.world.not_modelled(f"components[FULL].apply_component_action({type(action).__name__})")
