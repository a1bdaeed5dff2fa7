"""Where the protocol files live in an SGLang checkout, a site-packages, an unpacked wheel or sdist."""

from __future__ import annotations

import importlib.metadata
import importlib.util
from pathlib import Path
from typing import Optional

from prefetch_check.sglang.errors import SglangSourceError

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
# the files that hold the cache classes and the controller (below sglang/srt/)
HIRADIX = "mem_cache/hiradix_cache.py"
UNIFIED = "mem_cache/unified_radix_cache.py"
CONTROLLER = "managers/cache_controller.py"
REGISTRY = "mem_cache/registry.py"
SCHEDULER = "managers/scheduler.py"
CACHE_FILES = {"HiRadixCache": HIRADIX, "UnifiedRadixCache": UNIFIED}


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


def read_protocol_files(srt: Path, extra: tuple[str, ...] = ()) -> dict[str, str]:
    """{path below sglang/srt: text} for each protocol file present (absent ones are left out),
    and the `extra` ones (the files registered mappings name for their judged classes)."""
    out = {}
    for rel in PROTOCOL_FILES + tuple(extra):
        f = srt / rel
        if f.is_file():
            out[rel] = f.read_text(encoding="utf-8", errors="replace")
    return out


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


def member_to_rel(name: str) -> Optional[str]:
    """The protocol file a wheel or sdist member is, if any (`.../sglang/srt/<rel>`)."""
    for rel in PROTOCOL_FILES:
        suffix = "sglang/srt/" + rel
        if name == suffix or name.endswith("/" + suffix):
            return rel
    return None
