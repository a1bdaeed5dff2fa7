"""The storage backend as written (`CodeConfig(storage="file")`): the tree's own HiCacheFile
(mem_cache/hicache_storage.py) with its LRU file evictor, one per rank, on a fresh directory of
this run (the ranks share it, as upstream's do: each writes and reads its own suffixed files).
The pages stored before the run (`hits`) are written through the backend's own `set`; every page
is a FlatPage (stand_ins/flat_page.py) holding its name, so what the backend wrote can be read
back and judged.

What the stand-in adds is recording only, in a subclass made of the release's class: each
existence query and read enters the step's footprint as a read of `r<rank>.storage`, a batch
write is a scheduling point and a write of it, each page's query, read and write is observed (the
backend's locks are points inside its loops: the thread's digest tells one page's from the next),
and after the write the files it wrote are read back: a page stored under a key that names another
page is data_integrity, as the written storage stand-in judges (stand_ins/written_storage.py). What
the rank's files hold is kept beside them (the state key reads it, never the disk)."""

from __future__ import annotations

import dataclasses
import functools
import os

from prefetch_check.model.code.stand_ins.flat_page import PAGE_BYTES, FlatPage
from prefetch_check.model.code.stand_ins.written_storage import STORED_WRONG

# HiCacheStorageConfig's fields for one rank of a TP group without PP, CP, MLA or DCP
_CONFIG = dict(pp_rank=0, pp_size=1, attn_cp_rank=0, attn_cp_size=1, is_mla_model=False,
               enable_storage_metrics=False, is_page_first_layout=False, model_name=None)


def file_storage(world, module, rank: int, ranks: int, directory: str, stored: list[str], cap_pages=None,
                 metadata_cache: bool = False):
    """Rank `rank`'s HiCacheFile on `directory`, built as the release builds it, holding `stored`;
    with `cap_pages` its evictor keeps at most that many pages (extra_config max_size), with
    `metadata_cache` its positive-lookup cache is on (extra_config enable_metadata_cache)."""
    fields = dataclasses.fields(module.HiCacheStorageConfig)
    wanted = dict(_CONFIG, tp_rank=rank, tp_size=ranks)
    extra = {}
    if cap_pages is not None:
        extra["max_size"] = cap_pages * PAGE_BYTES
    if metadata_cache:
        extra["enable_metadata_cache"] = True
    if extra:
        wanted["extra_config"] = extra
    missing = [f.name for f in fields if f.name not in wanted and f.default is dataclasses.MISSING
               and f.default_factory is dataclasses.MISSING]
    if missing:
        raise world.not_modelled(f"HiCacheStorageConfig({', '.join(missing)})")
    config = module.HiCacheStorageConfig(**{f.name: wanted[f.name] for f in fields if f.name in wanted})
    backend = _recording(module.HiCacheFile)(config, file_path=directory)
    backend._pc_attach(world, rank)
    for key in stored:  # no thread runs yet: no point, nothing observed
        backend.set(key, FlatPage(key))
    backend._pc_read_back(stored)
    world.register(backend)
    return backend


@functools.lru_cache(maxsize=None)
def _recording(base: type) -> type:
    """The release's HiCacheFile with its calls recorded (a pure function of the class: memoised)."""

    class RecordingHiCacheFile(base):
        def _pc_attach(self, world, rank: int) -> None:
            self._pc_world, self._pc_rank, self._pc_name = world, rank, f"r{rank}.storage"
            self._pc_files: dict[str, str] = {}  # key -> the page its file holds

        @property
        def stored(self) -> dict:
            """What the rank's files hold (the write path's judgement reads it)."""
            return self._pc_files

        def _pc_read(self, what: str = "") -> None:
            """A read of the rank's storage; `what`, folded into the thread's digest, tells one call
            of a loop from the next (the backend's own locks are points inside them)."""
            baton = self._pc_world.baton
            baton.touch(self._pc_name, write=False)
            if what:
                baton.observe(what)

        def exists(self, key):
            self._pc_read(f"exists {key}")
            return super().exists(key)

        def get(self, key, target_location=None, target_sizes=None):
            self._pc_read(f"read {key}")
            return super().get(key, target_location, target_sizes)

        def set(self, key, value=None, target_location=None, target_sizes=None):
            self._pc_world.baton.observe(f"store {key}")
            return super().set(key, value, target_location, target_sizes)

        def batch_exists(self, keys, extra_info=None):
            self._pc_read()
            return super().batch_exists(keys, extra_info)

        def batch_exists_v2(self, keys, pool_transfers=None, extra_info=None):
            self._pc_read()
            return super().batch_exists_v2(keys, pool_transfers, extra_info)

        def batch_get(self, keys, target_locations=None, target_sizes=None):
            self._pc_read()
            return super().batch_get(keys, target_locations, target_sizes)

        def batch_set(self, keys, values=None, target_locations=None, target_sizes=None):
            baton = self._pc_world.baton
            baton.point(f"store {len(keys)} pages {list(keys)} (rank {self._pc_rank})")
            baton.touch(self._pc_name)
            site = baton.current().point.site if baton.current() else "?"
            done = super().batch_set(keys, values, target_locations, target_sizes)
            for key in [k for k in self._pc_files if not os.path.exists(self._pc_path(k))]:
                del self._pc_files[key]  # the evictor took it for the room
            for key, page in self._pc_read_back(keys):
                if page != key:
                    self._pc_world.fault("data_integrity", f"rank {self._pc_rank}: the backup stores {page or 'nothing'} "
                                         f"under key {key}", STORED_WRONG, site)
            return done

        def _pc_read_back(self, keys) -> list:
            """What the files of `keys` hold now (those on disk), kept for the state key."""
            out = []
            for key in keys:
                path = self._pc_path(key)
                if os.path.exists(path):
                    page = FlatPage()
                    with open(path, "rb") as f:
                        f.readinto(page.buf)
                    self._pc_files[key] = page = page.name()
                    out.append((key, page))
            return out

        def _pc_lose(self, pages, requests) -> None:
            """Another server sharing the storage deletes these pages' files (its LRU evicting them),
            at the moment the search chooses; this rank's evictor and metadata cache are not told."""
            baton = self._pc_world.baton
            keys = [f"q{q}p{p}" for q in requests for p in pages]
            baton.point(f"another server deletes {keys} (rank {self._pc_rank}'s files)")
            baton.touch(self._pc_name)
            for key in keys:
                if os.path.exists(self._pc_path(key)):
                    os.remove(self._pc_path(key))
                self._pc_files.pop(key, None)
            baton.observe(f"deleted {keys}")

        def _pc_path(self, key) -> str:
            return os.path.join(self.file_path, f"{self._get_suffixed_key(key)}.bin")

        def snapshot(self) -> tuple:
            """The rank's files, its evictor's recency order and reservations (what it takes next),
            and the keys its metadata cache believes stored (the clock stands still: no entry ages)."""
            evictor = getattr(self, "_evictor", None)
            order = tuple(getattr(evictor, "_lru", {}).items())
            pending = tuple(sorted(getattr(evictor, "_pending_writes", ())))
            believed = tuple(sorted(getattr(getattr(self, "metadata_cache", None), "cache", None) or ()))
            return ("file storage", self._pc_rank, tuple(sorted(self._pc_files.items())), order, pending, believed)

    return RecordingHiCacheFile
