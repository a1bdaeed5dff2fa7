"""The FULL tree component as the buffer path calls it (unified_cache/components: base.py's and
full.py's defaults for a FULL-only model): no prefetch transfers of its own, no part in a
load-back beyond the staged KV, the match result as the walk made it, the built-in belief policy."""

from __future__ import annotations

from prefetch_check.model.code.stand_ins.context import Strict


class LoadBackContext:
    """base.py BufferLoadBackContext's default: nothing to load, insert or free beyond the KV."""

    load_xfers: tuple = ()

    def finalize_allocation(self, success: bool) -> None:
        return None

    def get_insert_fields(self) -> dict:
        return {}

    def get_redundant_device_slots(self, insert_result) -> list:
        return []


class FullComponent(Strict):
    """Any other method of the component is not modelled."""

    _pc_what = "FullComponent"

    def __init__(self, world, component_type):
        self.world, self.component_type = world, component_type

    def build_hicache_transfers(self, node, phase, **kwargs):
        return None

    def prepare_buffer_load_back(self, req, staged):
        return LoadBackContext()

    def finalize_match_result_in_cache(self, params, result):
        return result

    def buffer_belief_policy(self, pool):
        return None

    def buffer_backup_parent_covered(self, parent_node_id, node_id) -> bool:
        """base.py's default: no component vouches for a parent the KV beliefs do not hold."""
        return False
