"""The fingerprint of a piece of Python code: equal for equal syntax trees, on every Python.

Why its own module: the fingerprints shipped in followed.json are made with one Python and
compared with those a user's Python makes, so the text they hash must not depend on the
interpreter (`ast.dump` does: 3.12 added `type_params`), and a test runs this file alone
under every Python at hand to show it. Standard library only.
"""

from __future__ import annotations

import ast
import hashlib


def digest(node: ast.AST) -> str:
    """The fingerprint of a piece of code: its syntax tree without docstrings or positions."""
    return hashlib.sha256(canonical(node, docstrings=False).encode()).hexdigest()[:16]


def canonical(node, docstrings: bool = True) -> str:
    """A syntax tree as text that every Python from 3.11 on writes alike: node names and their
    fields, leaving out fields that are empty (newer Pythons add some, e.g. `type_params`),
    positions and type comments; without `docstrings`, a function's or class's docstring is left
    out (a body that was only a docstring reads as `pass`), read in place: a whole file's tree is
    not copied."""
    if isinstance(node, ast.AST):
        parts = []
        for name in node._fields:
            if name in _IGNORED_FIELDS:
                continue
            value = getattr(node, name, None)
            if value is None or value == []:
                continue
            if name == "body" and not docstrings and isinstance(node, _DOCUMENTED) and _has_docstring(value):
                value = value[1:] or [ast.Pass()]
            parts.append(f"{name}={canonical(value, docstrings)}")
        return f"{type(node).__name__}({', '.join(parts)})"
    if isinstance(node, list):
        return "[" + ", ".join(canonical(v, docstrings) for v in node) + "]"
    return repr(node)


_IGNORED_FIELDS = frozenset({"type_comment", "kind"})
_DOCUMENTED = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def _has_docstring(body: list) -> bool:
    return (isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str))
