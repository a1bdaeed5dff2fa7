"""Where the files of a check go: the child's own temporary folder, which the parent makes (on a
tmpfs where the machine has one: a directory made and removed costs about 0.8 ms on ext4 against
0.1 ms there) and removes whatever the child did, a tree whose storage backend raises in its
constructor or a child killed at its time limit included. The parent names it to the child in
the environment; a run in the checker's own process (a test, a profile) uses the tmpfs itself."""

from __future__ import annotations

import os
from typing import Optional

SCRATCH_ENV = "PREFETCH_CHECK_SCRATCH"


def memory_fs() -> Optional[str]:
    """/dev/shm where it is a writable directory, else None (the default temporary folder)."""
    return "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None


def run_files_root() -> Optional[str]:
    """Where a run makes its files: the child's folder, or outside a child the tmpfs."""
    return os.environ.get(SCRATCH_ENV) or memory_fs()
