"""The ack-drain cases on the tree's own file backend (0.5.19 on; CodeConfig(storage="file")):
HiCacheFile and its LRU file evictor run as written on a fresh directory of each run
(model/code/stand_ins/file_storage.py), under the prefetch's existence queries and reads and the
write path's stores; capped, its evictor takes the least recently used pages for a write's room,
a page a prefetch found among them; with its metadata cache, queries answered from what it saw. Each names what it sets."""

from __future__ import annotations

from prefetch_check.model.code import CodeConfig
from prefetch_check.sglang.code_checks import Case, needs
from prefetch_check.sglang.mappings.ack_drain import sidecar_cases, write_through_cases
from prefetch_check.sglang.mappings.ack_drain.options import PROTOCOL

STORAGE = "mem_cache/hicache_storage.py"
# the backend the world builds (0.5.19-0.5.23): HiCacheFile's evictor, from the storage config
_file = needs(STORAGE, "self._evictor = LRUFileEvictor(", "its HiCacheFile keeps no LRUFileEvictor, as the "
              "file-storage world builds it")


def _files(**kwargs) -> CodeConfig:
    return CodeConfig(world=PROTOCOL, storage="file", **{"ranks": 1, **kwargs})


def _writes(srt) -> str:
    return _file(srt) or write_through_cases.skip(srt)


def _sidecars(srt) -> str:
    return _file(srt) or sidecar_cases.needs_sidecar_read(srt)


# 0.5.23 (untraced, one core): 21, 408, 152, 387, 378, 25, 1,023, 57, 76, 48 and 43 runs, exhaustive, clean
FILE_STORAGE_CASES: tuple[Case, ...] = (
    Case("1 rank, storage=file (HiCacheFile as written)", _files(), skip=_file),
    Case("2 ranks, storage=file", _files(ranks=2), skip=_file),
    # the computed request's pages stored through HiCacheFile.set (its temporary file and rename)
    Case("1 rank, write_through, storage=file", _files(backup=True), skip=_writes),
    # the evictor capped: the write's pages evict the least recently used ones, the prefetch's read
    # pages (a read moves them to the front) or the write's own; a query's page may be gone by its read
    Case("1 rank, write_through, storage=file of 3 pages (the evictor takes pages for the write)",
         _files(backup=True, file_pages=3), skip=_writes),
    Case("1 rank x 2 requests x 1 page, write_through, storage=file of 1 page",
         _files(backup=True, requests=2, pages=1, file_pages=1), skip=_writes),
    # the positive-lookup metadata cache on: a query answered from it, an evicted page dropped from it
    Case("1 rank, storage=file, its metadata cache on", _files(file_metadata_cache=True), skip=_file),
    Case("1 rank, write_through, storage=file of 3 pages, its metadata cache on",
         _files(backup=True, file_pages=3, file_metadata_cache=True), skip=_writes),
    # another server sharing the storage deletes a page at a moment the search chooses: a query may
    # find it and the read miss it (HiCacheFile.get's FileNotFoundError: None, a short read), and
    # with the metadata cache on the cache still believes it stored
    Case("1 rank, storage=file, page 1 deleted by another server", _files(file_lost=(1,)), skip=_file),
    Case("1 rank, storage=file, its metadata cache on, page 0 deleted by another server",
         _files(file_metadata_cache=True, file_lost=(0,)), skip=_file),
    # sidecar pools on it: each pool registered and read through its v2 API (batch_exists_v2's fold,
    # _batch_io_v2 into the pool's host slots), with and without a page the SWA pool never stored
    Case("1 rank, storage=file, sidecars=swa,mamba,indexer", _files(sidecars=("swa", "mamba", "indexer")),
         skip=_sidecars),
    Case("1 rank, storage=file, sidecars=swa, its page 1 not in the SWA pool",
         _files(sidecars=("swa",), sidecar_hits=((1,),)), skip=_sidecars),
)
