"""`--commits A..B`: the trees of a checkout's history, and at which commit each verdict changed.

The protocol files of each commit are read with git (no checkout of the work tree) and
written below `<cache>/commits/<sha>/sglang/srt/`, so that the release's predicate is loaded
from a file like any other tree's and a trace command can point at it. The first tree is the
range's base A (what the range changes), then every commit of A..B that touched a protocol
file, oldest first. Each commit's verdicts are compared with the last commit that was judged:
a commit the model refuses (not modelled) is listed as such and skipped.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from prefetch_check.explorer.result import NOT_APPLICABLE, VERIFIED
from prefetch_check.sglang.checks import CHECKED, ReleaseCheck
from prefetch_check.sglang.trees import Tree
from prefetch_check.sglang.git import commits_touching, files_at, resolve

FOLDER = "commits"
MARK = "FILES.txt"


def commit_trees(checkout: Path, revision_range: str, cache: Path) -> list[Tree]:
    base = revision_range.split("..", 1)[0].rstrip(".")
    commits = [resolve(checkout, base)] + commits_touching(checkout, revision_range)
    trees = []
    for i, (sha, subject) in enumerate(commits):
        label = f"{sha[:10]} {subject}" + (" (base)" if i == 0 else "")  # the whole subject: never cut mid-word
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
    """A verdict of the release's own predicate that differs from the last judged commit's, or a
    commit that was not judged (refused: not modelled, not read, ...) and so skipped."""

    what: str  # a property name, or REFUSED
    before: str  # the verdict at the last judged commit ("-": none, the property or the commit)
    after: str  # the verdict here; for a refused commit its status
    at: str  # the label of the commit: sha10 and its whole subject
    why: str = ""  # for a refused commit: why it got no verdicts

    def describe(self) -> str:
        if self.what == REFUSED:
            return f"{self.at}: {self.after}, skipped (later commits are compared with the last one judged): {self.why}"
        return f"{self.what}: {self.before} -> {self.after} at {self.at}"

    def as_json(self) -> dict:
        out = {"what": self.what, "before": self.before, "after": self.after, "at": self.at}
        if self.what == REFUSED:
            out["why"] = self.why
        return out


REFUSED = "refused"


def changes(rows: list[ReleaseCheck]) -> list[Change]:
    """Every verdict of the release's own predicate that changed, each commit compared with the last
    one that was judged; a commit without verdicts is listed as refused and skipped, so a regression
    after it is still found. Where the commits before the first judged one were all refused, that
    one's failing verdicts are listed (there is nothing to compare them with)."""
    out, previous = [], None
    for i, row in enumerate(rows):
        if row.status != CHECKED:
            out.append(Change(REFUSED, "", row.status, row.label, row.note))
            continue
        current = {p: v.verdict for p, v in row.verdicts("own").items()}
        if previous is None:
            if i > 0:
                out += [Change(p, "-", v, row.label) for p, v in current.items() if v not in (VERIFIED, NOT_APPLICABLE)]
        else:
            for what in dict.fromkeys([*previous, *current]):
                before, after = previous.get(what, "-"), current.get(what, "-")
                if before != after:
                    out.append(Change(what, before, after, row.label))
        previous = current
    return out
