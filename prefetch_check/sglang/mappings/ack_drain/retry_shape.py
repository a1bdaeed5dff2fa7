"""Which trees get the retry world's cases (the cache-mode ones in mapping.py, the buffer_only ones
under the retry path in buffer_cases.py): the shape of the scheduler's retry path it models."""

from __future__ import annotations

from prefetch_check.sglang.code_checks import needs

SCHEDULER = "managers/scheduler.py"
RETRY_ENTRY = "req.storage_prefetch_last_match_len = matched_len"  # _prefetch_kvcache as of 0.5.20

# the retry world's request stand-in has the device match as prefix_len, as _prefetch_kvcache reads
# it from 0.5.22 on, and as prefix_indices (only its length: 0.5.20-0.5.21 read it so); 0.5.19 keeps
# a missed-rids set and gets no retry case: its edits there are refused by the coverage check
retry_skip = needs(SCHEDULER, RETRY_ENTRY, "its scheduler's retry path predates the one the retry world models (0.5.20 on)")
