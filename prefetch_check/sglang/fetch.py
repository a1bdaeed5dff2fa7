"""Fetching one release with `pip download --no-deps`, keeping every `sglang/srt/**/*.py` of it.

Why every source file: the prefetch path (path_code.py) follows the code into any srt file it
reaches (pools, storage backends, the buffer_only pipeline, ...), and which files those are is
computed from the code, release by release and as the path's rules grow; keeping the Python
sources (0.5.1: 4 MB, 0.5.23: 39 MB on disk; docs/sglang.md) means a cached release is never
a tree whose files are missing. Native libraries, data and other packages are not kept.

The wheel (~40 MB) is unpacked to `<cache>/<version>/sglang/srt/...` and deleted; a
`SOURCE.json` written last marks the folder complete, so an interrupted fetch is redone and
a second run reads the cache without touching the network. It records what it kept (`kept`:
KEEP); a folder fetched by an older prefetch-check, which kept only the protocol files, is
fetched again, and when that cannot be done it is an error naming the folder, never a tree
read with files missing.
"""

from __future__ import annotations

import json
import shutil
import tarfile
import tempfile
import zipfile
from datetime import datetime, timezone
from pathlib import Path

from prefetch_check.sglang.cache import cached_versions, release_dir
from prefetch_check.sglang.errors import SglangSourceError
from prefetch_check.sglang.locate import PROTOCOL_FILES, member_to_srt_source
from prefetch_check.sglang.pip import Runner, last_error_line, run_pip

SOURCE_FILE = "SOURCE.json"
KEEP = "sglang/srt/**/*.py"  # what a fetch keeps, recorded in SOURCE.json


def fetch_release(version: str, root: Path, runner: Runner = run_pip) -> Path:
    """The cached sglang/srt folder of `version`, downloading it first if it is not cached."""
    dest = release_dir(root, version)
    if _complete(dest / SOURCE_FILE):
        return dest / "sglang" / "srt"
    if (dest / SOURCE_FILE).is_file():  # fetched by an older prefetch-check (protocol files only)
        try:
            return _download(version, root, dest, runner)
        except SglangSourceError as exc:
            raise SglangSourceError(
                f"{dest}: fetched by an older prefetch-check, which kept only the protocol files; the prefetch "
                f"path needs every sglang/srt source file and fetching {version} again failed ({exc}). "
                f"Run once with the package index reachable, or delete {dest}") from None
    return _download(version, root, dest, runner)


def _download(version: str, root: Path, dest: Path, runner: Runner) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".fetch-{version}-", dir=root))
    try:
        result = runner(["download", "--no-deps", "--quiet", "-d", str(work), f"sglang=={version}"])
        archives = sorted(p for p in work.iterdir() if p.is_file())
        if result.returncode != 0 or not archives:
            cached = ", ".join(sorted(cached_versions(root))) or "none"
            raise SglangSourceError(
                f"cannot download sglang=={version} with pip ({last_error_line(result)}); without the package "
                f"index only cached releases run (cached in {root}: {cached})")
        archive = archives[0]
        staged = work / "release"  # extracted aside, then renamed into place whole: a process reading
        kept = _extract(archive, staged / "sglang" / "srt")  # the cache never sees half a release
        if not kept:
            raise SglangSourceError(f"{archive.name}: holds no sglang/srt source files")
        (staged / SOURCE_FILE).write_text(json.dumps({
            "version": version, "archive": archive.name, "archive_bytes": archive.stat().st_size,
            "fetched_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "files": [rel for rel in kept if rel in PROTOCOL_FILES], "kept": KEEP, "source_files": len(kept),
            "source_bytes": sum((staged / "sglang" / "srt" / rel).stat().st_size for rel in kept),
            "wanted": list(PROTOCOL_FILES)}, indent=1))
        _install(staged, dest, work)
        return dest / "sglang" / "srt"
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _install(staged: Path, dest: Path, work: Path) -> None:
    """Put a staged release at `dest` by renames only. Another process (a test worker, a second
    command) may have put a complete one there first: then that one stays."""
    if _complete(dest / SOURCE_FILE):
        return
    if dest.exists():  # an incomplete fetch of an older prefetch-check: moved aside, removed with `work`
        try:
            dest.rename(work / "replaced")
        except OSError:
            pass
    try:
        staged.rename(dest)
    except OSError:
        if not _complete(dest / SOURCE_FILE):
            raise


def _complete(source: Path) -> bool:
    """Whether a cached fetch kept every srt source file (an older one kept the protocol files only)."""
    if not source.is_file():
        return False
    try:
        record = json.loads(source.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return record.get("kept") == KEEP


def _extract(archive: Path, srt: Path) -> list[str]:
    """Write the srt source files of a wheel (zip) or sdist (tar.gz) below `srt`; their relative paths."""
    kept = []

    def keep(name: str, read) -> None:
        rel = member_to_srt_source(name)
        if rel is not None and rel not in kept:
            target = srt / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(read())
            kept.append(rel)

    if zipfile.is_zipfile(archive):
        with zipfile.ZipFile(archive) as z:
            for name in z.namelist():
                keep(name, lambda name=name: z.read(name))
    elif tarfile.is_tarfile(archive):
        with tarfile.open(archive) as t:
            for member in t.getmembers():
                if member.isfile():
                    keep(member.name, lambda member=member: t.extractfile(member).read())
    else:
        raise SglangSourceError(f"{archive.name}: neither a wheel nor an sdist")
    return sorted(kept)
