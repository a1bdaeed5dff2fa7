"""One detection row per tree: family, predicate location, unrecognised features (no verdicts yet)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from prefetch_check.model.source.detect import Shape, classify, detect_shape
from prefetch_check.sglang.errors import SglangSourceError
from prefetch_check.sglang.fetch import fetch_release
from prefetch_check.sglang.locate import read_protocol_files
from prefetch_check.sglang.pip import Runner, run_pip
from prefetch_check.sglang.spec import Target


@dataclass(frozen=True)
class Row:
    label: str
    family: str
    shape: Optional[Shape] = None
    error: Optional[str] = None  # why the tree could not be read (e.g. not cached and no network)

    @property
    def predicate(self) -> str:
        return self.shape.predicate.value or "?" if self.shape else "?"


def files_of(target: Target, cache: Path, runner: Runner = run_pip) -> dict[str, str]:
    srt = target.srt if target.srt is not None else fetch_release(target.version, cache, runner)
    return read_protocol_files(srt)


def detect_rows(targets: list[Target], cache: Path, runner: Runner = run_pip) -> list[Row]:
    """A row per target; one that cannot be read says why and the others still run."""
    rows = []
    for target in targets:
        try:
            files = files_of(target, cache, runner)
        except SglangSourceError as exc:
            rows.append(Row(target.label, "not read", error=str(exc)))
            continue
        shape = detect_shape(files)
        rows.append(Row(target.label, classify(shape), shape))
    return rows
