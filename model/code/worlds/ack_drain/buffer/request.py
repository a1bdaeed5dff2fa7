"""The scheduler's request (managers/schedule_batch.py Req) as far as the buffer pipeline's
admission reads and writes it."""

from __future__ import annotations

from prefetch_check.model.code.stand_ins.context import Strict


class _KV:
    cache_protected_len = 0


class Req(Strict):
    """Any field not set here is not modelled."""

    _pc_what = "Req"

    def __init__(self, world, handle, prefix_len: int, last_node):
        self.world = world
        self.cache_request_handle, self.rid = handle, handle.rid
        self.prefix_len, self.last_node, self.best_match_node = prefix_len, last_node, last_node
        self.extra_key = self.cache_salt = None
        self.kv = _KV()
        self.host_hit_length = self.swa_host_hit_length = self.mamba_host_hit_length = 0
        self.host_loaded_length = 0
        self.storage_hit_length, self.storage_hit_start, self.host_hit_is_storage = 0, None, False
        self.staged_prefetch_plan = None
