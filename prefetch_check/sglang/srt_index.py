"""The sglang/srt files of a tree as modules: what a top-level name of a file is (a class, a
function, another file, something outside sglang.srt), and which classes subclass which.

Why its own module: the prefetch path (path_code.py) follows the code across every file of
sglang/srt, through imports (absolute and relative, re-exports in `__init__.py` included), base
classes and subclasses; this is the part that knows Python's import rules, read off the syntax
only (nothing is imported). Files are parsed when first asked for, so a tree given as a lazy
mapping (locate.SrtFiles) is read only where the path goes.
"""

from __future__ import annotations

import ast
import re
import warnings
from collections import deque
from dataclasses import dataclass
from typing import Iterator, Mapping, Optional

from prefetch_check.sglang.tree_memo import Readings, TreeMemo

PACKAGE = "sglang.srt."
# the files that hold the cache classes, the controller, the factory and the scheduler (below sglang/srt/)
HIRADIX = "mem_cache/hiradix_cache.py"
UNIFIED = "mem_cache/unified_radix_cache.py"
CONTROLLER = "managers/cache_controller.py"
REGISTRY = "mem_cache/registry.py"
SCHEDULER = "managers/scheduler.py"
CACHE_FILES = {"HiRadixCache": HIRADIX, "UnifiedRadixCache": UNIFIED}
# a class statement and its bases, for finding subclasses without parsing every file
_CLASS_HEAD = re.compile(r"^[ \t]*class[ \t]+\w+[ \t]*\(([^)]*)\)", re.MULTILINE)


@dataclass(frozen=True)
class Sym:
    """What a name means: kind 'class', 'func' or 'binding' (rel, name); 'module' (rel, '');
    'external' (the dotted name outside sglang.srt, '')."""

    kind: str
    rel: str
    name: str = ""


class Module:
    """One parsed file: its top-level bindings (the statement that binds each name, and the
    innermost one for imports inside `if`/`try`), and every name a `def` anywhere in it has."""

    def __init__(self, rel: str, text: str):
        self.rel = rel
        with warnings.catch_warnings():  # upstream's invalid escapes and the like: not ours to report
            warnings.simplefilter("ignore")
            self.tree = ast.parse(text)
        self.classes = {n.name: n for n in self.tree.body if isinstance(n, ast.ClassDef)}
        self.bindings: dict[str, ast.stmt] = {}  # name -> top-level statement (a piece of the path)
        self.inner: dict[str, ast.stmt] = {}  # name -> the statement itself (an import inside an `if`)
        for stmt in self.tree.body:
            for name, inner in bound_names(stmt):
                self.bindings[name] = stmt  # the last binding wins, as at import time
                self.inner[name] = inner
        self.defines: set[str] = set()
        self.properties: set[str] = set()
        imports = []
        for n in _statements(self.tree):
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.defines.add(n.name)
                if any(_decorator_name(d) in ("property", "cached_property", "setter") for d in n.decorator_list):
                    self.properties.add(n.name)
            elif isinstance(n, (ast.Import, ast.ImportFrom)):
                imports.append(n)
        self._imports = tuple(imports)
        self._methods: dict[str, dict[str, ast.AST]] = {}
        self.readings = Readings()  # what the path reads off this file's nodes (path_code, path_types)

    def methods(self, cls: str) -> dict[str, ast.AST]:
        """The methods of a class by name (the last `def` wins), found once; not to be changed."""
        if cls not in self._methods:
            node = self.classes.get(cls)
            self._methods[cls] = {} if node is None else {
                n.name: n for n in node.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
        return self._methods[cls]

    def imported_modules(self) -> tuple[ast.stmt, ...]:
        """Every import statement of the file (inside `if TYPE_CHECKING:`, `try`, functions and
        classes too: their local imports are imports of the file), found once: the path asks
        for them at every round of its whole-file rule."""
        return self._imports


# the nodes that hold statements: a `def` or an import is never inside an expression
_SKELETON = (ast.stmt, ast.excepthandler, ast.match_case)


def _statements(tree: ast.Module) -> Iterator[ast.AST]:
    """The statements of a file (and the handlers and cases holding some) in `ast.walk`'s order:
    a breadth-first walk that skips expressions, the nine tenths of the tree no `def` is in.
    Every skeleton node's parent is one too, so the order is ast.walk's with the rest left out."""
    todo = deque([tree])
    while todo:
        node = todo.popleft()
        for name in node._fields:
            value = getattr(node, name, None)
            if isinstance(value, list):
                for child in value:
                    if isinstance(child, _SKELETON):
                        todo.append(child)
            elif isinstance(value, _SKELETON):
                todo.append(value)
        if node is not tree:
            yield node


def _decorator_name(node: ast.AST) -> str:
    if isinstance(node, ast.Call):
        node = node.func
    return node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else ""


def bound_names(stmt: ast.stmt) -> Iterator[tuple[str, ast.stmt]]:
    """(name, the statement binding it) for each name a top-level statement binds."""
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        yield stmt.name, stmt
    elif isinstance(stmt, (ast.Import, ast.ImportFrom)):
        for alias in stmt.names:
            if alias.name != "*":
                yield (alias.asname or alias.name).split(".")[0], stmt
    elif isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        for target in targets:
            for n in ast.walk(target):
                if isinstance(n, ast.Name):
                    yield n.id, stmt
    elif isinstance(stmt, (ast.If, ast.Try)):  # `try: import x except ImportError: ...` and the like
        for part in ast.iter_child_nodes(stmt):
            if isinstance(part, ast.stmt):
                yield from bound_names(part)
            elif isinstance(part, ast.ExceptHandler):
                for inner in part.body:
                    yield from bound_names(inner)


class Srt:
    """The files of one tree (path below sglang/srt -> text), parsed on demand. `memo` shares
    the parsed files with the other walks of the same call (tree_memo.py); what this walk asked
    for is its own (`parsed()`), and so are the answers kept below, which ask for files too."""

    def __init__(self, files: Mapping[str, str], memo: Optional[TreeMemo] = None):
        self.files = files
        self.memo = memo if memo is not None else TreeMemo()
        self._modules: dict[str, Optional[Module]] = {}
        self._subclasses: dict[Sym, tuple[Sym, ...]] = {}
        self._resolved: dict[tuple[str, str], Optional[Sym]] = {}
        self._imported: dict[tuple[int, str, str], Optional[Sym]] = {}
        self._bases: dict[Sym, tuple[list[Sym], bool]] = {}
        self._mro: dict[Sym, list[Sym]] = {}

    def module(self, rel: Optional[str]) -> Optional[Module]:
        if rel is None:
            return None
        if rel not in self._modules:
            shared = self.memo.modules
            if rel not in shared:
                text = self.files.get(rel)
                shared[rel] = parsed_module(rel, text) if text is not None else None
            self._modules[rel] = shared[rel]
        return self._modules[rel]

    def parsed(self) -> set[str]:
        """The files read and parsed so far (those present in the tree)."""
        return {rel for rel, module in self._modules.items() if rel in self.files}

    def module_file(self, dotted: Optional[str], level: int, importer: str) -> Optional[str]:
        """The srt file an import names (`sglang.srt.a.b` -> a/b.py or a/b/__init__.py), if it is one."""
        if level:
            parts = importer.split("/")[:-level] + (dotted.split(".") if dotted else [])
        elif dotted and dotted.startswith(PACKAGE):
            parts = dotted[len(PACKAGE):].split(".")
        else:
            return None
        base = "/".join(parts)
        for rel in (base + ".py", base + "/__init__.py"):
            if rel in self.files:
                return rel
        return None

    def resolve(self, rel: str, name: str, seen: frozenset = frozenset()) -> Optional[Sym]:
        """What the top-level name `name` of file `rel` is, following imports across srt (kept
        when asked from outside a chain of imports: inside one, `seen` may cut it short)."""
        if seen:
            return self._resolve(rel, name, seen)
        key = (rel, name)
        if key not in self._resolved:
            self._resolved[key] = self._resolve(rel, name, seen)
        return self._resolved[key]

    def _resolve(self, rel: str, name: str, seen: frozenset) -> Optional[Sym]:
        module = self.module(rel)
        if module is None or name not in module.bindings or (rel, name) in seen:
            return None
        seen = seen | {(rel, name)}
        stmt = module.inner[name]
        if isinstance(stmt, ast.ClassDef):
            return Sym("class", rel, name)
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return Sym("func", rel, name)
        if isinstance(stmt, (ast.Import, ast.ImportFrom)):
            return self.imported(stmt, rel, name, seen)
        return Sym("binding", rel, name)

    def imported(self, stmt: ast.stmt, rel: str, name: str, seen: frozenset = frozenset()) -> Optional[Sym]:
        """What the import statement `stmt` in file `rel` binds to `name` (kept as `resolve`)."""
        if seen:
            return self._import(stmt, rel, name, seen)
        key = (id(stmt), rel, name)  # stmt is a node of a module this walk keeps
        if key not in self._imported:
            self._imported[key] = self._import(stmt, rel, name, seen)
        return self._imported[key]

    def _import(self, stmt: ast.stmt, rel: str, name: str, seen: frozenset) -> Optional[Sym]:
        for alias in stmt.names:
            bound = alias.asname or alias.name.split(".")[0]
            if bound != name:
                continue
            if isinstance(stmt, ast.Import):
                dotted = alias.name if alias.asname else alias.name.split(".")[0]
                target = self.module_file(dotted, 0, rel) if dotted.startswith(PACKAGE) else None
                return Sym("module", target) if target else Sym("external", dotted)
            source = self.module_file(stmt.module, stmt.level, rel)
            if source is None:
                package = stmt.module or ""
                if stmt.level or package.startswith(PACKAGE) or package == "sglang.srt":
                    sub = self.module_file(f"{package}.{alias.name}" if package else alias.name, stmt.level, rel)
                    return Sym("module", sub) if sub else None
                return Sym("external", f"{package}.{alias.name}")
            if source.endswith("__init__.py"):  # `from pkg import submodule`
                sub = source[: -len("__init__.py")] + alias.name + ".py"
                if sub in self.files and alias.name not in (self.module(source) or _EMPTY).bindings:
                    return Sym("module", sub)
            return self.resolve(source, alias.name, seen)
        return None

    def bases(self, cls: Sym) -> tuple[list[Sym], bool]:
        """(the srt classes a class names as bases, whether it has a base outside srt); not to be changed."""
        if cls not in self._bases:
            self._bases[cls] = self._read_bases(cls)
        return self._bases[cls]

    def _read_bases(self, cls: Sym) -> tuple[list[Sym], bool]:
        module = self.module(cls.rel)
        node = module.classes.get(cls.name) if module else None
        if node is None:
            return [], False
        out, outside = [], False
        for base in node.bases:
            sym = self.expr_symbol(cls.rel, base)
            if sym is not None and sym.kind == "class":
                out.append(sym)
            else:
                outside = True
        return out, outside

    def expr_symbol(self, rel: str, node: ast.AST) -> Optional[Sym]:
        """What a name or dotted name (`mod.Cls`) at top level of file `rel` is."""
        if isinstance(node, ast.Name):
            return self.resolve(rel, node.id)
        if isinstance(node, ast.Attribute):
            owner = self.expr_symbol(rel, node.value)
            if owner is not None and owner.kind == "module":
                return self.resolve(owner.rel, node.attr)
            if owner is not None and owner.kind == "external":
                return Sym("external", f"{owner.rel}.{node.attr}")
        if isinstance(node, ast.Subscript):  # Generic[T], a parametrised base
            return self.expr_symbol(rel, node.value)
        return None

    def mro(self, cls: Sym) -> list[Sym]:
        """The class and its srt bases, depth first, each once (Python's order where it matters
        here); not to be changed."""
        if cls not in self._mro:
            self._mro[cls] = self._read_mro(cls)
        return self._mro[cls]

    def _read_mro(self, cls: Sym) -> list[Sym]:
        out: list[Sym] = []
        todo = [cls]
        while todo:
            c = todo.pop(0)
            if c in out:
                continue
            out.append(c)
            todo = self.bases(c)[0] + todo
        return out

    def subclasses(self, cls: Sym) -> tuple[Sym, ...]:
        """Every class in the tree that has `cls` among its srt bases, at any depth."""
        if cls not in self._subclasses:
            self._subclasses[cls] = ()  # a cycle stops here
            found: list[Sym] = []
            for rel in self._naming_in_bases().get(cls.name, ()):
                module = self.module(rel)
                for name in sorted(module.classes) if module else ():
                    sub = Sym("class", rel, name)
                    if sub != cls and cls in self.bases(sub)[0]:
                        found.append(sub)
            for sub in list(found):
                found += [s for s in self.subclasses(sub) if s not in found]
            self._subclasses[cls] = tuple(found)
        return self._subclasses[cls]

    def _naming_in_bases(self) -> dict[str, list[str]]:
        """word -> the files with a class statement naming it among its bases (read once, not parsed)."""
        if self.memo.bases_index is None:
            index: dict[str, list[str]] = {}
            for rel in sorted(self.files):
                if not rel.endswith(".py"):
                    continue
                words = set()
                for head in _CLASS_HEAD.finditer(self.files.get(rel) or ""):
                    words.update(re.findall(r"\w+", head.group(1)))
                for word in sorted(words):
                    index.setdefault(word, []).append(rel)
            self.memo.bases_index = index
        return self.memo.bases_index


def parsed_module(rel: str, text: str) -> Optional[Module]:
    """The parsed file `rel` with this text (None: it does not parse). Not kept across calls: a
    process-wide cache of parsed trees (an lru_cache of 1,024 files was tried) leaves millions of
    AST nodes for every full garbage collection to scan, about 1.2 s each, which made a long-lived
    process (the test suite's workers) slower overall; within a call, TreeMemo parses each file once."""
    try:
        return Module(rel, text)
    except SyntaxError:
        return None


class _Empty:
    bindings: dict = {}


_EMPTY = _Empty()
