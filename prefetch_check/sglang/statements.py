"""The statements of a piece of code as coverage.py counts them, read with `ast`.

Why its own module: the coverage of the prefetch path (coverage_report.py) and the statements
an edit changed (changed.py) must count the same statements, and both must count them as the
tracer in the executor's child reports them (coverage.py, model/code/coverage_tracer.py). A
statement is counted once, at its first line; each decorator of a definition is a statement of
its own; an `except` clause and a `case` clause are statements; a docstring, `global` and
`nonlocal` are not. The tracer reports the raw lines the interpreter ran, which for a statement spread over
several lines may be any of them: `span` is the lines that count for it (for a compound
statement its header only, up to its body).
"""

from __future__ import annotations

import ast
import weakref
from collections import deque
from dataclasses import dataclass
from typing import Iterable, Iterator, Optional

DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)
SCOPES = DEFS + (ast.ClassDef,)


@dataclass(frozen=True)
class Statement:
    """One counted statement: its first line, the lines that count for it, its kind (the node's
    class name, "except" or "case"), and the chain of what encloses it inside the piece, innermost
    first: (kind, first line, name) of each compound statement, clause and definition."""

    line: int
    span: tuple[int, int]
    kind: str
    enclosing: tuple[tuple[str, int, str], ...] = ()

    def covers(self, lines: set[int]) -> bool:
        """Whether any of its lines is among the raw lines the tracer reported."""
        first, last = self.span
        return any(n in lines for n in range(first, last + 1))


def is_docstring(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str)


def body_of(node: ast.AST) -> list[ast.stmt]:
    """A definition's (or a module's) body without its docstring."""
    body = list(getattr(node, "body", []))
    if isinstance(node, SCOPES + (ast.Module,)) and body and is_docstring(body[0]):
        body = body[1:]
    return body


def first_line(node: ast.AST) -> int:
    decorators = getattr(node, "decorator_list", None) or []
    return min([node.lineno] + [d.lineno for d in decorators])


def _header_end(node: ast.AST, first: int) -> int:
    """The last line of a compound statement's header: the line before its body (or the line its
    body starts on, for a one-line `if x: return`)."""
    body = getattr(node, "body", None)
    if not body:
        return max(first, getattr(node, "end_lineno", first) or first)
    return max(first, first_line(body[0]) - 1)


def _clauses(node: ast.AST) -> Iterator[tuple[str, ast.AST, list[ast.stmt]]]:
    """The statement blocks of a compound statement: (clause kind, clause node, its statements)."""
    if isinstance(node, SCOPES):
        yield "body", node, body_of(node)
        return
    for name in ("body", "orelse", "finalbody"):
        block = getattr(node, name, None)
        if block:
            yield name, node, block
    for handler in getattr(node, "handlers", None) or []:
        yield "except", handler, handler.body
    for case in getattr(node, "cases", None) or []:
        yield "case", case, case.body


def statements(stmts: Iterable[ast.stmt], enclosing: tuple = ()) -> Iterator[Statement]:
    """Every counted statement of a block, nested blocks and definitions included, in order."""
    for stmt in stmts:
        if isinstance(stmt, (ast.Global, ast.Nonlocal)):
            continue
        for decorator in getattr(stmt, "decorator_list", None) or []:
            yield Statement(decorator.lineno, (decorator.lineno, decorator.end_lineno or decorator.lineno),
                            "decorator", enclosing)
        first = stmt.lineno
        compound = any(True for _ in _clauses(stmt))
        last = _header_end(stmt, first) if compound else (stmt.end_lineno or first)
        yield Statement(first, (first, last), type(stmt).__name__, enclosing)
        here = (type(stmt).__name__, first, getattr(stmt, "name", ""))
        for kind, clause, block in _clauses(stmt):
            if kind in ("except", "case"):
                line = clause.lineno if kind == "except" else clause.pattern.lineno
                yield Statement(line, (line, max(line, first_line(block[0]) - 1)), kind, (here,) + enclosing)
                yield from statements(block, ((kind, line, ""), here) + enclosing)
            else:
                yield from statements(block, ((f"{here[0]}.{kind}", here[1], here[2]),) + enclosing)


def own_statements(node: ast.AST) -> list[Statement]:
    """The statements inside a definition (its body, nested definitions included); for any other
    statement, the statement itself and what it holds."""
    if isinstance(node, SCOPES):
        return list(statements(body_of(node), ((type(node).__name__ + ".body", first_line(node), node.name),)))
    return list(statements([node]))


def find(module: ast.Module, line: int, name: str = "") -> Optional[ast.AST]:
    """The statement that starts at `line` (a definition at its `def`/`class` line), named `name`
    when given: how a piece of the path (path_code.PathFunction: file and line) is found again."""
    for node in _by_line(module).get(line, ()):
        if not name or getattr(node, "name", None) == name:
            return node
    return None


_LINES: "weakref.WeakKeyDictionary[ast.Module, dict[int, list[ast.stmt]]]" = weakref.WeakKeyDictionary()


def _by_line(module: ast.Module) -> dict[int, list[ast.stmt]]:
    """A module's statements by first line, in walk order, built once per parsed module (a memo of
    a pure function, dropped with the module): the floor and the coverage report find thousands of
    pieces in one module, and a walk each took seconds."""
    index = _LINES.get(module)
    if index is None:
        index = {}
        todo = deque([module])  # ast.walk's order, without descending into expressions (no statements there)
        while todo:
            node = todo.popleft()
            for child in ast.iter_child_nodes(node):
                if isinstance(child, (ast.stmt, ast.excepthandler, ast.match_case)):
                    todo.append(child)
                    if isinstance(child, ast.stmt):
                        index.setdefault(child.lineno, []).append(child)
        _LINES[module] = index
    return index


def entry_line(node: ast.AST) -> Optional[int]:
    """The first statement a definition runs when it is entered (after its docstring)."""
    body = body_of(node)
    return first_line(body[0]) if body else None
