"""What a source predicate may contain, checked on its syntax tree before anything of it runs.

A predicate read from a contributor's file is run by our own interpreter
(`model/source/interpreter.py`), never by Python's `exec`. This pass refuses, with the
line, everything that interpreter does not understand, so that a refusal comes before the
first step and names the construct: an import, a lambda, a comprehension or generator, a
nested function or class, `global`, `with`, `del`, `match`, an assignment expression,
`yield`/`await`, the `@` operator, a starred assignment target, and any name or attribute
spelled like a dunder (`__class__`, `__globals__`, `__builtins__`, ...), also as the
constant name given to `getattr`/`hasattr`. Decorators and annotations are checked the
same way but never evaluated.

Deeply nested syntax is refused too (MAX_NESTING), so that neither this pass nor the
interpreter recurses without bound.
"""

from __future__ import annotations

import ast

from prefetch_check.model.source.interpreter import Refused

MAX_NESTING = 60  # syntax-tree levels below the function; real predicates use about 15

ALLOWED = (
    # statements
    ast.FunctionDef, ast.Return, ast.Assign, ast.AugAssign, ast.AnnAssign, ast.For, ast.While, ast.If,
    ast.Raise, ast.Try, ast.Assert, ast.Expr, ast.Pass, ast.Break, ast.Continue,
    # expressions
    ast.BoolOp, ast.BinOp, ast.UnaryOp, ast.IfExp, ast.Dict, ast.Set, ast.Call, ast.FormattedValue,
    ast.JoinedStr, ast.Constant, ast.Attribute, ast.Subscript, ast.Starred, ast.Name, ast.List, ast.Tuple,
    ast.Slice, ast.Compare,
    # parts
    ast.arguments, ast.arg, ast.keyword, ast.ExceptHandler, ast.Load, ast.Store,
    ast.And, ast.Or, ast.Add, ast.Sub, ast.Mult, ast.Div, ast.Mod, ast.Pow, ast.LShift, ast.RShift,
    ast.BitOr, ast.BitXor, ast.BitAnd, ast.FloorDiv, ast.Invert, ast.Not, ast.UAdd, ast.USub,
    ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.Is, ast.IsNot, ast.In, ast.NotIn,
)

# the words for what is refused (anything else outside ALLOWED is "this construct")
WHAT = {
    ast.Import: "an import", ast.ImportFrom: "an import", ast.Lambda: "a lambda",
    ast.ListComp: "a comprehension", ast.SetComp: "a comprehension", ast.DictComp: "a comprehension",
    ast.GeneratorExp: "a generator expression", ast.Yield: "yield", ast.YieldFrom: "yield from",
    ast.Await: "await", ast.NamedExpr: "an assignment expression (:=)", ast.FunctionDef: "a nested function",
    ast.AsyncFunctionDef: "a nested function", ast.ClassDef: "a class definition", ast.Global: "a global statement",
    ast.Nonlocal: "a nonlocal statement", ast.With: "a with statement", ast.AsyncWith: "a with statement",
    ast.AsyncFor: "async for", ast.Delete: "del", ast.Match: "a match statement", ast.TryStar: "except*",
    ast.MatMult: "the @ operator", ast.Del: "del",
}

LOOPS = (ast.For, ast.While)


def is_dunder(name) -> bool:
    return isinstance(name, str) and len(name) > 4 and name.startswith("__") and name.endswith("__")


def check_syntax(fn: ast.FunctionDef) -> None:
    """Raise `Refused` (message, line) for the first construct of `fn` the interpreter does not run."""
    if is_dunder(fn.name):
        raise Refused(f"defines `{fn.name}`: names spelled like `__this__` are refused", fn.lineno)
    todo = [(fn, 0, False)]
    while todo:  # iterative: a hostile file may nest deeper than Python's recursion limit
        node, level, in_loop = todo.pop()
        line = getattr(node, "lineno", None)
        if level > MAX_NESTING:
            raise Refused(f"nests more than {MAX_NESTING} levels deep", line)
        if not isinstance(node, ALLOWED) or (isinstance(node, ast.FunctionDef) and node is not fn):
            what = WHAT.get(type(node), f"this construct ({type(node).__name__})")
            raise Refused(f"uses {what}, which the checker's sandbox does not run", line)
        _check_node(node, line, in_loop)
        body = {id(b) for b in node.body} if isinstance(node, LOOPS) else set()  # not its else branch
        for child in ast.iter_child_nodes(node):
            todo.append((child, level + 1, in_loop or id(child) in body))


def _check_node(node: ast.AST, line, in_loop: bool) -> None:
    name = None
    if isinstance(node, ast.Name):
        name = node.id
    elif isinstance(node, ast.Attribute):
        name = node.attr
        if not isinstance(node.ctx, ast.Load):
            owner = f"{node.value.id}." if isinstance(node.value, ast.Name) else "."
            raise Refused(f"assigns `{owner}{node.attr}`: a completion predicate must only read the operation and the cache", line)
    elif isinstance(node, ast.arg):
        name = node.arg
    elif isinstance(node, ast.keyword):
        name = node.arg
    elif isinstance(node, ast.ExceptHandler):
        name = node.name
    if is_dunder(name):
        raise Refused(f"uses `{name}`: names spelled like `__this__` reach Python's internals and are refused", line)
    if isinstance(node, (ast.Break, ast.Continue)) and not in_loop:
        raise Refused(f"uses `{type(node).__name__.lower()}` outside a loop", line)
    if isinstance(node, ast.Starred) and not isinstance(node.ctx, ast.Load):
        raise Refused("uses a starred assignment target (`a, *b = ...`), which the checker's sandbox does not run", line)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("getattr", "hasattr"):
        if len(node.args) >= 2 and isinstance(node.args[1], ast.Constant) and is_dunder(node.args[1].value):
            raise Refused(f"calls {node.func.id} with {node.args[1].value!r}: names spelled like `__this__` are refused", line)
