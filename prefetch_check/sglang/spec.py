"""What a SPEC of `prefetch-check sglang SPEC...` names, and the trees it expands to.

A SPEC is a release (`0.5.20`, `0.5.0rc2`), a range (`0.5.1..0.5.22`: every release the index
lists in it, post releases included, those of the upper bound too; pre-releases with `--pre`), a path (an SGLang checkout, a
site-packages folder, an unpacked wheel) or `installed` (the sglang this Python would import,
found without importing it).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

from prefetch_check.sglang.errors import SglangSourceError
from prefetch_check.sglang.locate import find_srt, installed_sglang
from prefetch_check.sglang.versions import in_range, is_version, version_key

INSTALLED = "installed"


@dataclass(frozen=True)
class Release:
    version: str


@dataclass(frozen=True)
class Range:
    low: str
    high: str


@dataclass(frozen=True)
class PathSpec:
    path: Path


@dataclass(frozen=True)
class Installed:
    pass


Spec = Release | Range | PathSpec | Installed


@dataclass(frozen=True)
class Target:
    """One tree to read: a release to fetch (`srt` None until fetched) or a folder in place."""

    label: str
    version: Optional[str] = None
    srt: Optional[Path] = None


def parse_spec(text: str) -> Spec:
    text = text.strip()
    if text == INSTALLED:
        return Installed()
    if ".." in text and not Path(text).exists():
        low, _, high = text.partition("..")
        if not (is_version(low) and is_version(high)):
            raise SglangSourceError(f"SPEC {text!r}: a range is two releases joined by '..', e.g. 0.5.1..0.5.22")
        if version_key(low) > version_key(high):
            raise SglangSourceError(f"SPEC {text!r}: the range is empty ({low} comes after {high})")
        return Range(low, high)
    if is_version(text) and not text.startswith(("./", "/")):
        return Release(text)
    path = Path(text).expanduser()
    if path.exists():
        return PathSpec(path)
    raise SglangSourceError(f"SPEC {text!r}: not a release (0.5.20), a range (0.5.1..0.5.22), an existing path, "
                            "or 'installed'")


def expand(specs: list[str], releases: Callable[[], tuple[str, ...]], pre: bool = False) -> list[Target]:
    """The trees the SPECs name, in order, each once. `releases()` lists the index (asked only for a
    range); a range holds pre-releases (rc, dev) only with `pre` (pip's --pre)."""
    out: list[Target] = []
    seen = set()

    def add(target: Target) -> None:
        key = target.version or str(target.srt)
        if key not in seen:
            seen.add(key)
            out.append(target)

    for text in specs:
        spec = parse_spec(text)
        if isinstance(spec, Release):
            add(Target(spec.version, version=spec.version))
        elif isinstance(spec, Range):
            inside = [v for v in releases() if in_range(v, spec.low, spec.high, pre)]
            if not inside:
                raise SglangSourceError(f"SPEC {text!r}: the package index lists no sglang release in this range")
            for v in inside:
                add(Target(v, version=v))
        elif isinstance(spec, PathSpec):
            add(Target(str(spec.path), srt=find_srt(spec.path)))
        else:
            version, srt = installed_sglang()
            add(Target(f"installed ({version or 'unknown version'})", version=None, srt=srt))
    return out
