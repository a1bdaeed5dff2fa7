"""The statements of a tree's prefetch path that differ from the nearest followed release, by `ast`.

Why: the code engine answers for the code it ran, not for the code it did not. For a tree whose
prefetch path is not a followed release's (an edit, a fork, a checkout between releases), the
statements the edit touched are found here, so that the executor's child can count the
schedules that ran each of them (model/code/coverage_tracer.py) and a statement no case ran is
refused by name (coverage_report.py) instead of answered with the release's verdicts.

Piece by piece of the path (path_code.PathFunction: ident, file, line), against the same piece of
the followed release nearest the tree's path (followed.Followed.nearest): a piece whose fingerprint
is the release's is unchanged; otherwise its statements are aligned block by block (difflib over
each statement's syntax tree without positions, code_digest.canonical). A statement the release
does not have is "inserted"; one whose own part (a compound statement's header, without the
blocks it holds) differs is "modified", and the blocks it holds are aligned in turn; a changed
signature counts at the definition's first statement (entering it runs it); a statement the
release has and the tree has not counts at its neighbour in the same block. A piece the release
does not have counts whole. Docstrings, comments and formatting never count (the fingerprint
ignores them too). Statements are counted as coverage.py counts them (statements.py).
"""

from __future__ import annotations

import ast
import copy
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Mapping, Optional

from prefetch_check.sglang.code_digest import canonical
from prefetch_check.sglang.errors import SglangSourceError
from prefetch_check.sglang.statements import DEFS, SCOPES, Statement, body_of, entry_line, find, statements

INSERTED, MODIFIED, SIGNATURE, DELETED, NEW_PIECE, UNCOMPARED = (
    "inserted", "modified", "its definition's signature changed", "next to a deleted statement",
    "in a piece the release does not have", "in a piece that differs (the release's code was not at hand)")
BLOCKS = ("body", "orelse", "finalbody")


@dataclass(frozen=True)
class ChangedStatement:
    """One statement of the tree an edit touched: where it is, the lines the tracer may report
    for it, the piece of the path it is in, how it changed, and what encloses it (Statement)."""

    file: str
    line: int
    span: tuple[int, int]
    piece: str
    kind: str
    enclosing: tuple = ()

    def where(self) -> str:
        return f"{self.file}:{self.line}"


@dataclass(frozen=True)
class Changes:
    """The changed statements of a tree against `against` (a followed release's label), or with a
    `note` why the comparison is coarser (every statement of a differing piece counts)."""

    against: str = ""
    statements: tuple[ChangedStatement, ...] = ()
    note: str = ""

    def spans(self) -> dict[str, list[list[int]]]:
        """What the executor's child counts the runs of: per file, the distinct spans."""
        out: dict[str, set[tuple[int, int]]] = {}
        for c in self.statements:
            out.setdefault(c.file, set()).add(c.span)
        return {rel: [list(span) for span in sorted(spans)] for rel, spans in sorted(out.items())}


def diff_path(tree_files: Mapping[str, str], tree_path: Mapping, release_files: Optional[Mapping[str, str]],
              release_path: Optional[Mapping], vouched: frozenset = frozenset()) -> list[ChangedStatement]:
    """The changed statements of the tree's path (ident -> PathFunction) against a release's
    (None: the release's code is not at hand, every statement of a piece counts unless its ident
    is `vouched` for: its fingerprint is the release's)."""
    trees, olds = _Parsed(tree_files), _Parsed(release_files or {})  # only the files of changed pieces
    found: dict[tuple[str, int], ChangedStatement] = {}
    for ident, piece in tree_path.items():
        old = (release_path or {}).get(ident)
        if ident in vouched or (old is not None and old.digest == piece.digest):
            continue
        module = trees.get(piece.file)
        node = _piece_node(module, piece) if module is not None else None
        if node is None:
            continue
        header_only = _header_piece(ident, tree_path)
        old_module = olds.get(old.file) if old is not None else None
        old_node = _piece_node(old_module, old) if old_module is not None else None
        marks: list[tuple[int, str]] = []
        if old_node is None:
            kind = UNCOMPARED if release_path is None else NEW_PIECE
            marks = [(s.line, kind) for s in _piece_statements(node, header_only)]
        else:
            _piece(node, old_node, header_only, marks)
        index = _index(module)
        for line, kind in marks:
            s = index.get(line) or Statement(line, (line, line), "?")
            found.setdefault((piece.file, line), ChangedStatement(piece.file, line, s.span, ident, kind, s.enclosing))
    return [found[k] for k in sorted(found)]


# ---------------------------------------------------------------- finding the pieces


class _Parsed:
    """A tree's files parsed when first asked for (a tree has hundreds, an edit changes a few);
    None for a file it lacks or cannot parse."""

    def __init__(self, files: Mapping[str, str]):
        self.files, self.modules = files, {}

    def get(self, rel: str) -> Optional[ast.Module]:
        if rel not in self.modules:
            try:
                self.modules[rel] = ast.parse(self.files[rel]) if rel in self.files else None
            except SyntaxError:
                self.modules[rel] = None
        return self.modules[rel]


def _piece_node(module: ast.Module, piece) -> Optional[ast.AST]:
    """The statement a piece of the path is: found again by its file and line (and its name)."""
    if getattr(piece, "whole", False):  # a file the path takes whole (path_code's whole-file rule)
        return module
    name = piece.name
    if name.startswith("<module>."):
        return find(module, piece.line)
    return find(module, piece.line, name.rpartition(".")[2])


def _header_piece(ident: str, path: Mapping) -> bool:
    """A class whose methods are pieces of their own (path_code takes only its header)."""
    return any(other.startswith(ident + ".") for other in path)


def _piece_statements(node: ast.AST, header_only: bool) -> list[Statement]:
    if isinstance(node, (ast.Module,) + DEFS):
        return list(statements(body_of(node)))
    if isinstance(node, ast.ClassDef):
        body = [s for s in body_of(node) if not (header_only and isinstance(s, DEFS))]
        return list(statements([_without_body(node)])) + list(statements(body))
    return list(statements([node]))


def _index(module: ast.Module) -> dict[int, Statement]:
    """Every counted statement of a file by its first line, with what encloses it."""
    return {s.line: s for s in statements(body_of(module))}


# ---------------------------------------------------------------- aligning statements


def _header(node: ast.AST) -> str:
    """A statement without the blocks it holds (and a definition without its docstring)."""
    return canonical(_without_body(node))


def _without_body(node: ast.AST) -> ast.AST:
    out = copy.copy(node)
    for name in BLOCKS + ("handlers", "cases"):
        if getattr(out, name, None):
            setattr(out, name, [])
    return out


def _piece(new: ast.AST, old: ast.AST, header_only: bool, marks: list) -> None:
    if isinstance(new, ast.Module) and isinstance(old, ast.Module):  # a whole file: its statements in order
        _block(new.body, old.body, marks, 1)
    elif isinstance(new, DEFS) and isinstance(old, DEFS):
        _definition(new, old, marks)
    elif isinstance(new, ast.ClassDef) and isinstance(old, ast.ClassDef):
        if _header(new) != _header(old):
            marks.append((new.lineno, MODIFIED))
        _class_body(new, old, header_only, marks)
    else:
        _block([new], [old], marks, new.lineno)


def _definition(new: ast.AST, old: ast.AST, marks: list) -> None:
    """A function against the release's: its signature (at its first statement), then its body."""
    entry = entry_line(new)
    if _header(new) != _header(old) and entry is not None:
        marks.append((entry, SIGNATURE))
    _block(body_of(new), body_of(old), marks, entry or new.lineno)


def _class_body(new: ast.ClassDef, old: ast.ClassDef, header_only: bool, marks: list) -> None:
    """Methods by name, the other statements of the class body in order."""
    olds: dict[str, list] = {}  # by name, in order: a property's getter and setter share one
    for stmt in body_of(old):
        if isinstance(stmt, DEFS):
            olds.setdefault(stmt.name, []).append(stmt)
    if not header_only:
        seen: dict[str, int] = {}
        for stmt in body_of(new):
            if isinstance(stmt, DEFS):
                k = seen[stmt.name] = seen.get(stmt.name, -1) + 1
                if k < len(olds.get(stmt.name, ())):
                    _definition(stmt, olds[stmt.name][k], marks)
                else:
                    marks += [(s.line, INSERTED) for s in statements([stmt])]
    rest_new = [s for s in body_of(new) if not isinstance(s, DEFS)]
    rest_old = [s for s in body_of(old) if not isinstance(s, DEFS)]
    _block(rest_new, rest_old, marks, new.lineno)


def _block(new: list, old: list, marks: list, anchor: int) -> None:
    """Align two blocks of statements: equal runs are unchanged; in each differing run, statements
    are paired by equal header, then by kind, in order; the rest are inserted or deleted (a run
    that lost statements and gained others counts at the ones it gained)."""
    from difflib import SequenceMatcher

    a, b = [canonical(s) for s in new], [canonical(s) for s in old]
    for tag, i1, i2, j1, j2 in SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        pairs = _pairs(new[i1:i2], old[j1:j2])
        paired_new = {i for i, _ in pairs}
        for i, j in pairs:
            _statement(new[i1 + i], old[j1 + j], marks)
        for i in range(i2 - i1):
            if i not in paired_new:
                marks += [(s.line, INSERTED) for s in statements([new[i1 + i]])]
        if j2 - j1 > len(pairs) and len(paired_new) == i2 - i1:
            # a statement of the release this block lost (and nothing new in its place): at its neighbour
            neighbour = new[i2] if i2 < len(new) else (new[i2 - 1] if new else None)
            marks.append((neighbour.lineno if neighbour is not None else anchor, DELETED))


def _pairs(new: list, old: list) -> list[tuple[int, int]]:
    """Pairs (i, j), both increasing: equal headers first, then statements of the same kind."""
    pairs: list[tuple[int, int]] = []
    for key in (_header, lambda s: type(s).__name__):
        taken_new, taken_old = {i for i, _ in pairs}, {j for _, j in pairs}
        j = 0
        for i, stmt in enumerate(new):
            if i in taken_new:
                continue
            for k in range(j, len(old)):
                if k not in taken_old and key(old[k]) == key(stmt) and _monotone(pairs, i, k):
                    pairs.append((i, k))
                    taken_old.add(k)
                    j = k + 1
                    break
    return sorted(pairs)


def _monotone(pairs: list[tuple[int, int]], i: int, k: int) -> bool:
    return all((i < pi) == (k < pk) for pi, pk in pairs)


def _statement(new: ast.stmt, old: ast.stmt, marks: list) -> None:
    """Two paired statements: the header, then each block the statement holds."""
    if type(new) is not type(old):
        marks += [(s.line, INSERTED) for s in statements([new])]
        return
    if isinstance(new, DEFS):  # a nested function: its signature and body, like a piece
        if [canonical(d) for d in new.decorator_list] != [canonical(d) for d in old.decorator_list]:
            marks.append((new.lineno, MODIFIED))
        _definition(new, old, marks)
        return
    if isinstance(new, ast.ClassDef):
        if _header(new) != _header(old):
            marks.append((new.lineno, MODIFIED))
        _class_body(new, old, False, marks)
        return
    if _header(new) != _header(old):
        marks.append((new.lineno, MODIFIED))
    for name in BLOCKS:
        block_new, block_old = getattr(new, name, None) or [], getattr(old, name, None) or []
        if block_new or block_old:
            _block(block_new, block_old, marks, new.lineno)
    for field_name, line_of in (("handlers", lambda h: h.lineno), ("cases", lambda c: c.pattern.lineno)):
        clauses_new, clauses_old = getattr(new, field_name, None) or [], getattr(old, field_name, None) or []
        for k, clause in enumerate(clauses_new):
            if k >= len(clauses_old):
                marks.append((line_of(clause), INSERTED))
                marks += [(s.line, INSERTED) for s in statements(clause.body)]
                continue
            if canonical(_without_body(clause)) != canonical(_without_body(clauses_old[k])):
                marks.append((line_of(clause), MODIFIED))
            _block(clause.body, clauses_old[k].body, marks, line_of(clause))
        if len(clauses_old) > len(clauses_new):
            marks.append((line_of(clauses_new[-1]) if clauses_new else new.lineno, DELETED))


# ---------------------------------------------------------------- against the nearest release


def release_of(label: str) -> tuple[str, Optional[str]]:
    """(version, cache class) of a followed release's label: "0.5.19 (HiRadixCache)" judges that class."""
    version, _, rest = label.partition(" ")
    return version, (rest.strip("()") or None)


def nearest_changes(files: Mapping[str, str], path: Mapping, follows, roots: Iterable[Path],
                    fetch=None) -> Optional[Changes]:
    """The changed statements of a tree against the followed release nearest its path; None where
    its whole path is a followed release's. `roots`: release caches to look in, the first one is
    where a release cached nowhere is fetched (`fetch(version, root)`, fetch.fetch_release)."""
    from prefetch_check.sglang.cache import cached_versions, release_dir
    from prefetch_check.sglang.fetch import fetch_release
    from prefetch_check.sglang.followed import tree_path
    from prefetch_check.sglang.locate import read_protocol_files

    if not path or follows.equal(path):
        return None
    label = follows.nearest(path)
    if label is None:
        return Changes("", tuple(diff_path(files, path, None, None)),
                       "no followed release shares a piece of its path: every statement of the path counts")
    version, cache_class = release_of(label)
    roots = [Path(r) for r in roots]
    where = next((r for r in roots if version in cached_versions(r)), None)
    try:
        srt_old = (release_dir(where, version) / "sglang" / "srt" if where is not None
                   else (fetch or fetch_release)(version, roots[0]))
    except SglangSourceError as exc:
        vouched = frozenset(ident for ident, piece in path.items()
                            if label in follows.digests.get(ident, {}).get(piece.digest, ()))
        return Changes(label, tuple(diff_path(files, path, None, None, vouched)),
                       f"{label} cannot be read ({str(exc).splitlines()[0]}): every statement of a piece that "
                       "differs from it counts")
    old_files = read_protocol_files(srt_old)
    old_path = tree_path(old_files, cache_class)
    return Changes(label, tuple(diff_path(files, path, old_files, old_path)))
