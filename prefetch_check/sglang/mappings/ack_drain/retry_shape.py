"""Which trees get the retry world's cases (the cache-mode ones in mapping.py, the buffer_only ones
under the retry path in buffer_cases.py): the shape of the scheduler's retry path it models."""

from __future__ import annotations

from prefetch_check.sglang.code_checks import needs

SCHEDULER = "managers/scheduler.py"
RETRY_ENTRY = "matched_len = req.prefix_len + req.host_hit_length"  # _prefetch_kvcache as of 0.5.22

# the retry world's request stand-in has the device match as prefix_len, as _prefetch_kvcache reads
# it from 0.5.22 on (0.5.20-0.5.21 read prefix_indices; 0.5.19 keeps a missed-rids set): other
# trees get no retry case, and their edits there are refused by the coverage check
retry_skip = needs(SCHEDULER, RETRY_ENTRY, "its scheduler's retry path predates the one the retry world models (0.5.22 on)")
