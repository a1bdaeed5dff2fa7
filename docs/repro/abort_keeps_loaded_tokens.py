"""An aborted request's loaded-token records outlive it, and a request that reuses its rid inherits them.

SGLang 0.5.20 (0.5.21 pops the records by the request's handle), any prefetch policy, one rank, no
GPU needed:

    pip install sglang==0.5.20      # torch on the CPU is enough
    python docs/repro/abort_keeps_loaded_tokens.py

Exit status 1 and "REPRODUCED" when the fault shows, 0 when it does not. The cache is built the
way SGLang's own unit tests build it (`__new__` and the attributes the path reads). Since 0.5.20
the cache keys its per-request records by the request's CacheRequestHandle; when a prefetch's
pages land, the ACK drain records how many tokens storage gave and where they start:

  scheduler  ACK drain: prefetch_loaded_tokens_by_reqid[handle] = 1    (and the storage start)
  client     abort: scheduler -> tree_cache.release_aborted_request(handle)
             release pops prefetch_loaded_tokens_by_reqid.pop(rid): a str key, never there
  client     a new request under the same rid: CacheRequestHandle(rid, attempt_id=0), equal
  scheduler  admission: pop_prefetch_loaded_span(handle) -> the aborted request's (1, 0)
"""

import sys

from sglang.srt.mem_cache.base_prefix_cache import CacheRequestHandle
from sglang.srt.mem_cache.storage_prefetch import StoragePrefetchRetries
from sglang.srt.mem_cache.unified_radix_cache import UnifiedRadixCache


def cache():
    c = UnifiedRadixCache.__new__(UnifiedRadixCache)
    c.linker = None
    c.buffer_pipeline = None
    c.ongoing_prefetch = {}  # the aborted request's operation is done: nothing in flight
    c.prefetch_loaded_tokens_by_reqid = {}
    c.prefetch_loaded_storage_start_by_reqid = {}
    c._storage_prefetch_hit_remaining_by_reqid = {}
    c._storage_prefetch_wait = {}
    c.storage_prefetch_retries = StoragePrefetchRetries()
    return c


def main() -> int:
    c = cache()
    handle = CacheRequestHandle(rid="req0", attempt_id=0)
    # what the ACK drain records when req0's fetched page lands (unified_radix_cache.py, the ACK's loaded tokens)
    c.prefetch_loaded_tokens_by_reqid[handle] = 1
    c.prefetch_loaded_storage_start_by_reqid[handle] = 0
    c.release_aborted_request(handle)  # the client aborted req0 while it waited
    left = [name for name in ("prefetch_loaded_tokens_by_reqid", "prefetch_loaded_storage_start_by_reqid")
            if handle in getattr(c, name)]
    if not left:
        print("not reproduced: release_aborted_request dropped the aborted request's loaded-token records")
        return 0
    reused = CacheRequestHandle(rid="req0", attempt_id=0)  # the client sends a new request under the same rid
    inherited = c.pop_prefetch_loaded_span(reused)
    print(f"REPRODUCED: after the abort the cache still holds req0 in {', '.join(left)}; a new request "
          f"under the same rid is admitted with the aborted one's loaded span {inherited} (tokens, start)")
    return 1


if __name__ == "__main__":
    sys.exit(main())
