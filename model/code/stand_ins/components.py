"""The cache's FULL component (`components[ComponentType.FULL]`), as far as host eviction uses it:
the release's `_drain_host_frees` hands it the host values the tree evicted, and it frees each
into the host pool (upstream's FullComponent.free_host_values frees them into the KV pool of the
host pool group, which is the one pool here). A split of a node with a write-through pending is
routed to it too (0.5.23), which upstream's FULL takes as nothing to do (its buffer-write
dependencies are a custom component's), and where the world has a device side the device eviction's
slot frees and a load-back's hooks (nothing to prepare for FULL)."""

from __future__ import annotations

from prefetch_check.model.code.stand_ins.context import Strict


class FullComponent(Strict):
    _pc_what = "components[FULL]"

    def __init__(self, world, pool, device=None, component_type="FULL"):
        self.world, self.pool = world, pool
        self.component_type = component_type  # the release's ComponentType.FULL (load_back keys its hooks by it)
        self.device = device  # the cache's token_to_kv_pool_allocator, where the world has a device side

    def free_host_values(self, host_values: list) -> None:
        for value in host_values:
            self.pool.free(value)

    def prepare_load_back(self, node_id, *, req=None):
        """A load-back's pre-allocation: nothing for FULL (upstream's base component's default)."""
        return None

    def finalize_load_back(self, req, prep, success: bool) -> None:
        """Nothing to give back (upstream's base component's default)."""

    def apply_component_action(self, action) -> None:
        """A split's action is nothing to FULL; a device slot free (the eviction walk's, through
        `_drain_device_frees`) frees each segment into the allocator, as upstream's FULL does."""
        name = type(action).__name__
        if name == "FreeComponentDeviceSlot" and self.device is not None:
            for indices in action.indices:
                self.device.free_segment(indices, start_pos=0)
        elif name != "UpdatePendingBackupOnNodeSplit":
            raise self.world.not_modelled(f"components[FULL].apply_component_action({name})")
