"""The child's compiled code, kept between children: each child is a fresh `python -I -B` that
would otherwise compile every module it imports from source (the tree's prefetch-path files and
the executor's own worlds: a trivial check took 0.31 s with it, 0.13-0.17 s without, on this
machine, where PYTHONDONTWRITEBYTECODE is set and no `__pycache__` exists).

The child only reads: its import system's `source_to_code` looks the source up here by a digest
of its bytes (and of the interpreter's bytecode version), and compiles it as before when it is
missing, naming the file in its answer. The parent then compiles that file itself (`compile`
parses, it runs nothing) and stores the code under the digest of what it read, so an entry always
is the code of the source it is filed under, whatever a child answered. The code is independent
of where the file lies but for its file name, which a hit in another folder (a test's edited copy
of a release) gets back; the verdicts, counts, sites and coverage are those of a compile from
source. Nothing is written inside the tree or by the child."""

from __future__ import annotations

import hashlib
import importlib.util
import marshal
import os
import sys
import tempfile
import types
from pathlib import Path
from typing import Optional

CACHE_ENV = "PREFETCH_CHECK_BYTECODE_CACHE"  # a folder, or "off"
KEEP = 1_000  # entries kept when the folder has grown past KEEP + KEEP // 3 (the oldest go; 0.5.23 with
# the suite's edited copies fills about 400, 27 MB)


def cache_dir() -> Optional[Path]:
    """$PREFETCH_CHECK_BYTECODE_CACHE, else ~/.cache/prefetch-check/bytecode; None when "off"."""
    chosen = os.environ.get(CACHE_ENV)
    if chosen == "off":
        return None
    if chosen:
        return Path(chosen).expanduser()
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "prefetch-check" / "bytecode"


def key(source: bytes) -> str:
    """The entry of a source: its bytes, the bytecode version and the optimisation level."""
    digest = hashlib.blake2b(importlib.util.MAGIC_NUMBER + bytes([sys.flags.optimize]), digest_size=20)
    digest.update(source)
    return digest.hexdigest()


# ---- the child's side
def install(folder: Optional[str]) -> list[str]:
    """Serve compiled code from `folder` to every import of a source file from here on; the list
    returned fills with the files compiled from source (the misses)."""
    misses: list[str] = []
    if not folder:
        return misses
    from importlib import _bootstrap_external  # the loader every source import goes through

    base = _bootstrap_external.SourceLoader.source_to_code

    def source_to_code(self, data, path, *, _optimize=-1):
        if _optimize == -1 and isinstance(data, bytes) and isinstance(path, str):
            try:
                with open(os.path.join(folder, key(data)), "rb") as f:
                    code = marshal.loads(f.read())
            except (OSError, EOFError, ValueError, TypeError):
                code = None
            if isinstance(code, types.CodeType):
                return code if code.co_filename == path else _refiled(code, path)
            misses.append(path)
        return base(self, data, path, _optimize=_optimize)

    _bootstrap_external.SourceLoader.source_to_code = source_to_code
    return misses


def _refiled(code: types.CodeType, path: str) -> types.CodeType:
    """The same code under another file name (its nested functions' and classes' too)."""
    consts = tuple(_refiled(c, path) if isinstance(c, types.CodeType) else c for c in code.co_consts)
    return code.replace(co_filename=path, co_consts=consts)


# ---- the parent's side
def store(folder: Optional[Path], paths: list[str]) -> None:
    """Compile the files a child compiled from source and keep their code (never raises: the
    cache only saves time)."""
    if folder is None or not paths:
        return
    try:
        folder.mkdir(parents=True, exist_ok=True)
        for path in dict.fromkeys(paths):
            try:
                source = Path(path).read_bytes()
                code = compile(source, path, "exec", dont_inherit=True)
            except (OSError, SyntaxError, ValueError):
                continue
            fd, tmp = tempfile.mkstemp(dir=folder, prefix=".part-")
            with os.fdopen(fd, "wb") as f:
                marshal.dump(code, f)
            os.replace(tmp, folder / key(source))
        _prune(folder)
    except OSError:
        return


def _prune(folder: Path) -> None:
    """Edited copies add an entry per edit: past KEEP + KEEP // 3 entries, the oldest go."""
    entries = [p for p in folder.iterdir() if not p.name.startswith(".")]
    if len(entries) <= KEEP + KEEP // 3:
        return
    entries.sort(key=lambda p: p.stat().st_mtime)
    for p in entries[:len(entries) - KEEP]:
        p.unlink(missing_ok=True)
