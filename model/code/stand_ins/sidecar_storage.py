"""The storage backend's per-pool interface (`batch_exists_v2` / `batch_get_v2`), what the release
calls once an operation has pool transfers (sidecar pools: CodeConfig.sidecars). Per rank each
sidecar pool stores its first `sidecar_hits` pages of every request, and the pages in
`sidecar_failing` cannot be read from any sidecar pool (the existence query still finds them).
The fold is the one upstream's backends document (hicache_storage.py batch_exists_v2): the KV
prefix, cut by an all-pages pool where a page is missing, and by a trailing-pages pool to the
longest prefix whose window is stored. A read writes each page it returns into the transfer's
host slots of its pool (a scheduling point, as IO's KV page writes are)."""

from __future__ import annotations

from prefetch_check.model.code.stand_ins.radix import page_of
from prefetch_check.model.code.stand_ins.storage import StorageBackend


class SidecarStorageBackend(StorageBackend):
    """StorageBackend plus the pools' stored pages; `classes` is the tree's hicache_storage module
    (its PoolTransferResult and PoolHitPolicy, so the release reads its own types)."""

    def __init__(self, *args, sidecar_hits: dict, sidecar_failing: frozenset, group, classes, **kwargs):
        super().__init__(*args, **kwargs)
        self.sidecar_hits, self.sidecar_failing = sidecar_hits, sidecar_failing  # pool name -> stored pages
        self.group, self.classes = group, classes

    def _stored(self, pool, key: str) -> bool:
        return page_of(key) < self.sidecar_hits[pool]

    def batch_exists_v2(self, keys, pool_transfers=None, extra_info=None):
        kv_pages = self.batch_exists(keys, extra_info)
        trailing = self.classes.PoolHitPolicy.TRAILING_PAGES
        hit_count = {self.classes.PoolName.KV: kv_pages} if kv_pages else {}
        final = kv_pages
        for transfer in pool_transfers or []:
            if final == 0:
                break
            if transfer.hit_policy == trailing:
                window = max(1, len(transfer.keys) if transfer.keys else 1)
                boundary = next((n for n in range(kv_pages, 0, -1)
                                 if all(self._stored(transfer.name, keys[i]) for i in range(max(0, n - window), n))), 0)
            else:
                boundary = next((i for i in range(kv_pages) if not self._stored(transfer.name, keys[i])), kv_pages)
            if boundary:
                hit_count[transfer.name] = boundary
            final = min(final, boundary)
        self.world.baton.observe(f"exists_v2 {final} {sorted((str(k), v) for k, v in hit_count.items())}")
        return self.classes.PoolTransferResult(final, hit_count)

    def batch_get_v2(self, transfers, extra_info=None) -> dict:
        """Each transfer's keys read into its host slots (zipped against the slots' head, one pool
        page per key); a key past the stored pages or unreadable fails, and so does every later one."""
        if not transfers:
            return {}
        baton = self.world.baton
        baton.point("read " + ", ".join(f"{t.name}{list(t.keys or [])}" for t in transfers) + f" (rank {self.rank})")
        results = {}
        for t in transfers:
            pool = self.group.entry_map[t.name].host_pool
            keys, slots = list(t.keys or []), t.host_indices.data if t.host_indices is not None else []
            ok = []
            for n, key in enumerate(keys):
                first = n * pool.page_size
                good = (ok == [] or ok[-1]) and self._stored(t.name, key) and page_of(key) not in self.sidecar_failing \
                    and first + pool.page_size <= len(slots)
                if good:
                    pool.write_page(slots[first], key)
                ok.append(bool(good))
            results[t.name] = ok
        baton.observe(f"read_v2 {sorted((str(k), v) for k, v in results.items())}")
        return results
