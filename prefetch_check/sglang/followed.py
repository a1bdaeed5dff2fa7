"""The releases the model follows, as fingerprints of their prefetch path, and the honest floor.

Why: the model's verdicts for a tree were checked against the code of the releases in the
release table (0.5.1 .. 0.5.23, and the HiRadixCache of 0.5.19/0.5.20). A tree may be
answered by the model only where every function of its prefetch path (path_code.py) is the
code of one of those releases; a function that differs from all of them is code the model
never read, and the tree gets "not modelled: <function> at file:line differs from every
release the model follows" instead of verdicts, before any search and before the verdict
cache is asked. Over-refusing a harmless edit is the price; a clean verdict for unread code
is never paid.

A tree whose every piece some followed release has may still mix them (one function of
0.5.4, another of 0.5.20): no release the model follows has that whole path, so the model's
configuration for it is not known and it is refused too. A tree whose whole path equals a
followed release's gets, besides what the detector reads off it, what was recorded for that
release (release_record.py: the values that are absences, never read off a user's tree).

The fingerprints ship with the package (`followed.json`: digests and the recorded values,
no upstream code).
`python -m prefetch_check.sglang.followed CACHE_DIR` rebuilds them from the releases cached
by `prefetch-check sglang` (fetch them first, e.g. `prefetch-check sglang 0.5.1..0.5.23`).
"""

from __future__ import annotations

import dataclasses
import json
import sys
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Iterable, Mapping, Optional

from prefetch_check.sglang.detect import detect_shape
from prefetch_check.sglang.locate import read_protocol_files
from prefetch_check.sglang.path_code import PathFunction, prefetch_path
from prefetch_check.sglang.release_record import RECORDED, record
from prefetch_check.sglang.shape import Feature, Shape
from prefetch_check.sglang.versions import version_key

RESOURCE = "followed.json"
# (release, cache class to judge: None = the factory's) of every row of the release table
HIRADIX_TOO = ("0.5.19", "0.5.20")


@dataclass(frozen=True)
class Followed:
    """Per piece of the path (ident): digest -> the labels of the followed releases that have it;
    per release label, its recorded values (release_record.py: feature -> value)."""

    releases: tuple[str, ...]
    digests: Mapping[str, Mapping[str, tuple[str, ...]]] = field(default_factory=dict)
    recorded: Mapping[str, Mapping[str, str]] = field(default_factory=dict)

    def differing(self, path: Mapping[str, PathFunction]) -> list[PathFunction]:
        """The pieces of a tree's path whose code is in none of the followed releases."""
        return [piece for ident, piece in path.items() if piece.digest not in self.digests.get(ident, {})]

    def having(self, path: Mapping[str, PathFunction]) -> set[str]:
        """The labels of the followed releases that have every piece of the path (maybe more)."""
        labels = set(self.releases)
        for ident, piece in path.items():
            labels &= set(self.digests.get(ident, {}).get(piece.digest, ()))
        return labels

    def pieces_of(self, label: str) -> set[str]:
        """The idents of the path of one followed release."""
        return {ident for ident, by in self.digests.items() if any(label in labels for labels in by.values())}

    def equal(self, path: Mapping[str, PathFunction]) -> tuple[str, ...]:
        """The followed releases whose whole path is this path: the same pieces, the same code."""
        having = self.having(path)
        return tuple(label for label in self.releases if label in having and self.pieces_of(label) == set(path))

    def nearest(self, path: Mapping[str, PathFunction]) -> Optional[str]:
        """The followed release with the most pieces of this path as its own code (the later on a tie)."""
        counts = {label: 0 for label in self.releases}
        for ident, piece in path.items():
            for label in self.digests.get(ident, {}).get(piece.digest, ()):
                counts[label] = counts.get(label, 0) + 1
        best = max(enumerate(self.releases), key=lambda p: (counts[p[1]], p[0]), default=None)
        return best[1] if best is not None and counts[best[1]] else None

    def as_release(self, shape: Shape, label: str) -> Shape:
        """The shape with the recorded values of one followed release filled in where the detector saw
        nothing (for a comparison that says which release it stands on, never for a tree's verdicts)."""
        values = self.recorded.get(label, {})
        where = f"as recorded for {label}"
        filled = {name: Feature(values[name], (), where) for name in RECORDED
                  if not getattr(shape, name).recognised and name in values}
        return dataclasses.replace(shape, **filled)

    def recorded_shape(self, shape: Shape, path: Mapping[str, PathFunction]) -> tuple[Shape, str]:
        """(the shape with the recorded values of the release whose whole path this is filled in
        where the detector saw nothing, '') or (the shape unchanged, why it gets none: its path is
        no single followed release's, or the releases that have it were recorded differently)."""
        labels = self.equal(path)
        if not labels:
            return shape, self.mixing(path)
        records = {label: self.recorded.get(label, {}) for label in labels}
        distinct = {tuple(sorted(r.items())) for r in records.values()}
        if len(distinct) > 1:
            return shape, (f"its prefetch path is that of {self.span(labels)}, which were recorded with different "
                           f"values ({', '.join(RECORDED)}): the model's configuration for it is not known")
        values = records[labels[0]]
        where = f"as recorded for {self.span(labels)}, whose whole prefetch path this tree's is (followed.json)"
        filled = {name: Feature(values[name], (), where) for name in RECORDED
                  if not getattr(shape, name).recognised and name in values}
        return dataclasses.replace(shape, **filled), ""

    def mixing(self, path: Mapping[str, PathFunction]) -> str:
        """Why a path of followed code is no followed release's path: it lacks pieces that the
        releases having all of its pieces have, or it mixes pieces no one release has together."""
        having = self.having(path)
        if having:
            label = next(l for l in self.releases if l in having)
            lacks = sorted(self.pieces_of(label) - set(path))
            more = f" and {len(lacks) - 1} more" if len(lacks) > 1 else ""
            return (f"its prefetch path is the code of {label} without {lacks[0].partition(':')[2]}{more}: no release "
                    "the model follows has this path, so the model's configuration for it is not known")
        together: Optional[set[str]] = None
        before: list[PathFunction] = []
        for piece in sorted(path.values(), key=lambda p: (p.file, p.line, p.ident)):
            have = set(self.digests.get(piece.ident, {}).get(piece.digest, ()))
            if together is not None and not together & have:
                return (f"its prefetch path mixes releases: {piece.name} at {piece.where()} is the code of "
                        f"{self.span(have)}, the pieces before it ({before[0].name} at {before[0].where()} ...) are "
                        f"together only in {self.span(together)}; no release the model follows has this whole path, "
                        "so the model's configuration for it is not known")
            together = have if together is None else together & have
            before.append(piece)
        return "its prefetch path is no release's the model follows"

    def span(self, labels: Optional[Iterable[str]] = None) -> str:
        """Followed releases in a few words (all by default), e.g. '0.5.1 .. 0.5.23 (43 trees)'."""
        chosen = set(self.releases if labels is None else labels)
        ordered = [label for label in self.releases if label in chosen]
        if not ordered:
            return "none"
        if len(ordered) == 1:
            return ordered[0]
        return f"{ordered[0]} .. {ordered[-1]} ({len(ordered)} trees)"

    def merged(self, other: "Followed") -> "Followed":
        """Both sets: what a test does to let fixture trees stand for releases."""
        digests = {k: dict(v) for k, v in self.digests.items()}
        for ident, by_digest in other.digests.items():
            for d, labels in by_digest.items():
                digests.setdefault(ident, {})[d] = tuple(digests.get(ident, {}).get(d, ())) + tuple(labels)
        return Followed(self.releases + other.releases, digests, {**self.recorded, **other.recorded})

    def to_json(self) -> str:
        return json.dumps({"releases": list(self.releases),
                           "digests": {k: {d: list(v) for d, v in sorted(by.items())}
                                       for k, by in sorted(self.digests.items())},
                           "recorded": {label: dict(sorted(r.items())) for label, r in self.recorded.items()}},
                          indent=0, sort_keys=True) + "\n"


def from_json(text: str) -> Followed:
    doc = json.loads(text)
    return Followed(tuple(doc["releases"]),
                    {k: {d: tuple(v) for d, v in by.items()} for k, by in doc["digests"].items()},
                    {label: dict(r) for label, r in doc["recorded"].items()})


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
    labels, digests, recorded = [], {}, {}
    for label, files, cache_class in trees:
        labels.append(label)
        recorded[label] = record(files, cache_class)
        for ident, piece in tree_path(files, cache_class).items():
            by = digests.setdefault(ident, {})
            by[piece.digest] = tuple(by.get(piece.digest, ())) + (label,)
    return Followed(tuple(labels), digests, recorded)


def refusal(differing: list[PathFunction], followed: Followed) -> str:
    """The 'not modelled' note for a tree whose path differs from every followed release: the
    edited functions first, then the files fingerprinted whole (an edit shows in both)."""
    differing = sorted(differing, key=lambda p: p.whole)
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
