"""Where fetched releases and the index listing are kept between runs."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Optional

CACHE_ENV = "PREFETCH_CHECK_SGLANG_CACHE"


def cache_root(flag: Optional[str] = None) -> Path:
    """--cache-dir, else $PREFETCH_CHECK_SGLANG_CACHE, else ~/.cache/prefetch-check/sglang."""
    if flag:
        return Path(flag).expanduser()
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV]).expanduser()
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "prefetch-check" / "sglang"


def release_dir(root: Path, version: str) -> Path:
    return root / version


def cached_versions(root: Path) -> list[str]:
    """Releases whose protocol files are complete in the cache."""
    if not root.is_dir():
        return []
    return [p.name for p in root.iterdir() if (p / "SOURCE.json").is_file()]
