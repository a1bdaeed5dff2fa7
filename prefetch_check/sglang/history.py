"""`--commits A..B`: the trees of a checkout's history, and at which commit each verdict changed.

The protocol files of each commit are read with git (no checkout of the work tree) and
written below `<cache>/commits/<sha>/sglang/srt/`, so that the release's predicate is loaded
from a file like any other tree's and a trace command can point at it. The first tree is the
range's base A (what the range changes), then every commit of A..B that touched a protocol
file, oldest first.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from prefetch_check.sglang.checks import ReleaseCheck
from prefetch_check.sglang.trees import Tree
from prefetch_check.sglang.git import commits_touching, files_at, resolve

FOLDER = "commits"
MARK = "FILES.txt"


def commit_trees(checkout: Path, revision_range: str, cache: Path) -> list[Tree]:
    base = revision_range.split("..", 1)[0].rstrip(".")
    commits = [resolve(checkout, base)] + commits_touching(checkout, revision_range)
    trees = []
    for i, (sha, subject) in enumerate(commits):
        label = f"{sha[:10]} {subject[:40]}" + (" (base)" if i == 0 else "")
        trees.append(Tree(label, materialize(checkout, sha, cache)))
    return trees


def materialize(checkout: Path, sha: str, cache: Path) -> Path:
    """The sglang/srt folder holding the protocol files of commit `sha` (written once, then reused)."""
    srt = cache / FOLDER / sha / "sglang" / "srt"
    if (srt / MARK).is_file():
        return srt
    files = files_at(checkout, sha)
    for rel, text in files.items():
        target = srt / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    srt.mkdir(parents=True, exist_ok=True)
    (srt / MARK).write_text("\n".join(sorted(files)) + "\n")
    return srt


@dataclass(frozen=True)
class Change:
    """A verdict (or the row's status) that differs from the previous commit's."""

    what: str  # a property name, or "status"
    before: str
    after: str
    at: str  # the label of the commit where it changed

    def describe(self) -> str:
        return f"{self.what}: {self.before} -> {self.after} at {self.at}"

    def as_json(self) -> dict:
        return {"what": self.what, "before": self.before, "after": self.after, "at": self.at}


def changes(rows: list[ReleaseCheck]) -> list[Change]:
    """Every status or verdict of the release's own predicate that changed from one tree to the next."""
    out, previous = [], None
    for row in rows:
        current = {"status": row.status, **{p: v.verdict for p, v in row.verdicts("own").items()}}
        if previous is not None:
            for what in dict.fromkeys([*previous, *current]):
                before, after = previous.get(what, "-"), current.get(what, "-")
                if before != after:
                    out.append(Change(what, before, after, row.label))
        previous = current
    return out
