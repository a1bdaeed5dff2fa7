"""Release versions as the package index spells them (`0.5.15.post1`), ordered and compared."""

from __future__ import annotations

import re
from typing import Optional

_VERSION = re.compile(r"^(\d+)\.(\d+)\.(\d+)(?:\.post(\d+))?$")


def version_key(text: str) -> Optional[tuple[int, int, int, int]]:
    """(major, minor, patch, post) or None for a form the checker does not order (rc, dev, ...)."""
    m = _VERSION.match(text.strip())
    if m is None:
        return None
    major, minor, patch, post = m.groups()
    return int(major), int(minor), int(patch), int(post) if post is not None else -1


def is_version(text: str) -> bool:
    return version_key(text) is not None


def sort_versions(versions) -> list[str]:
    """Oldest first; forms without a key are dropped."""
    return sorted((v for v in versions if is_version(v)), key=version_key)


def in_range(version: str, low: str, high: str) -> bool:
    """low <= version <= high, post releases of `high` included (0.5.1..0.5.22 holds 0.5.22.post1)."""
    key = version_key(version)
    lo, hi = version_key(low), version_key(high)
    if key is None or lo is None or hi is None:
        return False
    return lo <= key and key[:3] <= hi[:3] and (hi[3] == -1 or key <= hi)
