"""The storage backend of a run that writes (buffer_only's write path, CodeConfig.backup): the
read side as stand_ins/storage.py has it, plus what the backup thread stores (`batch_set`, the
generic page set's call). A stored page is what the backup thread read out of the host staging
slots; a page stored under a key that names another page is wrong KV data in storage, which every
server sharing it may load (data_integrity, judged at the write). Its contents are part of the
state key and, unlike the read-only backend's, of the steps' footprints (`r<rank>.storage`: a
write writes it, an existence query or a read reads it)."""

from __future__ import annotations

from prefetch_check.model.code.stand_ins.radix import page_of
from prefetch_check.model.code.stand_ins.storage import StorageBackend

STORED_WRONG = ("wrong KV data in storage: a later prefetch of that page, on this server or any other sharing "
                "the storage, serves another page's KV")


class WrittenStorage(StorageBackend):
    _pc_what = "storage_backend (written)"

    def __init__(self, world, rank: int, *args, **kwargs):
        super().__init__(world, rank, *args, **kwargs)
        self.stored: dict[str, object] = {}  # key -> the data the backup thread wrote
        self._pc_name = f"r{rank}.storage"  # its name in a step's footprint (rt/baton.py)
        world.register(self)

    def holds(self, key) -> bool:
        """Whether the storage has the page: written by a backup, or stored before the run."""
        return key in self.stored or page_of(key) < self.hits

    def batch_exists(self, keys, extra_info=None) -> int:
        self.world.baton.touch(self._pc_name, write=False)
        if self.query_raises:
            return super().batch_exists(keys, extra_info)
        n = 0
        for key in keys:
            if not self.holds(key):
                break
            n += 1
        return n

    def batch_get(self, keys, target_locations=None):
        self.world.baton.touch(self._pc_name, write=False)
        got = super().batch_get(keys, target_locations)
        return [self.stored.get(k, g) if page_of(k) not in self.failing else g for k, g in zip(keys, got)]

    def batch_set(self, keys, values, target_locations=None, target_sizes=None) -> bool:
        baton = self.world.baton
        baton.point(f"store {len(keys)} pages {list(keys)} (rank {self.rank})")
        baton.touch(self._pc_name)
        site = baton.current().point.site if baton.current() else "?"
        for key, value in zip(keys, values):
            if value != key:
                self.world.fault("data_integrity", f"rank {self.rank}: the backup stores {value or 'nothing'} under "
                                 f"key {key}", STORED_WRONG, site)
            self.stored[key] = value
        return True

    def snapshot(self) -> tuple:
        return ("storage", self.rank, tuple(sorted(self.stored.items(), key=lambda kv: kv[0])))
