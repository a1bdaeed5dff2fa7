"""The code of a tree's prefetch path, function by function, each with a fingerprint.

Why: the model answers for a tree through the few features the detector reads
(detect.py); everything the patterns do not look at is taken to be the code of
a release the model was checked against. That holds only where the tree's code IS that
code, so every function of the prefetch path is fingerprinted here and compared with the
releases the model follows (followed.py); one that differs from all of them means the
verdicts would be about code nobody read.

The path is found in the tree itself: the entry points below (issue, the prefetch, IO and
sync threads, the drain, the check, termination, result, abort, revoke and release paths,
in the judged cache class and the controller classes; the operation and ACK classes whole),
then everything they reach: a method of a path class called by name (`self.x(...)`,
`cc.x(...)`), a module-level function, class, constant or import that a path function names,
followed across the protocol files by their imports. An edit in a helper is therefore seen
wherever it is called from, and a helper that no release has differs from all of them.

A fingerprint is a digest of the function's `ast` without docstrings, so formatting and
comments do not count and every other change does. The completion predicate is part of the
path like every other function: its loader (model/source/predicate.py) reads only what a
rank brings to the vote, not whether every rank reaches the vote, so an edited predicate is
judged on the model with `run --predicate-source`, not answered for the tree.
"""

from __future__ import annotations

import ast
import copy
from dataclasses import dataclass
from typing import Iterator, Mapping, Optional

from prefetch_check.sglang.code_digest import digest
from prefetch_check.sglang.locate import CACHE_FILES, CONTROLLER

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
)
# Classes taken whole, wherever a path file defines them.
WHOLE_CLASSES = ("PrefetchOperation", "PrefetchAck", "StorageOperation")
PACKAGE = "sglang.srt."


@dataclass(frozen=True)
class PathFunction:
    """One piece of the path: `ident` is file:Class.method, file:Class, file:function or
    file:<module>.name (a module-level binding); `line` is where it starts in the tree."""

    ident: str
    file: str
    line: int
    digest: str

    @property
    def name(self) -> str:
        return self.ident.partition(":")[2]

    def where(self) -> str:
        return f"{self.file}:{self.line}"


class _Module:
    """One parsed protocol file: its top-level bindings, by name."""

    def __init__(self, rel: str, text: str):
        self.rel = rel
        self.tree = ast.parse(text)
        self.classes = {n.name: n for n in self.tree.body if isinstance(n, ast.ClassDef)}
        self.bindings: dict[str, ast.stmt] = {}
        for stmt in self.tree.body:
            for name in _bound_names(stmt):
                self.bindings[name] = stmt  # the last binding wins, as at import time

    def methods(self, cls: str) -> dict[str, ast.AST]:
        node = self.classes.get(cls)
        if node is None:
            return {}
        return {n.name: n for n in node.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}


def _bound_names(stmt: ast.stmt) -> Iterator[str]:
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        yield stmt.name
    elif isinstance(stmt, (ast.Import, ast.ImportFrom)):
        for alias in stmt.names:
            yield (alias.asname or alias.name).split(".")[0]
    elif isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        for target in targets:
            for n in ast.walk(target):
                if isinstance(n, ast.Name):
                    yield n.id
    elif isinstance(stmt, (ast.If, ast.Try)):  # `try: import x except ImportError: ...` and the like
        for part in ast.iter_child_nodes(stmt):
            if isinstance(part, ast.stmt):
                yield from _bound_names(part)
            elif isinstance(part, ast.ExceptHandler):
                for inner in part.body:
                    yield from _bound_names(inner)


def _header(cls: ast.ClassDef) -> ast.ClassDef:
    """A class without its methods: bases, decorators, class attributes."""
    out = copy.copy(cls)
    out.body = [n for n in cls.body if not isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))] or [ast.Pass()]
    return out


def _called_names(node: ast.AST) -> set[str]:
    """`x` of every call `x(...)` or `obj.x(...)` below node."""
    out = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Call):
            f = n.func
            if isinstance(f, ast.Attribute):
                out.add(f.attr)
            elif isinstance(f, ast.Name):
                out.add(f.id)
    return out


def _named(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _module_file(module: Optional[str], level: int, importer: str) -> Optional[str]:
    """The protocol file an import names (`sglang.srt.a.b` -> a/b.py), if it is one."""
    if module is None:
        return None
    if level:
        base = importer.split("/")[:-level]
        return "/".join(base + module.split(".")) + ".py"
    if module.startswith(PACKAGE):
        return module[len(PACKAGE):].replace(".", "/") + ".py"
    return None


def prefetch_path(files: Mapping[str, str], cache_class: str) -> dict[str, PathFunction]:
    """Every piece of the prefetch path of `cache_class` in these protocol files (path below
    sglang/srt -> text), by ident."""
    modules = {}
    for rel, text in files.items():
        try:
            modules[rel] = _Module(rel, text)
        except SyntaxError:
            continue
    cache_file = CACHE_FILES.get(cache_class)
    path_classes: list[tuple[str, str]] = []  # (file, class) whose methods a call by name reaches
    if cache_file in modules and cache_class in modules[cache_file].classes:
        path_classes.append((cache_file, cache_class))
    for rel in CONTROLLER_FILES:
        if rel in modules:
            path_classes += [(rel, c) for c in modules[rel].classes if c.endswith("CacheController")]

    found: dict[str, PathFunction] = {}
    work: list[tuple[str, str, ast.AST]] = []  # (ident, file, node)

    def add(ident: str, rel: str, node: ast.AST) -> None:
        if ident not in found and all(ident != w[0] for w in work):
            work.append((ident, rel, node))

    def add_method(rel: str, cls: str, name: str) -> None:
        node = modules[rel].methods(cls).get(name)
        if node is not None:
            add(f"{rel}:{cls}.{name}", rel, node)

    def add_binding(rel: str, name: str) -> None:
        module = modules.get(rel)
        stmt = module.bindings.get(name) if module else None
        if stmt is None:
            return
        if (rel, name) in path_classes:  # its methods count one by one; here only its header
            add(f"{rel}:{name}", rel, _header(stmt))
            return
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            add(f"{rel}:{name}", rel, stmt)
            return
        add(f"{rel}:<module>.{name}", rel, stmt)
        if isinstance(stmt, ast.ImportFrom):
            source = _module_file(stmt.module, stmt.level, rel)
            for alias in stmt.names:
                if (alias.asname or alias.name) == name and source in modules:
                    add_binding(source, alias.name)

    for rel, cls in path_classes:
        for name in CACHE_ENTRIES if (rel, cls) == (cache_file, cache_class) else CONTROLLER_ENTRIES:
            add_method(rel, cls, name)
    for rel, module in modules.items():
        if rel in CONTROLLER_FILES or rel == cache_file:
            for name in WHOLE_CLASSES:
                if name in module.classes:
                    add(f"{rel}:{name}", rel, module.classes[name])

    while work:
        ident, rel, node = work.pop(0)
        found[ident] = PathFunction(ident, rel, getattr(node, "lineno", 0), digest(node))
        for name in sorted(_called_names(node)):
            for prel, cls in path_classes:
                add_method(prel, cls, name)
        for name in sorted(_named(node)):
            add_binding(rel, name)
    return dict(sorted(found.items()))
