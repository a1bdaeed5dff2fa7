"""The releases of sglang on the package index (`pip index versions`), cached with their date."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Optional

from prefetch_check.sglang.errors import SglangSourceError
from prefetch_check.sglang.pip import Runner, last_error_line, run_pip
from prefetch_check.sglang.versions import sort_versions

INDEX_FILE = "index.json"


@dataclass(frozen=True)
class Listing:
    """The releases the index has, oldest first; `stale` says why the cached copy was used."""

    versions: tuple[str, ...]
    fetched_at: str
    stale: Optional[str] = None


def parse_index_output(text: str) -> list[str]:
    """The versions of `pip index versions sglang --pre` ("Available versions: 0.5.23, 0.5.22, ...")."""
    m = re.search(r"Available versions:\s*(.+)", text)
    if m is None:
        return []
    return sort_versions(v.strip() for v in m.group(1).split(","))


def list_releases(root: Path, runner: Runner = run_pip, refresh: bool = True) -> Listing:
    """Ask the index; on success cache the list. Unreachable: the cached list with its date, else an error."""
    cached = _read_cached(root)
    if refresh or cached is None:
        result = runner(["index", "versions", "sglang", "--pre"])  # pre-releases too: a range takes them with --pre
        versions = parse_index_output(result.stdout or "") if result.returncode == 0 else []
        if versions:
            listing = Listing(tuple(versions), datetime.now(timezone.utc).isoformat(timespec="seconds"))
            _write_cached(root, listing)
            return listing
        why = last_error_line(result) if result.returncode != 0 else "pip printed no 'Available versions' line"
        if cached is not None:
            return Listing(cached.versions, cached.fetched_at,
                           stale=f"the package index is unreachable ({why}); using the list cached on {cached.fetched_at}")
        raise SglangSourceError(
            f"cannot list the sglang releases: the package index is unreachable ({why}) and no list is cached in "
            f"{root / INDEX_FILE}. Give releases one by one (cached ones run offline) or a path.")
    return cached


def _read_cached(root: Path) -> Optional[Listing]:
    try:
        data = json.loads((root / INDEX_FILE).read_text())
        return Listing(tuple(sort_versions(data["versions"])), str(data["fetched_at"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _write_cached(root: Path, listing: Listing) -> None:
    root.mkdir(parents=True, exist_ok=True)
    tmp = root / (INDEX_FILE + ".tmp")
    tmp.write_text(json.dumps({"fetched_at": listing.fetched_at, "versions": list(listing.versions)}, indent=1))
    tmp.replace(root / INDEX_FILE)
