"""Small `ast` readers of an SGLang protocol file: its classes and methods by name, calls and
attributes by name, and evidence (file, line, what was seen). Nothing is imported or executed.

Why a module of its own: the shape detector (detect.py) and the release records
(release_record.py) look for the same things the same way.
"""

from __future__ import annotations

import ast
from typing import Mapping, Optional

from prefetch_check.sglang.shape import Evidence


class SourceFile:
    """One parsed file: classes and functions by name, source lines for the evidence."""

    def __init__(self, rel: str, text: str):
        self.rel = rel
        self.lines = text.splitlines()
        self.module = ast.parse(text)
        self.classes = {n.name: n for n in self.module.body if isinstance(n, ast.ClassDef)}
        self.functions = {n.name: n for n in self.module.body if isinstance(n, ast.FunctionDef)}

    def method(self, cls: str, name: str) -> Optional[ast.FunctionDef]:
        node = self.classes.get(cls)
        if node is None:
            return None
        found = [n for n in node.body if isinstance(n, ast.FunctionDef) and n.name == name]
        return found[-1] if found else None

    def methods(self, cls: str) -> dict[str, ast.FunctionDef]:
        node = self.classes.get(cls)
        return {} if node is None else {n.name: n for n in node.body if isinstance(n, ast.FunctionDef)}

    def ev(self, node: ast.AST, seen: str = "") -> Evidence:
        line = getattr(node, "lineno", 0)
        text = self.lines[line - 1].strip() if 0 < line <= len(self.lines) else ""
        return Evidence(self.rel, line, seen or text[:100])


def parse_file(files: Mapping[str, str], rel: str) -> Optional[SourceFile]:
    text = files.get(rel)
    if text is None:
        return None
    try:
        return SourceFile(rel, text)
    except SyntaxError:
        return None


def calls(node: ast.AST, name: str) -> list[ast.Call]:
    """Calls of `name(...)` or `x.name(...)` anywhere below node, in source order."""
    out = []
    for n in ast.walk(node):
        if isinstance(n, ast.Call):
            f = n.func
            called = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None
            if called == name:
                out.append(n)
    return sorted(out, key=lambda n: (n.lineno, n.col_offset))


def attrs(node: ast.AST, name: str) -> list[ast.Attribute]:
    out = [n for n in ast.walk(node) if isinstance(n, ast.Attribute) and n.attr == name]
    return sorted(out, key=lambda n: (n.lineno, n.col_offset))


def mentions(node: ast.AST, word: str) -> bool:
    return any(
        (isinstance(n, ast.Attribute) and n.attr == word) or (isinstance(n, ast.Name) and n.id == word)
        for n in ast.walk(node)
    )


def reduce_ops(node: ast.AST) -> list[tuple[str, ast.AST]]:
    """(MIN|MAX|..., node) for every `ReduceOp.X` named below node."""
    out = [(n.attr, n) for n in ast.walk(node)
           if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Attribute) and n.value.attr == "ReduceOp"]
    return sorted(out, key=lambda p: p[1].lineno)


def policy_branch(node: ast.AST, target: ast.AST) -> Optional[str]:
    """The policy string of the innermost `if ... prefetch_stop_policy == "X"` holding target."""
    found = None
    for n in ast.walk(node):
        if isinstance(n, ast.If) and isinstance(n.test, ast.Compare) and mentions(n.test, "prefetch_stop_policy"):
            consts = [c.value for c in ast.walk(n.test) if isinstance(c, ast.Constant) and isinstance(c.value, str)]
            if consts and any(target is m for s in n.body for m in ast.walk(s)):
                found = consts[0]
    return found

def call_name(call: ast.Call) -> str:
    f = call.func
    return f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
