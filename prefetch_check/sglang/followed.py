"""The releases the model follows, as fingerprints of their prefetch path, and the honest floor.

Why: the model's verdicts for a tree were checked against the code of the releases in the
release table (0.5.1 .. 0.5.23, and the HiRadixCache of 0.5.19/0.5.20). A tree may be
answered by the model only where every function of its prefetch path (path_code.py) is the
code of one of those releases; a function that differs from all of them is code the model
never read, and the tree gets "not modelled: <function> at file:line differs from every
release the model follows" instead of verdicts, before any search and before the verdict
cache is asked. Over-refusing a harmless edit is the price; a clean verdict for unread code
is never paid.

The fingerprints ship with the package (`followed.json`: digests only, no upstream code).
`python -m prefetch_check.sglang.followed CACHE_DIR` rebuilds them from the releases cached
by `prefetch-check sglang` (fetch them first, e.g. `prefetch-check sglang 0.5.1..0.5.23`).
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Iterable, Mapping, Optional

from prefetch_check.model.source.detect import detect_shape
from prefetch_check.sglang.locate import read_protocol_files
from prefetch_check.sglang.path_code import PathFunction, prefetch_path
from prefetch_check.sglang.versions import version_key

RESOURCE = "followed.json"
# (release, cache class to judge: None = the factory's) of every row of the release table
HIRADIX_TOO = ("0.5.19", "0.5.20")


@dataclass(frozen=True)
class Followed:
    """Per piece of the path (ident): digest -> the labels of the followed releases that have it."""

    releases: tuple[str, ...]
    digests: Mapping[str, Mapping[str, tuple[str, ...]]] = field(default_factory=dict)

    def differing(self, path: Mapping[str, PathFunction]) -> list[PathFunction]:
        """The pieces of a tree's path whose code is in none of the followed releases."""
        return [piece for ident, piece in path.items() if piece.digest not in self.digests.get(ident, {})]

    def span(self) -> str:
        """The followed releases in a few words, e.g. '0.5.1 .. 0.5.23 (43 trees)'."""
        if not self.releases:
            return "none"
        return f"{self.releases[0]} .. {self.releases[-1]} ({len(self.releases)} trees)"

    def merged(self, other: "Followed") -> "Followed":
        """Both sets: what a test does to let fixture trees stand for releases."""
        digests = {k: dict(v) for k, v in self.digests.items()}
        for ident, by_digest in other.digests.items():
            for d, labels in by_digest.items():
                digests.setdefault(ident, {})[d] = tuple(digests.get(ident, {}).get(d, ())) + tuple(labels)
        return Followed(self.releases + other.releases, digests)

    def to_json(self) -> str:
        return json.dumps({"releases": list(self.releases),
                           "digests": {k: {d: list(v) for d, v in sorted(by.items())}
                                       for k, by in sorted(self.digests.items())}}, indent=0, sort_keys=True) + "\n"


def from_json(text: str) -> Followed:
    doc = json.loads(text)
    return Followed(tuple(doc["releases"]),
                    {k: {d: tuple(v) for d, v in by.items()} for k, by in doc["digests"].items()})


@lru_cache(maxsize=1)
def shipped() -> Followed:
    """The fingerprints that ship with prefetch-check."""
    return from_json(resources.files("prefetch_check.sglang").joinpath(RESOURCE).read_text(encoding="utf-8"))


def tree_path(files: Mapping[str, str], cache_class: Optional[str] = None) -> dict[str, PathFunction]:
    """The fingerprinted prefetch path of the class judged in these files (the factory's by default)."""
    shape = detect_shape(files, cache_class)
    judged = shape.judged_class.value
    if judged is None:
        return {}
    return prefetch_path(files, judged)


def build(trees: Iterable[tuple[str, Mapping[str, str], Optional[str]]]) -> Followed:
    """The fingerprints of (label, protocol files, cache class) trees."""
    labels, digests = [], {}
    for label, files, cache_class in trees:
        labels.append(label)
        for ident, piece in tree_path(files, cache_class).items():
            by = digests.setdefault(ident, {})
            by[piece.digest] = tuple(by.get(piece.digest, ())) + (label,)
    return Followed(tuple(labels), digests)


def refusal(differing: list[PathFunction], followed: Followed) -> str:
    """The 'not modelled' note for a tree whose path differs from every followed release."""
    first = differing[0]
    text = (f"{first.name} at {first.where()} differs from every release the model follows "
            f"({followed.span()}): the model has not read this code")
    rest = differing[1:]
    if rest:
        shown = ", ".join(f"{p.name} ({p.where()})" for p in rest[:4])
        text += f"; also {shown}" + (f" and {len(rest) - 4} more" if len(rest) > 4 else "")
    return text


def _cached_trees(cache: Path) -> list[tuple[str, Mapping[str, str], Optional[str]]]:
    from prefetch_check.sglang.cache import cached_versions, release_dir
    out = []
    for version in sorted((v for v in cached_versions(cache) if v.startswith("0.5.") and "rc" not in v),
                          key=version_key):
        files = read_protocol_files(release_dir(cache, version) / "sglang" / "srt")
        out.append((version, files, None))
        if version in HIRADIX_TOO:
            out.append((f"{version} (HiRadixCache)", files, "HiRadixCache"))
    return out


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m prefetch_check.sglang.followed CACHE_DIR  (writes followed.json)", file=sys.stderr)
        return 2
    followed = build(_cached_trees(Path(argv[0]).expanduser()))
    target = Path(__file__).with_name(RESOURCE)
    target.write_text(followed.to_json(), encoding="utf-8")
    print(f"{target}: {len(followed.digests)} pieces of the path over {followed.span()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
