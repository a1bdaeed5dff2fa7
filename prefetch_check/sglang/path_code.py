"""The code of a tree's prefetch path, piece by piece, each with a fingerprint.

Why: the model answers for a tree through the few features the detector reads
(detect.py); everything the patterns do not look at is taken to be the code of
a release the model was checked against. That holds only where the tree's code IS that
code, so every piece of the prefetch path is fingerprinted here and compared with the
releases the model follows (followed.py); one that differs from all of them means the
verdicts would be about code nobody read.

The path is found in the tree itself, across every file of sglang/srt: the entry points below
(issue, the prefetch, IO and sync threads, the drain, the check, termination, result, abort,
revoke and release paths, in the judged cache class and the controller classes, and what the
code engine's worlds run beside them: the insert and its write-through, the load-back of a host
hit, the evictions, sidecar registration, the PP tickets; the scheduler's methods that issue,
retry, re-issue and readmit a prefetch, wherever its mixins define them, and what it calls past
the cache (the buffer pipeline's staging); the operation and ACK classes whole), then everything
they reach:
- a name a path function uses: the module-level function, class, constant or import it is,
  followed through imports (absolute, relative, re-exports) into any srt file;
- a call or attribute through a receiver whose class static evidence says (path_types.py:
  `self.x = Cls(...)`, annotations, constructor locals): that class's method, from its srt
  bases, and each override in an srt subclass unless the receiver was built by a constructor
  (`self.buffer_pipeline.x(...)` reaches BufferModePipeline.x in buffer_mode/pipeline.py);
  the scheduler's `self.tree_cache` is the judged class;
- a call `obj.m(...)` whose receiver the evidence does not give and whose `m` is no method of
  the builtin, standard-library or torch types listed in builtin_methods.py: every file the
  path reaches (a file holding a piece, or one such a file imports) that defines a function
  or method `m` is fingerprinted WHOLE, a piece `<file>:<file>` with `whole=True` (also a
  property read through an unknown receiver, for files defining that property). Over-refusing
  is the price; a clean verdict for unread code is not paid. A method called by name on an
  unknown receiver that is a method of the cache, controller, scheduler or pipeline class is also
  taken itself, so a refusal names it.
A class reached is taken as its header (bases, decorators, class attributes and fields) and
its dunder methods (called implicitly), its other methods as the path calls them.

A fingerprint is a digest of the piece's `ast` without docstrings, so formatting and
comments do not count and every other change does. The completion predicate is part of the
path like every other function: its loader (model/source/predicate.py) reads only what a
rank brings to the vote, not whether every rank reaches the vote, so an edited predicate is
judged on the model with `run --predicate-source`, not answered for the tree.
"""

from __future__ import annotations

import ast
import copy
import hashlib
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Iterable, Mapping, Optional

from prefetch_check.sglang.builtin_methods import BUILTIN_METHODS
from prefetch_check.sglang.code_digest import digest
from prefetch_check.sglang.gc_paused import gc_paused
from prefetch_check.sglang.path_types import Scope, Ty, TypeReader, Types
from prefetch_check.sglang.srt_index import CACHE_FILES, CONTROLLER, SCHEDULER, Srt, Sym
from prefetch_check.sglang.tree_memo import TreeMemo, walk

HYBRID_CONTROLLER = "mem_cache/hybrid_cache/hybrid_cache_controller.py"
CONTROLLER_FILES = (CONTROLLER, HYBRID_CONTROLLER)

# The prefetch path's entry points in the judged cache class (names absent from a tree are skipped).
CACHE_ENTRIES = (
    "__init__", "attach_storage_backend", "prefetch_from_storage", "check_hicache_events",
    "drain_storage_control_queues", "_drain_storage_control_queues_impl", "_sync_hicache_ready_counts",
    "check_revoked_prefetch", "check_prefetch_progress", "can_terminate_prefetch", "_can_terminate_prefetch",
    "_check_pp_prefetch_progress", "_handle_prefetch_result", "_check_hybrid_prefetch_result",
    "release_aborted_request", "_revoke_pending_prefetch", "revoke_pending_prefetch", "_retire_ongoing_prefetch",
    "pop_prefetch_loaded_tokens", "pop_prefetch_loaded_span", "is_prefetch_timeout",
    "_prefetch_timeout_check_linear_func", "_start_storage_prefetch_wait", "_prefetch_deadline_expired",
    "_mark_prefetch_deadline_expired",
    # what the worlds run beside the prefetch (model/code/worlds/): the insert that backs nodes up and the
    # write acks, the load-back of a host hit, device and host eviction, sidecar pools, the PP tickets
    "insert", "write_backup", "writing_check", "init_load_back", "load_back", "ready_to_load_host_cache",
    "loading_check", "evict", "evict_for_alloc", "evict_host", "register_sidecar_pool", "bind_prefetch_ticket",
)
# ... in the controller classes (HiCacheController, HybridCacheController).
CONTROLLER_ENTRIES = (
    "__init__", "attach_storage_backend", "parse_storage_backend_extra_config", "_start_storage_threads",
    "prefetch", "submit_prefetch", "get_prefetch_submission", "terminate_prefetch", "prefetch_rate_limited",
    "prefetch_rate_limit_check", "prefetch_thread_func", "_storage_hit_query", "_sync_prefetch_hit_query",
    "prefetch_io_aux_func", "_page_transfer", "_page_transfer_with_stable_layout", "_page_transfer_kv_batch",
    "_page_transfer_sidecar", "_generic_page_get", "_page_get_zero_copy", "generic_page_transfer",
    "zerocopy_page_transfer", "mooncake_page_transfer", "prefetch_sync_thread_func", "_reduce_prefetch_ack",
    "append_host_mem_release", "_append_host_mem_release_pages", "allocate_storage_hit",
    "write", "start_writing", "load", "start_loading",
)
# Classes taken whole, wherever a path file defines them.
WHOLE_CLASSES = ("PrefetchOperation", "PrefetchAck", "StorageOperation")
PACKAGE = "sglang.srt."


# ... in the scheduler class (or the mixin its release defines them in): issue, retry, re-issue,
# and flush_cache's gate, which decides when the cache's reset may run (the reset world runs it).
SCHEDULER_CLASS = "Scheduler"
SCHEDULER_ENTRIES = (
    "_prefetch_kvcache", "_retry_missed_storage_prefetches", "_process_storage_prefetch_retries",
    "_retry_storage_prefetch", "_prefetch_after_device_hit_loss", "_add_request_to_queue",
    "_release_aborted_request", "is_fully_idle",
)
# ... in classes the scheduler calls past the cache (the class's file, its name, the methods):
# the buffer_only admission stages a hit through the cache's pipeline directly.
OTHER_ENTRIES = (("mem_cache/buffer_mode/pipeline.py", "BufferModePipeline", ("prepare_staged_prefetch",)),)
WHOLE_FILE = "<file>"
# Where the path is followed: the HiCache subsystem (every file below mem_cache/: caches, pools,
# host pools, storage backends, the buffer_only pipeline, retries), the controller, the poll timer.
# A piece outside it that a followed piece reaches (a Req method, a scheduler helper, a config
# getter) is fingerprinted but not followed further; the scheduler's entry methods are followed
# wherever they are defined.
PATH_SCOPE = ("mem_cache/", "managers/cache_controller.py", "utils/poll_timer.py")


def in_scope(rel: str) -> bool:
    return rel.startswith(PATH_SCOPE)


@dataclass(frozen=True)
class PathFunction:
    """One piece of the path: `ident` is file:Class.method, file:Class (its header), file:function,
    file:<module>.name (a module-level binding) or file:<file> (the whole file: `whole` is True,
    `line` is 1, `why` names the call that could not be resolved and so pulled it in); `line` is
    where the piece starts in the tree."""

    ident: str
    file: str
    line: int
    digest: str
    whole: bool = False
    why: str = field(default="", compare=False)

    @property
    def name(self) -> str:
        return self.ident.partition(":")[2]

    def where(self) -> str:
        return f"{self.file}:{self.line}"


def _header(cls: ast.ClassDef) -> ast.ClassDef:
    """A class without its methods: bases, decorators, class attributes."""
    out = copy.copy(cls)
    out.body = [n for n in cls.body if not isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))] or [ast.Pass()]
    return out


def _is_dunder(name: str) -> bool:
    return name.startswith("__") and name.endswith("__")


def _uses(node: ast.AST) -> list[tuple[ast.AST, bool]]:
    """What reading a piece looks at, in `ast.walk` order: each name, each import below it and
    each attribute (with whether it is called). Kept per node (tree_memo.py): a method is read
    once for every class its `self` may be, and by the walk of every cache class."""
    nodes = walk(node)
    called = {id(n.func) for n in nodes if isinstance(n, ast.Call)}
    return [(n, isinstance(n, ast.Attribute) and id(n) in called) for n in nodes
            if isinstance(n, (ast.Name, ast.Attribute))
            or (isinstance(n, (ast.Import, ast.ImportFrom)) and n is not node)]


class _Walk:
    """The path of one cache class in one tree: a worklist of pieces, each read for what it reaches."""

    def __init__(self, files: Mapping[str, str], cache_class: str, srt: Optional[Srt] = None):
        self.srt = srt if srt is not None else Srt(files)
        self.memo = self.srt.memo
        self.classes: set[Sym] = set()  # classes added: adding one again adds nothing new
        self.found: dict[str, PathFunction] = {}
        self.work: list[tuple[str, str, ast.AST, Optional[Ty], str, bool]] = []  # (ident, file, node, self, why, read)
        self.visited: set[tuple[str, Optional[Ty]]] = set()
        self.unresolved: dict[str, str] = {}  # method name called on an unknown receiver -> where first
        self.unresolved_reads: dict[str, str] = {}  # attribute read on an unknown receiver -> where first
        self.cache = Sym("class", CACHE_FILES.get(cache_class, ""), cache_class)
        self.scheduler = Sym("class", SCHEDULER, SCHEDULER_CLASS)
        fixed = {(self.scheduler, "tree_cache"): Types(frozenset({Ty("inst", self.cache, exact=True)}))}
        self.types = TypeReader(self.srt, fixed)
        self.by_name: list[Ty] = []
        self.followed_files: set[str] = set()  # classes whose methods a call by name on an unknown receiver reaches

    # ---- adding pieces

    def add(self, ident: str, rel: str, node: ast.AST, self_cls: Optional[Ty] = None, why: str = "",
            entry: bool = False) -> None:
        if (ident, self_cls) in self.visited:
            return
        self.visited.add((ident, self_cls))
        read = (entry or in_scope(rel)) and not isinstance(node, ast.Module)
        self.work.append((ident, rel, node, self_cls, why, read))

    def add_class(self, cls: Sym) -> None:
        """A class reached: its header and its dunder methods (whole where it is one of WHOLE_CLASSES)."""
        if cls in self.classes:
            return
        self.classes.add(cls)
        module = self.srt.module(cls.rel)
        node = module.classes.get(cls.name) if module else None
        if node is None:
            return
        if cls.name in WHOLE_CLASSES:
            self.add(f"{cls.rel}:{cls.name}", cls.rel, node, Ty("inst", cls))
            return
        self.add(f"{cls.rel}:{cls.name}", cls.rel, module.readings.per_node("header", node, _header))
        for name, method in module.methods(cls.name).items():
            if _is_dunder(name):
                self.add(f"{cls.rel}:{cls.name}.{name}", cls.rel, method, Ty("inst", cls))

    def add_method(self, cls: Sym, node: ast.AST, self_cls: Ty, entry: bool = False) -> None:
        self.add_class(cls)
        if cls.name not in WHOLE_CLASSES:
            self.add(f"{cls.rel}:{cls.name}.{node.name}", cls.rel, node, self_cls, entry=entry)

    def add_symbol(self, sym: Optional[Sym]) -> None:
        if sym is None:
            return
        if sym.kind == "class":
            self.add_class(sym)
        elif sym.kind in ("func", "binding"):
            self.add_binding(sym.rel, sym.name)

    def add_binding(self, rel: str, name: str) -> None:
        module = self.srt.module(rel)
        stmt = module.bindings.get(name) if module else None
        if stmt is None:
            return
        inner = module.inner[name]
        if isinstance(inner, ast.ClassDef) and inner is stmt:
            self.add_class(Sym("class", rel, name))
            return
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            self.add(f"{rel}:{name}", rel, stmt)
            return
        self.add(f"{rel}:<module>.{name}", rel, stmt)
        if isinstance(inner, (ast.Import, ast.ImportFrom)):
            self.add_symbol(self.srt.imported(inner, rel, name))

    def reach(self, ty: Ty, name: str, where: str) -> bool:
        """Add the methods `name` of an instance or class object; whether the call is resolved."""
        if ty.kind == "module":
            self.add_binding(ty.sym.rel, name)
            return True
        if ty.kind == "external":
            return True
        if ty.kind not in ("inst", "cls"):
            return False
        found, resolved = self.types.methods(ty, name)
        for cls, node in found:
            self.add_method(cls, node, Ty("inst", ty.sym, ty.exact) if ty.exact else Ty("inst", cls))
        return resolved

    # ---- reading one piece

    def read(self, ident: str, rel: str, node: ast.AST, self_cls: Optional[Ty]) -> None:
        if isinstance(node, ast.Module):
            for stmt in node.body:
                if isinstance(stmt, ast.ClassDef):
                    self.read(ident, rel, stmt, Ty("inst", Sym("class", rel, stmt.name)))
                else:
                    self.read(ident, rel, stmt, None)
            return
        if isinstance(node, ast.ClassDef):
            for stmt in node.body:
                self.read(ident, rel, stmt, self_cls if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef))
                          else None)
            return
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            scope = self.types.scope(node, rel, self_cls)
        else:
            scope = Scope(rel, None)
        for n, is_call in self.srt.module(rel).readings.per_node("read", node, _uses):
            if isinstance(n, ast.Name):
                self.add_binding(rel, n.id)
            elif isinstance(n, ast.Attribute):
                self.attribute(n, is_call, scope, self_cls, f"{ident} ({rel}:{n.lineno})")
            else:
                for alias in n.names:
                    self.add_symbol(self.srt.imported(n, rel, alias.asname or alias.name.split(".")[0]))

    def attribute(self, n: ast.Attribute, is_call: bool, scope: Scope, self_cls: Optional[Ty], where: str) -> None:
        value = n.value
        if (isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "super"
                and self_cls is not None):
            for base in self.srt.mro(self_cls.sym)[1:]:
                if self.reach(Ty("inst", base, exact=True), n.attr, where):
                    return
            return
        owner = self.types.infer(value, scope)
        resolved = True
        for ty in sorted(owner.known, key=repr):
            resolved = self.reach(ty, n.attr, where) and resolved
        if owner.unknown or not resolved:
            if is_call:
                for ty in self.by_name:
                    found, _ = self.types.methods(ty, n.attr)
                    for cls, node in found:
                        self.add_method(cls, node, ty)
                if n.attr not in BUILTIN_METHODS:
                    self.unresolved.setdefault(n.attr, where)
            else:
                self.unresolved_reads.setdefault(n.attr, where)

    # ---- the whole-file rule

    def reached_files(self) -> list[str]:
        """Files holding a piece the path follows, and the srt files they import, inside PATH_SCOPE."""
        holding = sorted(self.followed_files)
        out = set(holding)
        for rel in holding:
            module = self.srt.module(rel)
            for stmt in module.imported_modules() if module else ():
                if isinstance(stmt, ast.ImportFrom):
                    source = self.srt.module_file(stmt.module, stmt.level, rel)
                    if source:
                        out.add(source)
                    for alias in stmt.names:
                        sym = self.srt.imported(stmt, rel, alias.asname or alias.name.split(".")[0])
                        if sym is not None and sym.kind != "external" and sym.rel:
                            out.add(sym.rel)
                else:
                    for alias in stmt.names:
                        target = self.srt.module_file(alias.name, 0, rel)
                        if target:
                            out.add(target)
        return sorted(rel for rel in out if in_scope(rel))

    def whole_files(self) -> bool:
        """Add every reached file defining a method an unresolved call names; whether any was new."""
        new = False
        for rel in self.reached_files():
            module = self.srt.module(rel)
            if module is None or f"{rel}:{WHOLE_FILE}" in self.found:
                continue
            why = next((f"{m}(...) at {w}" for m, w in sorted(self.unresolved.items()) if m in module.defines), "")
            why = why or next((f".{a} at {w}" for a, w in sorted(self.unresolved_reads.items())
                               if a in module.properties), "")
            if why:
                self.add(f"{rel}:{WHOLE_FILE}", rel, module.tree, None, why)
                self.add_definitions(rel, module)
                new = True
        return new

    def add_definitions(self, rel: str, module) -> None:
        """The functions and methods of a whole file that an unresolved call or read may reach,
        followed like any piece (the file's other code is fingerprinted, not followed)."""
        names = set(self.unresolved) | set(self.unresolved_reads)
        for name, stmt in module.bindings.items():
            if name in names and isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.add_binding(rel, name)
        for cls in sorted(module.classes):
            for name, node in module.methods(cls).items():
                if name in names:
                    self.add_method(Sym("class", rel, cls), node, Ty("inst", Sym("class", rel, cls)))

    def digest(self, node: ast.AST) -> str:
        return digest(node, self.memo.canonical)

    def run(self) -> dict[str, PathFunction]:
        while True:
            while self.work:
                ident, rel, node, self_cls, why, read = self.work.pop(0)
                if ident not in self.found:
                    line = 1 if isinstance(node, ast.Module) else getattr(node, "lineno", 0)
                    fingerprint = self.srt.module(rel).readings.per_node("digest", node, self.digest)
                    self.found[ident] = PathFunction(ident, rel, line, fingerprint, isinstance(node, ast.Module), why)
                if read:
                    self.followed_files.add(rel)
                    self.read(ident, rel, node, self_cls)
            for rel in self.reached_files():  # new unresolved names reach the whole files' definitions too
                if f"{rel}:{WHOLE_FILE}" in self.found:
                    self.add_definitions(rel, self.srt.module(rel))
            if not self.whole_files():
                break
        return dict(sorted(self.found.items(), key=lambda p: (p[1].whole, p[0])))


def paths_files(files: Mapping[str, str],
                classes: Iterable[str]) -> tuple[set[str], dict[str, dict[str, PathFunction]]]:
    """(the files the paths of these cache classes read, all together; the path of each), the
    classes' walks sharing one reading of the tree: each file is parsed, and each name resolved,
    once. What a walk finds in what another already read is what it would have read itself, so
    the union is each class's own walk's files, and each path its own walk's."""
    srt = Srt(files, TreeMemo())
    with gc_paused():
        paths = {cls: _walk(files, cls, srt).found for cls in classes}
    return srt.parsed(), paths


# The paths last computed, by (cache class, digest of the files): a tree's path is asked for by
# reading the tree (locate.read_path_files), by its shape and by the report, and takes seconds.
# A pure function's results keyed by the content itself: an edit is a different key.
_RECENT: "OrderedDict[tuple[str, str], dict[str, PathFunction]]" = OrderedDict()
_RECENT_SIZE = 8


def _key(files: Mapping[str, str], cache_class: str) -> tuple[str, str]:
    h = hashlib.sha256()
    for rel in sorted(files):
        h.update(rel.encode() + b"\0" + files[rel].encode("utf-8", "replace") + b"\0")
    return cache_class, h.hexdigest()


def remember(files: Mapping[str, str], cache_class: str, path: dict[str, PathFunction]) -> None:
    """Record the path of these files (computed over a lazy tree whose reach they are)."""
    _RECENT[_key(files, cache_class)] = path
    while len(_RECENT) > _RECENT_SIZE:
        _RECENT.popitem(last=False)


def prefetch_path(files: Mapping[str, str], cache_class: str) -> dict[str, PathFunction]:
    """Every piece of the prefetch path of `cache_class` in these files (path below sglang/srt ->
    text; any srt file the path reaches, protocol files or not), by ident: the specific pieces
    first, then the whole files."""
    if isinstance(files, dict):
        key = _key(files, cache_class)
        if key in _RECENT:
            return dict(_RECENT[key])
        path = _walk(files, cache_class).found
        remember(files, cache_class, path)
        return dict(path)
    return _walk(files, cache_class).found


def _walk(files: Mapping[str, str], cache_class: str, srt: Optional[Srt] = None) -> _Walk:
    with gc_paused():
        return _walk_paused(files, cache_class, srt)


def _walk_paused(files: Mapping[str, str], cache_class: str, srt: Optional[Srt]) -> _Walk:
    walk = _Walk(files, cache_class, srt)
    cache_file = CACHE_FILES.get(cache_class)
    cache_module = walk.srt.module(cache_file)
    roots: list[tuple[Ty, tuple[str, ...]]] = []
    if cache_module is not None and cache_class in cache_module.classes:
        roots.append((Ty("inst", walk.cache, exact=True), CACHE_ENTRIES))
    for rel in CONTROLLER_FILES:
        module = walk.srt.module(rel)
        for name in sorted(module.classes) if module else ():
            if name.endswith("CacheController"):
                roots.append((Ty("inst", Sym("class", rel, name)), CONTROLLER_ENTRIES))
    for rel, name, entries in OTHER_ENTRIES:
        module = walk.srt.module(rel)
        if module is not None and name in module.classes:
            roots.append((Ty("inst", Sym("class", rel, name)), entries))
    scheduler = walk.srt.module(SCHEDULER)
    if scheduler is not None and SCHEDULER_CLASS in scheduler.classes:
        roots.append((Ty("inst", walk.scheduler, exact=True), SCHEDULER_ENTRIES))
    walk.by_name = [ty for ty, _ in roots]
    for ty, entries in roots:
        walk.add_class(ty.sym)
        for name in entries:
            found, _ = walk.types.methods(Ty("inst", ty.sym, exact=True), name)
            for cls, node in found:
                walk.add_method(cls, node, ty, entry=True)
    for rel in (cache_file, *CONTROLLER_FILES):
        module = walk.srt.module(rel)
        for name in WHOLE_CLASSES:
            if module is not None and name in module.classes:
                walk.add_class(Sym("class", rel, name))
    walk.found = walk.run()
    return walk
