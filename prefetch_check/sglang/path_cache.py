"""The prefetch paths of a tree's folder, kept on disk by the tree's content.

Following the path across sglang/srt parses some 300 files and takes seconds a tree; every
command and test that reads a release asks for it again. The answer is a pure function of the
tree's `.py` files and of the code that follows the path, so both are the key: an edited tree,
or a changed follower, is another key and never reads a stale path.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from pathlib import Path
from typing import Iterable, Optional

from prefetch_check.sglang.cache import cache_root
from prefetch_check.sglang.path_code import PathFunction

FOLDER = "paths"
_FOLLOWERS = ("path_code.py", "path_types.py", "srt_index.py", "builtin_methods.py", "code_digest.py",
              "tree_memo.py", "path_cache.py")


def _follower_digest() -> str:
    here = Path(__file__).parent
    h = hashlib.sha256()
    for name in _FOLLOWERS:
        h.update(name.encode() + b"\0" + (here / name).read_bytes())
    return h.hexdigest()


def tree_key(srt: Path, names: Iterable[str], extra: tuple[str, ...]) -> str:
    """The key of a tree's paths: the follower's own code, the extra files asked for, and every
    `.py` file below sglang/srt by name and content."""
    h = hashlib.sha256(_follower_digest().encode())
    h.update(json.dumps(list(extra)).encode())
    for rel in sorted(names):
        h.update(rel.encode() + b"\0" + hashlib.sha256((srt / rel).read_bytes()).digest())
    return h.hexdigest()


def load(key: str) -> Optional[tuple[list[str], dict[str, dict[str, PathFunction]]]]:
    """(the files the paths read, {cache class: path}) kept for `key`, or None."""
    try:
        doc = json.loads((cache_root() / FOLDER / f"{key}.json").read_text())
        paths = {cls: {p["ident"]: PathFunction(**p) for p in pieces} for cls, pieces in doc["paths"].items()}
        return list(doc["files"]), paths
    except (OSError, ValueError, KeyError, TypeError):
        return None


def store(key: str, files: list[str], paths: dict[str, dict[str, PathFunction]]) -> None:
    """Keep the paths of a tree (each writer through a temporary of its own: workers share it)."""
    folder = cache_root() / FOLDER
    try:
        folder.mkdir(parents=True, exist_ok=True)
        tmp = folder / f".{key}.{os.getpid()}.tmp"
        tmp.write_text(json.dumps({"files": files, "paths": {
            cls: [dataclasses.asdict(p) for p in path.values()] for cls, path in paths.items()}}))
        tmp.replace(folder / f"{key}.json")
    except OSError:  # a read-only cache: the paths are computed again next time
        pass
