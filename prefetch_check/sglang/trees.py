"""The SGLang trees a run reads: a release fetched into the cache, or a folder read in place.

A tree that cannot be read (a release neither cached nor downloadable) keeps its label and the
reason, so its row says "not read" and the other trees still run.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from prefetch_check.sglang.errors import SglangSourceError
from prefetch_check.sglang.fetch import fetch_release
from prefetch_check.sglang.pip import Runner, run_pip
from prefetch_check.sglang.spec import Target


@dataclass(frozen=True)
class Tree:
    """One SGLang tree to check: its label, its sglang/srt folder, or why it could not be read."""

    label: str
    srt: Optional[Path] = None
    error: str = ""


def read_trees(targets: list[Target], cache: Path, runner: Runner = run_pip) -> list[Tree]:
    """A tree per target, fetching releases that are not cached yet."""
    trees = []
    for target in targets:
        try:
            srt = target.srt if target.srt is not None else fetch_release(target.version, cache, runner)
        except SglangSourceError as exc:
            trees.append(Tree(target.label, error=str(exc)))
            continue
        trees.append(Tree(target.label, srt))
    return trees
