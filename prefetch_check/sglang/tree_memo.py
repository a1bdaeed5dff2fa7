"""What computing prefetch paths reads off a tree's syntax, kept instead of read again.

Why: following the path of every cache class of a tree (locate.read_path_files) walks the same
files, functions and syntax trees again and again: each class's walk parses the files, a method
is read once per class its `self` may be, a file fingerprinted whole repeats the fingerprints of
its functions. Everything kept here is a pure function of text (the parsed files and the bases
index of one tree: `TreeMemo`, for one call; the nodes of a piece, a fingerprint: `Readings`,
kept with the parsed file they are read off, srt_index.Module), so sharing it changes no
answer. Both hold the nodes they are keyed by, so an `id` key is never reused.
"""

from __future__ import annotations

import ast
from typing import Callable, Optional, TypeVar

T = TypeVar("T")


class TreeMemo:
    """The memo of one call over one tree: its parsed files, its bases index, canonical texts."""

    def __init__(self) -> None:
        self.modules: dict = {}  # rel -> srt_index.Module or None (a file that does not parse)
        self.bases_index: Optional[dict[str, list[str]]] = None  # srt_index.Srt._naming_in_bases
        self.canonical: dict = {}  # code_digest: (id(definition), docstrings) -> (definition, text)


class Readings:
    """What is read off the nodes of one parsed file, by kind of reading and node."""

    def __init__(self) -> None:
        self._per_node: dict[tuple[str, int], tuple[ast.AST, object]] = {}

    def per_node(self, kind: str, node: ast.AST, make: Callable[[ast.AST], T]) -> T:
        """`make(node)`, once per node and kind (the node is kept, so its `id` is not reused)."""
        key = (kind, id(node))
        hit = self._per_node.get(key)
        if hit is None:
            hit = (node, make(node))
            self._per_node[key] = hit
        return hit[1]


def walk(node: ast.AST) -> list[ast.AST]:
    """Every node below `node` (itself first) in `ast.walk`'s breadth-first order, as a list:
    ast.walk's generator of generators is most of what reading a tree costs."""
    out = [node]
    i = 0
    while i < len(out):
        n = out[i]
        i += 1
        for name in n._fields:
            value = getattr(n, name, None)
            if isinstance(value, ast.AST):
                out.append(value)
            elif isinstance(value, list):
                out.extend(c for c in value if isinstance(c, ast.AST))
    return out
