"""Fetching one release with `pip download --no-deps`, keeping only its protocol files.

The wheel (~40 MB) is unpacked to `<cache>/<version>/sglang/srt/...` and deleted; a
`SOURCE.json` written last marks the folder complete, so an interrupted fetch is redone and
a second run reads the cache without touching the network. It records the file list it was
fetched for (`wanted`); a folder fetched before a file joined PROTOCOL_FILES is fetched again.
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
from prefetch_check.sglang.locate import PROTOCOL_FILES, member_to_rel
from prefetch_check.sglang.pip import Runner, last_error_line, run_pip

SOURCE_FILE = "SOURCE.json"


def fetch_release(version: str, root: Path, runner: Runner = run_pip) -> Path:
    """The cached sglang/srt folder of `version`, downloading it first if it is not cached."""
    dest = release_dir(root, version)
    if _complete(dest / SOURCE_FILE):
        return dest / "sglang" / "srt"
    if (dest / SOURCE_FILE).is_file():  # fetched before a file joined PROTOCOL_FILES: complete it if we can
        try:
            return _download(version, root, dest, runner)
        except SglangSourceError:
            return dest / "sglang" / "srt"
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
            raise SglangSourceError(f"{archive.name}: holds none of the prefetch protocol files (sglang/srt/...)")
        (staged / SOURCE_FILE).write_text(json.dumps({
            "version": version, "archive": archive.name, "archive_bytes": archive.stat().st_size,
            "fetched_at": datetime.now(timezone.utc).isoformat(timespec="seconds"), "files": kept,
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
    """Whether a cached fetch holds every file PROTOCOL_FILES asks for today (or knows the wheel lacks it)."""
    if not source.is_file():
        return False
    try:
        record = json.loads(source.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    asked = set(record.get("wanted") or record.get("files") or ())
    return set(PROTOCOL_FILES) <= asked


def _extract(archive: Path, srt: Path) -> list[str]:
    """Write the protocol files of a wheel (zip) or sdist (tar.gz) below `srt`; their relative paths."""
    kept = []

    def keep(name: str, read) -> None:
        rel = member_to_rel(name)
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
