"""Search limits. Reaching one turns every undecided verdict into BOUNDED, never VERIFIED."""

from __future__ import annotations

import resource
import sys
from dataclasses import dataclass
from typing import Optional


@dataclass(frozen=True)
class Limits:
    max_states: Optional[int] = None
    max_depth: Optional[int] = None
    time_limit: Optional[float] = None  # seconds
    max_memory_mb: Optional[int] = None  # peak resident memory of this process

    def describe(self) -> str:
        parts = []
        if self.max_states is not None:
            parts.append(f"max_states={self.max_states}")
        if self.max_depth is not None:
            parts.append(f"max_depth={self.max_depth}")
        if self.time_limit is not None:
            parts.append(f"time_limit={self.time_limit}s")
        if self.max_memory_mb is not None:
            parts.append(f"max_memory={self.max_memory_mb}MB")
        return ", ".join(parts) or "none"


def peak_memory_mb() -> float:
    """Peak resident set size of this process in MiB (ru_maxrss is KiB on Linux, bytes on macOS)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024 * 1024) if sys.platform == "darwin" else peak / 1024
