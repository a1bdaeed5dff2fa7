"""Reading the prefetch path's files at any commit of a checkout with git, without touching the
work tree.

`commits_touching(checkout, "A..B")` lists (oldest first) the commits of the range that changed
one of the protocol files or a file the prefetch path reaches at A or at B; `files_at(checkout,
commit)` reads the files the path needs at that commit with `git show COMMIT:path`.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from prefetch_check.sglang.errors import SglangSourceError
from prefetch_check.sglang.locate import PROTOCOL_FILES, SrtFiles, find_srt, read_path_files


def _git(repo: Path, *args: str) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True)
    except FileNotFoundError:
        raise SglangSourceError("--commits needs git, and git is not installed") from None


def _prefix(checkout: Path) -> tuple[Path, str]:
    """(repository top, path of sglang/srt/ inside it, with a trailing slash)."""
    srt = find_srt(checkout)
    top = _git(srt, "rev-parse", "--show-toplevel")
    if top.returncode != 0:
        raise SglangSourceError(f"{checkout}: not a git checkout ({top.stderr.strip() or 'git rev-parse failed'}); "
                                "--commits needs the history")
    root = Path(top.stdout.strip())
    return root, srt.relative_to(root.resolve()).as_posix() + "/"


def commits_touching(checkout: Path, revision_range: str) -> list[tuple[str, str]]:
    """(sha, subject) of every commit in A..B that changed a protocol file, oldest first."""
    if ".." not in revision_range or revision_range.startswith("..") or revision_range.endswith(".."):
        raise SglangSourceError(f"--commits {revision_range!r}: expected a range A..B (e.g. v0.5.19..main)")
    root, prefix = _prefix(checkout)
    start, _, end = revision_range.partition("..")
    watched = set(PROTOCOL_FILES)
    for revision in (start, end):
        watched |= set(files_at(checkout, revision))
    result = _git(root, "log", "--reverse", "--format=%H%x09%s", revision_range, "--",
                  *(prefix + rel for rel in sorted(watched)))
    if result.returncode != 0:
        raise SglangSourceError(f"--commits {revision_range!r}: git log failed: {result.stderr.strip()}")
    return [tuple(line.split("\t", 1)) for line in result.stdout.splitlines() if line.strip()]


def resolve(checkout: Path, revision: str) -> tuple[str, str]:
    """(sha, subject) of one revision of the checkout (e.g. the A of A..B)."""
    root, _ = _prefix(checkout)
    result = _git(root, "log", "-1", "--format=%H%x09%s", f"{revision}^{{commit}}", "--")
    if result.returncode != 0 or not result.stdout.strip():
        raise SglangSourceError(f"{revision!r}: not a commit of {checkout} ({result.stderr.strip() or 'git log failed'})")
    sha, _, subject = result.stdout.strip().partition("\t")
    return sha, subject


def files_at(checkout: Path, commit: str) -> dict[str, str]:
    """{path below sglang/srt: text} of the protocol files and the files the prefetch path reaches,
    as they are at `commit` (absent ones left out)."""
    root, prefix = _prefix(checkout)
    listed = _git(root, "ls-tree", "-r", "--name-only", commit, "--", prefix)
    names = [line[len(prefix):] for line in listed.stdout.splitlines()
             if line.startswith(prefix) and line.endswith(".py")] if listed.returncode == 0 else []

    def show(rel: str):
        shown = _git(root, "show", f"{commit}:{prefix}{rel}")
        return shown.stdout if shown.returncode == 0 else None

    return read_path_files(SrtFiles(names, show))
