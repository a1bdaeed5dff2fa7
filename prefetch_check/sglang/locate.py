"""Where the protocol files live in an SGLang checkout, a site-packages, an unpacked wheel or sdist."""

from __future__ import annotations

import importlib.metadata
import importlib.util
from collections.abc import Mapping
from pathlib import Path
from typing import Callable, Iterable, Iterator, Optional

from prefetch_check.sglang import path_cache
from prefetch_check.sglang.errors import SglangSourceError
from prefetch_check.sglang.path_code import paths_files, remember
from prefetch_check.sglang.srt_index import (  # noqa: F401  (where the callers find them)
    CACHE_FILES, CONTROLLER, HIRADIX, REGISTRY, SCHEDULER, UNIFIED)

# Below sglang/srt/: the files the prefetch protocol lives in, and the ones that build the cache.
PROTOCOL_FILES = (
    "mem_cache/hiradix_cache.py",
    "mem_cache/unified_radix_cache.py",
    "mem_cache/hybrid_cache/hybrid_cache_controller.py",
    "mem_cache/registry.py",
    "mem_cache/storage_prefetch.py",
    "mem_cache/hicache_storage.py",
    "managers/cache_controller.py",
    "managers/scheduler.py",
    # the small real modules the executor (prefetch_check.model.code) runs besides the three above
    "utils/poll_timer.py",
    "mem_cache/unified_cache/component_type.py",
)
SRT = ("sglang", "srt")


def _is_srt(folder: Path) -> bool:
    return folder.name == "srt" and folder.parent.name == "sglang" and (
        (folder / "mem_cache").is_dir() or (folder / "managers").is_dir())


def find_srt(path: Path) -> Path:
    """The `sglang/srt` folder of a checkout (python/sglang/srt), site-packages or unpacked wheel."""
    path = Path(path).expanduser()
    if not path.exists():
        raise SglangSourceError(f"{path}: no such file or folder (a SPEC is a release like 0.5.20, a range "
                                "like 0.5.1..0.5.22, a path to an SGLang tree, or 'installed')")
    candidates = [path, path / "srt", path / "sglang" / "srt", path / "python" / "sglang" / "srt"]
    for folder in candidates:
        if folder.is_dir() and _is_srt(folder.resolve()):
            return folder.resolve()
    raise SglangSourceError(
        f"{path}: no SGLang source found (looked for sglang/srt with mem_cache/ or managers/ in it at "
        f"{', '.join(str(c) for c in candidates[1:])}); give an SGLang checkout, a site-packages folder "
        "or an unpacked wheel")


class SrtFiles(Mapping):
    """Every `.py` file below sglang/srt of one tree (path below sglang/srt -> text), read when first
    asked for: the prefetch path (path_code.py) reads the few files it reaches out of thousands."""

    def __init__(self, names: Iterable[str], read: Callable[[str], Optional[str]]):
        self._names = sorted(names)
        self._known = set(self._names)
        self._read = read
        self._texts: dict[str, str] = {}

    @classmethod
    def of_folder(cls, srt: Path) -> "SrtFiles":
        names = [p.relative_to(srt).as_posix() for p in srt.rglob("*.py") if p.is_file()]
        return cls(names, lambda rel: (srt / rel).read_text(encoding="utf-8", errors="replace"))

    def __getitem__(self, rel: str) -> str:
        if rel not in self._known:
            raise KeyError(rel)
        if rel not in self._texts:
            text = self._read(rel)
            if text is None:
                raise KeyError(rel)
            self._texts[rel] = text
        return self._texts[rel]

    def __contains__(self, rel: object) -> bool:
        return rel in self._known

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)


def read_protocol_files(srt: Path, extra: tuple[str, ...] = ()) -> dict[str, str]:
    """{path below sglang/srt: text} of each protocol file present (absent ones are left out), of
    the `extra` ones (the files registered mappings name for their judged classes) and of every
    file the prefetch path of each cache class reaches in the tree (path_code.py)."""
    tree = SrtFiles.of_folder(srt)
    key = path_cache.tree_key(srt, tree, tuple(extra))
    kept = path_cache.load(key)
    if kept is not None and all(rel in tree for rel in kept[0]):
        out = {rel: tree[rel] for rel in kept[0]}
        for cls, path in kept[1].items():
            remember(out, cls, path)
        return out
    out, paths = _path_files(tree, extra)
    path_cache.store(key, list(out), paths)
    return out


def read_path_files(tree: Mapping[str, str], extra: tuple[str, ...] = ()) -> dict[str, str]:
    """The protocol files, the `extra` ones and the files the prefetch paths reach, out of all the
    tree's files: what the path of every cache class, computed again from this dict alone, reads
    the same."""
    return _path_files(tree, extra)[0]


def _path_files(tree: Mapping[str, str], extra: tuple[str, ...]) -> tuple[dict[str, str], dict]:
    out = {rel: tree[rel] for rel in PROTOCOL_FILES + tuple(extra) if rel in tree}
    needed, paths = paths_files(tree, [cls for cls, rel in sorted(CACHE_FILES.items()) if rel in tree])
    out.update((f, tree[f]) for f in sorted(needed) if f in tree)
    out = dict(sorted(out.items()))
    for cls, path in paths.items():
        remember(out, cls, path)
    return out, paths


def installed_sglang() -> tuple[Optional[str], Path]:
    """(version or None, sglang/srt) of the sglang this Python would import, found without importing it."""
    spec = importlib.util.find_spec("sglang")  # a top-level name: finds the package, runs nothing
    if spec is None or not spec.submodule_search_locations:
        raise SglangSourceError("installed: this Python environment has no 'sglang' package "
                                "(activate the serving environment, or give a path or a release)")
    package = Path(list(spec.submodule_search_locations)[0])
    try:
        version = importlib.metadata.version("sglang")
    except importlib.metadata.PackageNotFoundError:
        version = None
    return version, find_srt(package.parent)


def member_to_srt_source(name: str) -> Optional[str]:
    """The path below sglang/srt of a wheel or sdist member that is an srt source file, if it is one."""
    marker = "sglang/srt/"
    at = 0 if name.startswith(marker) else name.find("/" + marker) + 1
    if at == 0 and not name.startswith(marker) or not name.endswith(".py"):
        return None
    rel = name[at + len(marker):]
    return rel if rel and ".." not in rel.split("/") else None
