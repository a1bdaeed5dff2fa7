"""The fingerprint of a piece of Python code: equal for equal syntax trees, on every Python.

Why its own module: the fingerprints shipped in followed.json are made with one Python and
compared with those a user's Python makes, so the text they hash must not depend on the
interpreter (`ast.dump` does: 3.12 added `type_params`), and a test runs this file alone
under every Python at hand to show it. Standard library only.
"""

from __future__ import annotations

import ast
import hashlib
from typing import Optional


def digest(node: ast.AST, memo: Optional[dict] = None) -> str:
    """The fingerprint of a piece of code: its syntax tree without docstrings or positions.
    `memo` (kept by the caller for one computation over unchanged trees) holds the canonical
    text of each definition already written: a file fingerprinted whole repeats its functions'."""
    return hashlib.sha256(canonical(node, docstrings=False, memo=memo).encode()).hexdigest()[:16]


def canonical(node, docstrings: bool = True, memo: Optional[dict] = None) -> str:
    """A syntax tree as text that every Python from 3.11 on writes alike: node names and their
    fields, leaving out fields that are empty (newer Pythons add some, e.g. `type_params`),
    positions and type comments; without `docstrings`, a function's or class's docstring is left
    out (a body that was only a docstring reads as `pass`), read in place: a whole file's tree is
    not copied. `memo`: id(definition), docstrings -> (definition, its text), the node kept so
    its id is not reused."""
    if isinstance(node, ast.AST):
        if memo is not None and isinstance(node, _DOCUMENTED):
            key = (id(node), docstrings)
            hit = memo.get(key)
            if hit is None:
                hit = memo[key] = (node, _node_text(node, docstrings, memo))
            return hit[1]
        return _node_text(node, docstrings, memo)
    if isinstance(node, list):
        return "[" + ", ".join(canonical(v, docstrings, memo) for v in node) + "]"
    return repr(node)


def _node_text(node: ast.AST, docstrings: bool, memo: Optional[dict]) -> str:
    parts = []
    strip = not docstrings and isinstance(node, _DOCUMENTED)
    for name in _fields(type(node)):
        value = getattr(node, name, None)
        if value is None:
            continue
        if type(value) is list:
            if not value:
                continue
            if strip and name == "body" and _has_docstring(value):
                value = value[1:] or [ast.Pass()]
            text = "[" + ", ".join([canonical(v, docstrings, memo) for v in value]) + "]"
        elif isinstance(value, ast.AST):
            text = canonical(value, docstrings, memo)
        else:
            text = repr(value)
        parts.append(f"{name}={text}")
    return f"{type(node).__name__}({', '.join(parts)})"


def _fields(cls: type) -> tuple[str, ...]:
    """A node type's fields but the ignored ones (a handful of types: kept per type)."""
    out = _FIELDS.get(cls)
    if out is None:
        out = _FIELDS[cls] = tuple(name for name in cls._fields if name not in _IGNORED_FIELDS)
    return out


_IGNORED_FIELDS = frozenset({"type_comment", "kind"})
_DOCUMENTED = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_FIELDS: dict[type, tuple[str, ...]] = {}  # bounded by the number of node types


def _has_docstring(body: list) -> bool:
    return (isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str))
