"""Search limits. Reaching one turns every undecided verdict into BOUNDED, never VERIFIED."""

from __future__ import annotations

import os
import resource
import sys
from dataclasses import dataclass, replace
from typing import Optional

# The default memory limit: this share of the machine's memory, split among the searches
# that run at once. Half leaves room for the rest of the machine and for the progress
# analysis and counterexample replay that follow a search (they allocate on top of it).
DEFAULT_MEMORY_SHARE = 0.5


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


def total_memory_mb() -> Optional[float]:
    """The machine's memory in MiB: MemTotal of /proc/meminfo, else sysconf; None if unknown."""
    try:
        with open("/proc/meminfo", encoding="ascii") as info:
            for line in info:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) / 1024  # kB
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") / (1024 * 1024)
    except (ValueError, OSError, AttributeError):
        return None


def default_memory_mb(searches: int = 1) -> Optional[int]:
    """DEFAULT_MEMORY_SHARE of the machine's memory, divided among `searches` running at once
    (e.g. `run --jobs N`); None when the machine's memory is unknown."""
    total = total_memory_mb()
    if total is None:
        return None
    return max(1, int(total * DEFAULT_MEMORY_SHARE / max(1, searches)))


def with_memory_default(limits: Optional[Limits], searches: int = 1) -> Limits:
    """`limits` (none given: no other limit) with the machine's memory default where it sets no
    memory limit of its own, so that a search started from Python ends BOUNDED like one from the
    command line instead of exhausting the machine."""
    limits = limits or Limits()
    if limits.max_memory_mb is not None:
        return limits
    memory = default_memory_mb(searches)
    return limits if memory is None else replace(limits, max_memory_mb=memory)
