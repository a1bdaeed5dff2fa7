"""The storage backend of one rank: the first `hits` pages of every request are stored, the pages
in `failing` cannot be read, `query_raises` makes the existence query raise (a backend error), and
a batch read that starts at a page in `raising_reads` raises (the model's batch_raises).
Only that rank's prefetch and IO threads call it, so its calls are not scheduling points."""

from __future__ import annotations

from prefetch_check.model.code.stand_ins.context import Strict

from prefetch_check.model.code.stand_ins.errors import WorldFault
from prefetch_check.model.code.stand_ins.radix import page_of


class StorageUnavailable(ConnectionError, WorldFault):
    """The configured backend error of a rank's existence query."""


class StorageBackend(Strict):
    _pc_what = "storage_backend"
    _pc_footprint = True  # nothing in it changes during a run (rt/hooks.py as_value)

    def __init__(self, world, rank: int, hits: int, failing: frozenset[int], query_raises: bool, page_size: int,
                 raising_reads: frozenset[int] = frozenset()):
        self.world, self.rank, self.hits, self.failing = world, rank, hits, failing
        self.query_raises, self.page_size, self.raising_reads = query_raises, page_size, raising_reads

    def batch_exists(self, keys, extra_info=None) -> int:
        if self.query_raises:
            raise StorageUnavailable(f"storage backend of rank {self.rank} unreachable (configured)")
        n = 0
        for key in keys:
            if page_of(key) >= self.hits:
                break
            n += 1
        return n

    def exists(self, key) -> bool:
        return self.batch_exists([key]) == 1

    def batch_get(self, keys, target_locations=None):
        if keys and page_of(keys[0]) in self.raising_reads:
            raise StorageUnavailable(f"storage read of rank {self.rank} from page {page_of(keys[0])} failed (configured)")
        return [None if page_of(k) in self.failing or page_of(k) >= self.hits else k for k in keys]

    def get_stats(self):
        return None
