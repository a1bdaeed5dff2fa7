"""The shape of a tree as the model takes it: what the detector reads off the tree as positive
evidence, plus what was recorded for the followed release whose whole prefetch path it is.

Why one place: `prefetch-check sglang`, the conformance bench and the tests must give a tree
the same shape; an absence ("no hit queue", "no ACKs", ...) is never read off the tree itself
(followed.py, release_record.py), so a tree whose path is no followed release's keeps those
features unrecognised and gets no family and no model options.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Optional

from prefetch_check.sglang import followed
from prefetch_check.sglang.detect import detect_shape
from prefetch_check.sglang.followed import Followed
from prefetch_check.sglang.gc_paused import gc_paused
from prefetch_check.sglang.path_code import PathFunction, prefetch_path
from prefetch_check.sglang.shape import Shape


@dataclass
class TreeShape:
    """shape: as the model takes it; path: the tree's prefetch path, fingerprinted; differing: its
    pieces no followed release has; unmatched: why the path is no single followed release's ('');
    nearest: for a tree whose path differs, the followed release nearest it and the shape with that
    release's recorded values (what the conformance check compares its code with, saying so)."""

    shape: Shape
    path: dict[str, PathFunction] = field(default_factory=dict)
    differing: list[PathFunction] = field(default_factory=list)
    unmatched: str = ""
    nearest: Optional[tuple[str, Shape]] = None


def tree_shape(files: Mapping[str, str], cache_class: Optional[str] = None,
               follows: Optional[Followed] = None) -> TreeShape:
    """The model's shape of the class judged in these protocol files (the factory's by default),
    against `follows` (default: the fingerprints shipped with prefetch-check)."""
    with gc_paused():  # the detector's and the path's syntax trees: see gc_paused.py
        return _tree_shape(files, cache_class, follows)


def _tree_shape(files: Mapping[str, str], cache_class: Optional[str], follows: Optional[Followed]) -> TreeShape:
    shape = detect_shape(files, cache_class)
    if shape.judged_class.value is None:
        return TreeShape(shape)
    follows = follows if follows is not None else followed.shipped()
    path = prefetch_path(files, shape.judged_class.value)
    differing = follows.differing(path)
    if differing:
        label = follows.nearest(path)
        return TreeShape(shape, path, differing, nearest=(label, follows.as_release(shape, label)) if label else None)
    shape, unmatched = follows.recorded_shape(shape, path)
    return TreeShape(shape, path, [], unmatched)
