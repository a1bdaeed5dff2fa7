"""What a receiver in the prefetch path is, from static evidence only, so that `self.x.m(...)`
reaches the `m` of the class `x` holds.

Why: the path reaches much of its code through attributes (`self.buffer_pipeline.stage(...)`,
`cc.mem_pool_host.free(...)`, `self.storage_prefetch_retries.poll_miss(...)`), and a path
followed by method name only among a few classes misses it. The evidence read here:
`self.x = Cls(...)`, `self.x: Cls`, class-level `x: Cls` (dataclass fields), parameters and
returns annotated with a class, `x = Cls(...)` locals, `Optional[...]`/`Union[...]`/`X | None`
and string annotations; a value built by a constructor is exactly that class, one typed by an
annotation is that class or any subclass in srt. A value with no evidence is unknown, and the
caller (path_code.py) answers an unknown receiver conservatively. Nothing is imported or run.
"""

from __future__ import annotations

import ast
import builtins
from dataclasses import dataclass
from typing import Iterable, Mapping, Optional

from prefetch_check.sglang.srt_index import Srt, Sym
from prefetch_check.sglang.tree_memo import walk

_BUILTIN_NAMES = frozenset(dir(builtins)) - {"__doc__", "__name__"}
_UNION = ("Optional", "Union", "Annotated", "ClassVar", "Final")


@dataclass(frozen=True)
class Ty:
    """One thing a value may be: kind 'inst' (of a class; `exact`: not a subclass), 'cls' (the
    class object), 'module', 'func', or 'external' (outside sglang.srt: a builtin, torch, ...)."""

    kind: str
    sym: Sym
    exact: bool = False


EXTERNAL = Ty("external", Sym("external", "builtins"))


@dataclass(frozen=True)
class Types:
    """What an expression may be, and whether it may also be something the evidence does not say."""

    known: frozenset = frozenset()
    unknown: bool = False

    def __or__(self, other: "Types") -> "Types":
        return Types(self.known | other.known, self.unknown or other.unknown)


UNKNOWN = Types(frozenset(), True)
NOTHING = Types()


def _of(*tys: Ty) -> Types:
    return Types(frozenset(tys))


def sym_types(sym: Optional[Sym]) -> Types:
    """A resolved top-level name as a value: a class object, a function, a module, ..."""
    if sym is None or sym.kind == "binding":
        return UNKNOWN
    return _of(Ty({"class": "cls", "func": "func", "module": "module", "external": "external"}[sym.kind], sym))


class Scope:
    """The names of one function: parameters, locals (types read off their assignments), local imports."""

    def __init__(self, rel: str, self_cls: Optional[Ty]):
        self.rel = rel
        self.self_cls = self_cls
        self.names: dict[str, Types] = {}


class TypeReader:
    """Types of expressions in the files of one tree. `fixed` gives attributes whose type the tree
    does not say statically but the checker knows (the scheduler's `tree_cache`: the judged class)."""

    def __init__(self, srt: Srt, fixed: Mapping[tuple[Sym, str], Types]):
        self.srt = srt
        self.fixed = dict(fixed)
        self._attrs: dict[tuple[Sym, str], Types] = {}
        self._scopes: dict[tuple[int, Optional[Ty]], Scope] = {}
        self._assigned: dict[Sym, dict] = {}
        self._methods: dict[tuple[Ty, str], tuple[list[tuple[Sym, ast.AST]], bool]] = {}

    # ---- annotations

    def annotation(self, node: Optional[ast.AST], rel: str) -> Types:
        if node is None:
            return UNKNOWN
        if isinstance(node, ast.Constant):
            if node.value is None:
                return NOTHING
            if isinstance(node.value, str):
                try:
                    return self.annotation(ast.parse(node.value, mode="eval").body, rel)
                except SyntaxError:
                    return UNKNOWN
            return UNKNOWN
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
            return self.annotation(node.left, rel) | self.annotation(node.right, rel)
        if isinstance(node, ast.Subscript):
            head = node.value.attr if isinstance(node.value, ast.Attribute) else getattr(node.value, "id", "")
            if head in _UNION:
                parts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
                if head == "Annotated" or head in ("ClassVar", "Final"):
                    parts = parts[:1]
                out = NOTHING
                for part in parts:
                    out = out | self.annotation(part, rel)
                return out
            base = self.srt.expr_symbol(rel, node.value)
            if base is not None and base.kind == "class":
                return _of(Ty("inst", base))
            return _of(EXTERNAL)  # List[...], Dict[...], Callable[...], a container of the standard library
        if isinstance(node, (ast.Name, ast.Attribute)):
            sym = self.srt.expr_symbol(rel, node)
            if sym is not None and sym.kind == "class":
                return _of(Ty("inst", sym))
            if sym is not None and sym.kind == "external":
                return _of(EXTERNAL)
            if sym is None and isinstance(node, ast.Name) and node.id in _BUILTIN_NAMES:
                return _of(EXTERNAL)
        return UNKNOWN

    def returns(self, fn: ast.AST, rel: str) -> Types:
        return self.annotation(getattr(fn, "returns", None), rel)

    # ---- scopes

    def scope(self, fn: ast.AST, rel: str, self_cls: Optional[Ty]) -> Scope:
        key = (id(fn), self_cls)
        if key in self._scopes:
            return self._scopes[key]
        scope = Scope(rel, self_cls)
        self._scopes[key] = scope
        args = fn.args
        positional = args.posonlyargs + args.args
        for i, arg in enumerate(positional + args.kwonlyargs + [a for a in (args.vararg, args.kwarg) if a]):
            if i == 0 and self_cls is not None and arg in positional and not _is_static(fn):
                scope.names[arg.arg] = _of(self_cls) if not _is_classmethod(fn) else _of(Ty("cls", self_cls.sym))
            elif arg is args.vararg or arg is args.kwarg:
                scope.names[arg.arg] = _of(EXTERNAL)
            else:
                scope.names[arg.arg] = self.annotation(arg.annotation, rel)
        assigned: dict[str, list[ast.AST]] = {}
        for n in self.srt.module(rel).readings.per_node("scope", fn, lambda f: self._scope_nodes(f, rel)):
            if isinstance(n, (ast.Import, ast.ImportFrom)):
                for alias in n.names:
                    bound = alias.asname or alias.name.split(".")[0]
                    scope.names[bound] = sym_types(self.srt.imported(n, rel, bound))
            elif isinstance(n, ast.Assign):
                for target in n.targets:
                    _collect(target, n.value, assigned)
            elif isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name):
                assigned.setdefault(n.target.id, []).append(n)
            elif isinstance(n, (ast.For, ast.AsyncFor, ast.comprehension)):
                _collect(n.target, None, assigned)
            elif isinstance(n, (ast.With, ast.AsyncWith)):
                for item in n.items:
                    if item.optional_vars is not None:
                        _collect(item.optional_vars, None, assigned)
            elif isinstance(n, ast.NamedExpr):
                _collect(n.target, n.value, assigned)
            elif isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name):
                assigned.setdefault(n.target.id, []).append(None)
            elif isinstance(n, ast.ExceptHandler) and n.name:
                assigned.setdefault(n.name, []).append(None)
            elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and n is not fn:
                assigned.setdefault(n.name, []).append(None)
        for name, values in assigned.items():
            if name in scope.names and all(v is None for v in values):
                continue
            out = scope.names.get(name, NOTHING)  # a parameter assigned again: either
            scope.names[name] = UNKNOWN  # while its own values are read (x = x.next())
            for value in values:
                if value is None:
                    out = out | UNKNOWN
                elif isinstance(value, ast.AnnAssign):
                    out = out | self.annotation(value.annotation, rel)
                else:
                    out = out | self.infer(value, scope)
            scope.names[name] = out
        return scope

    # ---- expressions

    def infer(self, node: ast.AST, scope: Scope) -> Types:
        if isinstance(node, ast.Name):
            if node.id in scope.names:
                return scope.names[node.id]
            sym = self.srt.resolve(scope.rel, node.id)
            if sym is None:
                return _of(EXTERNAL) if node.id in _BUILTIN_NAMES else UNKNOWN
            return sym_types(sym)
        if isinstance(node, ast.Attribute):
            out = NOTHING
            owner = self.infer(node.value, scope)
            for ty in owner.known:
                if ty.kind in ("inst", "cls"):
                    out = out | self.attribute(ty.sym, node.attr)
                elif ty.kind == "module":
                    out = out | sym_types(self.srt.resolve(ty.sym.rel, node.attr))
                elif ty.kind == "external":
                    out = out | _of(EXTERNAL)
                else:
                    out = out | UNKNOWN
            return out | (UNKNOWN if owner.unknown else NOTHING)
        if isinstance(node, ast.Call):
            return self.call_result(node, scope)
        if isinstance(node, ast.Constant):
            return NOTHING if node.value is None else _of(EXTERNAL)
        if isinstance(node, (ast.List, ast.Tuple, ast.Dict, ast.Set, ast.ListComp, ast.DictComp, ast.SetComp,
                             ast.GeneratorExp, ast.JoinedStr, ast.Compare, ast.BinOp, ast.UnaryOp, ast.Lambda)):
            return _of(EXTERNAL)
        if isinstance(node, ast.IfExp):
            return self.infer(node.body, scope) | self.infer(node.orelse, scope)
        if isinstance(node, ast.BoolOp):
            out = NOTHING
            for value in node.values:
                out = out | self.infer(value, scope)
            return out
        if isinstance(node, ast.NamedExpr):
            return self.infer(node.value, scope)
        return UNKNOWN

    def call_result(self, call: ast.Call, scope: Scope) -> Types:
        f = call.func
        if isinstance(f, ast.Name) and f.id == "super":
            return UNKNOWN
        if isinstance(f, ast.Attribute):
            owner = self.infer(f.value, scope)
            out = UNKNOWN if owner.unknown else NOTHING
            for ty in owner.known:
                if ty.kind in ("inst", "cls"):
                    found, resolved = self.methods(ty, f.attr)
                    for (cls, node) in found:
                        out = out | self.returns(node, cls.rel)
                    if not resolved:
                        out = out | UNKNOWN
                elif ty.kind == "module":
                    out = out | self._called(sym_types(self.srt.resolve(ty.sym.rel, f.attr)))
                elif ty.kind == "external":
                    out = out | _of(EXTERNAL)
                else:
                    out = out | UNKNOWN
            return out
        return self._called(self.infer(f, scope))

    def _called(self, callee: Types) -> Types:
        out = UNKNOWN if callee.unknown else NOTHING
        for ty in callee.known:
            if ty.kind == "cls":
                out = out | _of(Ty("inst", ty.sym, exact=True))
            elif ty.kind == "func":
                module = self.srt.module(ty.sym.rel)
                node = module.bindings.get(ty.sym.name) if module else None
                out = out | (self.returns(node, ty.sym.rel) if node is not None else UNKNOWN)
            elif ty.kind == "external":
                out = out | _of(EXTERNAL)
            else:
                out = out | UNKNOWN
        return out

    # ---- classes

    def attribute(self, cls: Sym, name: str) -> Types:
        """What `obj.name` may be for an instance of `cls`: its declared or assigned types."""
        key = (cls, name)
        if key in self.fixed:
            return self.fixed[key]
        if key in self._attrs:
            return self._attrs[key]
        self._attrs[key] = UNKNOWN  # a cycle reads as unknown
        declared, assigned, seen = NOTHING, NOTHING, False
        for c in self.srt.mro(cls):
            for method, kind, value in self._assignments(c).get(name, ()):
                seen = True
                if kind == "annotation":
                    declared = declared | self.annotation(value, c.rel)
                elif kind == "class value":
                    assigned = assigned | self.infer(value, Scope(c.rel, None))
                elif kind == "property":
                    assigned = assigned | self.returns(value, c.rel)
                elif value is None:
                    assigned = assigned | UNKNOWN
                else:
                    assigned = assigned | self.infer(value, self.scope(method, c.rel, Ty("inst", cls)))
        out = declared if declared.known or declared.unknown else (assigned if seen else UNKNOWN)
        self._attrs[key] = out
        return out

    def _assignments(self, cls: Sym) -> dict[str, list[tuple[Optional[ast.AST], str, Optional[ast.AST]]]]:
        """attribute -> [(method or None, 'annotation'|'class value'|'property'|'value', node)] of one class's own body."""
        if cls in self._assigned:
            return self._assigned[cls]
        out: dict[str, list] = {}
        module = self.srt.module(cls.rel)
        node = module.classes.get(cls.name) if module else None
        for stmt in node.body if node is not None else ():
            if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                out.setdefault(stmt.target.id, []).append((None, "annotation", stmt.annotation))
            elif isinstance(stmt, ast.Assign):
                for t in stmt.targets:
                    if isinstance(t, ast.Name):
                        out.setdefault(t.id, []).append((None, "class value", stmt.value))
            elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                is_property = any(getattr(d, "id", getattr(d, "attr", "")) in ("property", "cached_property")
                                  for d in stmt.decorator_list)
                out.setdefault(stmt.name, []).append((None, "property", stmt) if is_property else (None, "value", None))
                first = (stmt.args.posonlyargs + stmt.args.args)[:1]
                me = first[0].arg if first else "self"
                for n in self._own_nodes(stmt, cls.rel):
                    if not isinstance(n, _SELF_ASSIGNING):
                        continue
                    for name, kind, value in _self_assignments(n, me):
                        out.setdefault(name, []).append((stmt, kind, value))
        self._assigned[cls] = out
        return out

    def methods(self, ty: Ty, name: str) -> tuple[list[tuple[Sym, ast.AST]], bool]:
        """([(class, method)], resolved): the method `name` an instance (or the class object) reaches:
        the first in its srt bases, and each override in a subclass unless the instance is exact.
        Not resolved: no srt class defines it and every base is in srt (an attribute holding a callable).
        Kept per (ty, name): the path asks again for every call; the list is not to be changed."""
        key = (ty, name)
        if key not in self._methods:
            self._methods[key] = self._find_methods(ty, name)
        return self._methods[key]

    def _own_nodes(self, fn: ast.AST, rel: str) -> list[ast.AST]:
        """_own_nodes(fn) of a function of file `rel`, walked once (tree_memo.Readings)."""
        return self.srt.module(rel).readings.per_node("own", fn, _own_nodes)

    def _scope_nodes(self, fn: ast.AST, rel: str) -> list[ast.AST]:
        """The nodes of a function's body that bind a name (what `scope` reads), in order."""
        return [n for n in self._own_nodes(fn, rel) if isinstance(n, _BINDING)]

    def _find_methods(self, ty: Ty, name: str) -> tuple[list[tuple[Sym, ast.AST]], bool]:
        found: list[tuple[Sym, ast.AST]] = []
        outside = False
        for c in self.srt.mro(ty.sym):
            module = self.srt.module(c.rel)
            node = module.methods(c.name).get(name) if module else None
            outside = outside or self.srt.bases(c)[1]
            if node is not None:
                found.append((c, node))
                break
        if not ty.exact:
            for sub in self.srt.subclasses(ty.sym):
                module = self.srt.module(sub.rel)
                node = module.methods(sub.name).get(name) if module else None
                if node is not None:
                    found.append((sub, node))
        return found, bool(found) or outside


# the statements and nodes that bind a local name (scope) or may bind `self.x` (_self_assignments)
_BINDING = (ast.Import, ast.ImportFrom, ast.Assign, ast.AnnAssign, ast.For, ast.AsyncFor, ast.comprehension,
            ast.With, ast.AsyncWith, ast.NamedExpr, ast.AugAssign, ast.ExceptHandler, ast.FunctionDef,
            ast.AsyncFunctionDef, ast.ClassDef)
_SELF_ASSIGNING = (ast.AnnAssign, ast.Assign, ast.AugAssign, ast.For, ast.With)


def _is_static(fn: ast.AST) -> bool:
    return any(getattr(d, "id", "") == "staticmethod" for d in fn.decorator_list)


def _is_classmethod(fn: ast.AST) -> bool:
    return any(getattr(d, "id", "") == "classmethod" for d in fn.decorator_list)


def _collect(target: ast.AST, value: Optional[ast.AST], into: dict[str, list]) -> None:
    if isinstance(target, ast.Name):
        into.setdefault(target.id, []).append(value)
    elif isinstance(target, (ast.Tuple, ast.List)):
        for elt in target.elts:
            _collect(elt, None, into)
    elif isinstance(target, ast.Starred):
        _collect(target.value, None, into)


def _own_nodes(fn: ast.AST) -> list[ast.AST]:
    """Every node of a function's body (nested functions and lambdas included: a closure's names
    are read with the function's), each statement's in ast.walk's order."""
    out: list[ast.AST] = []
    for stmt in fn.body:
        out += walk(stmt)
    return out


def _self_assignments(n: ast.AST, me: str) -> Iterable[tuple[str, str, Optional[ast.AST]]]:
    """(attr, 'annotation', ann) for `self.attr: T = ...`, (attr, 'value', value or None: unknown) for
    `self.attr = value` and the other ways a statement binds `self.attr`."""

    def mine(t: ast.AST) -> Optional[str]:
        if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == me:
            return t.attr
        return None

    if isinstance(n, ast.AnnAssign) and mine(n.target):
        yield mine(n.target), "annotation", n.annotation
    elif isinstance(n, ast.Assign):
        for t in n.targets:
            if mine(t):
                yield mine(t), "value", n.value
            elif isinstance(t, (ast.Tuple, ast.List)):
                for e in ast.walk(t):
                    if mine(e):
                        yield mine(e), "value", None
    elif isinstance(n, ast.AugAssign) and mine(n.target):
        yield mine(n.target), "value", None
    elif isinstance(n, (ast.For, ast.With)):
        targets = [n.target] if isinstance(n, ast.For) else [i.optional_vars for i in n.items if i.optional_vars]
        for t in targets:
            for e in ast.walk(t):
                if mine(e):
                    yield mine(e), "value", None
