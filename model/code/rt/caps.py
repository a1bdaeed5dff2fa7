"""The child's own caps as search bounds: a search nearing the CPU seconds or the address space
the child was given (child.py's RLIMIT_CPU, RLIMIT_AS) stops there, BOUNDED and saying which,
instead of being killed by the kernel or aborting in an allocation (a 2x2 search's child died so,
SIGABRT, after 17 minutes: no verdicts, only "the executor's child failed").

What the loop asks between two runs: the caps as the process has them (getrlimit: none outside
the child), the CPU seconds the process used (getrusage) and its address space (Linux:
/proc/self/statm, what RLIMIT_AS counts; elsewhere the peak RSS, a lower figure). The margins
leave room for the run in flight and the answer's own allocations."""

from __future__ import annotations

import os
import resource
from typing import Optional

MEMORY_SHARE = 0.85  # stop once the address space passes this share of the cap
CPU_MARGIN = 0.05  # stop this share of the CPU cap (at most 30 s) before it


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def address_space() -> int:
    """Bytes of the process's address space (the peak RSS where /proc is not there)."""
    try:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def limits() -> tuple[Optional[int], Optional[int]]:
    """The process's soft RLIMIT_CPU (seconds) and RLIMIT_AS (bytes), None where unlimited: the
    caps child.py set, and none in a process that runs a search in-process (a test, a script),
    whose CPU seconds count everything it did before."""
    def soft(which) -> Optional[int]:
        value = resource.getrlimit(which)[0]
        return None if value == resource.RLIM_INFINITY else value
    return soft(resource.RLIMIT_CPU), soft(resource.RLIMIT_AS)


def reached(cpu_cap: Optional[float], memory_cap: Optional[int], cpu: float,
            memory: int) -> Optional[tuple[str, float]]:
    """("cpu", cap) or ("memory", cap) when the usage is that close to a cap, else None."""
    if cpu_cap is not None and cpu >= cpu_cap - min(CPU_MARGIN * cpu_cap, 30.0):
        return "cpu", cpu_cap
    if memory_cap is not None and memory >= MEMORY_SHARE * memory_cap:
        return "memory", memory_cap
    return None
