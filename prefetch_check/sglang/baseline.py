"""`--baseline SPEC|REPORT.json`: what a tree's verdicts are against a tree it grew from.

A CI job on a fork of SGLang must fail on what a change brings, not on what upstream already
had: the release the fork branched from violates properties of its own. The baseline is one
tree: a release or a path (checked in the same run, like any SPEC) or an earlier `--json`
report of this command that holds one checked tree. Per property of the release's own
predicate, a checked tree's verdict is then

- new: it fails (VIOLATED or BOUNDED) and the baseline does not have that verdict; only
  these make the run exit 1;
- also in the baseline: it fails with the verdict the baseline has;
- fixed since the baseline: it holds (VERIFIED or not applicable) where the baseline failed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from prefetch_check.explorer.result import NOT_APPLICABLE, VERIFIED
from prefetch_check.scenario.errors import InputError
from prefetch_check.sglang.checks import CHECKED, CODE_PREFIX, ReleaseCheck
from prefetch_check.sglang.code_checks import NOT_JUDGED

NEW, ALSO, FIXED = "new", "also in the baseline", "fixed since the baseline"
REPORT_TOOL = "prefetch-check sglang"
HOLDS = (VERIFIED, NOT_APPLICABLE, NOT_JUDGED)


@dataclass(frozen=True)
class Baseline:
    """The baseline tree's label and, per property, the verdict of its own predicate."""

    label: str
    verdicts: Mapping[str, str]

    def mark(self, prop: str, verdict: str) -> str:
        """NEW, ALSO, FIXED for a failing or recovered verdict; '' where nothing changed for the better
        or worse (both hold)."""
        before = self.verdicts.get(prop)
        if verdict not in HOLDS:
            return ALSO if before == verdict else NEW
        return FIXED if before is not None and before not in HOLDS else ""

    def is_new(self, prop: str, verdict: str) -> bool:
        return self.mark(prop, verdict) == NEW

    def marks(self, row: ReleaseCheck) -> dict[str, str]:
        """The mark of each property of a checked row."""
        return {p: self.mark(p, v.verdict) for p, v in row.verdicts("own").items()}

    def code_marks(self, row: ReleaseCheck) -> dict[str, str]:
        """The mark of each property of a row's code verdicts (the baseline's code verdicts)."""
        return {p: self.mark(CODE_PREFIX + p, v.verdict) for p, v in row.code.verdicts().items()}

    def as_json(self) -> dict:
        return {"label": self.label, "verdicts": dict(self.verdicts)}


def is_report(text: str) -> bool:
    """A `--baseline` that names a JSON report rather than a SPEC."""
    return text.endswith(".json") and Path(text).is_file()


def from_row(row: ReleaseCheck, given: str) -> Baseline:
    """The baseline of a tree checked in this run (its model verdicts, and its code's where the
    executor ran it); a tree without model verdicts cannot be one."""
    if row.status != CHECKED:
        why = f"{row.status}: {row.note}" if row.note else row.status
        raise InputError(f"--baseline {given}: {row.label} got no verdicts ({why}); a baseline must be a tree "
                         "the model judges")
    verdicts = {p: v.verdict for p, v in row.verdicts("own").items()}
    verdicts.update({CODE_PREFIX + p: v.verdict for p, v in row.code.verdicts().items()})
    return Baseline(row.label, verdicts)


def from_report(path: str) -> Baseline:
    """The one checked tree of an earlier `prefetch-check sglang --json` report."""
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise InputError(f"--baseline {path}: not a readable JSON report ({exc})") from None
    if not isinstance(doc, dict) or doc.get("tool") != REPORT_TOOL or not isinstance(doc.get("releases"), list):
        raise InputError(f"--baseline {path}: not a report of `{REPORT_TOOL} --json` (no \"tool\": \"{REPORT_TOOL}\" "
                         "with its \"releases\")")
    checked = [r for r in doc["releases"] if isinstance(r, dict) and r.get("status") == CHECKED]
    if len(checked) != 1:
        labels = ", ".join(str(r.get("release")) for r in checked) or "none"
        raise InputError(f"--baseline {path}: the report must hold exactly one checked tree to compare with, it holds "
                         f"{len(checked)} ({labels})")
    [row] = checked
    try:
        verdicts = {p: v["release"]["verdict"] for p, v in row["properties"].items()}
        verdicts.update({CODE_PREFIX + p: v["verdict"]
                         for p, v in (row.get("code") or {}).get("properties", {}).items()})
    except (KeyError, TypeError, AttributeError):
        raise InputError(f"--baseline {path}: the checked tree {row.get('release')} has no verdicts per property") from None
    return Baseline(f"{row.get('release')} (from {path})", verdicts)
