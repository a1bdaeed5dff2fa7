"""Why each statement of the prefetch path that no check ran was left out.

Why its own module: issue 29 asks that every statement of the path the code engine does not run be
named with its reason, not only counted. The path (path_code.py) is what the honest floor
fingerprints, so it reaches far beyond the files the executor loads: every file an untyped call
may reach is taken whole (the storage backends, the pools and allocators, the tree's core). A
statement left out is one of:

- in a file no case loads: the concept it implements is stood in or stubbed by the worlds
  (FILE_REASONS: the storage backends, the host pools, the device pools, the radix tree, ...);
- in a function of a loaded file that no case enters: a method a subclass the cases run
  overrides (`overridden`), or coverage_report.known_why names the world that would reach it
  where one is known, else "no case calls it";
- inside a function a case entered: the innermost block around it that no case ran says why
  (a branch not taken, an exception not raised, a loop body not run), or every case returns or
  raises before it.
"""

from __future__ import annotations

from collections import Counter
from fnmatch import fnmatch
from typing import Iterable

from prefetch_check.sglang.statements import Statement

STOOD_IN = "not loaded: "  # the prefix of every file reason (the docs' table groups by it)
FILE_REASONS: tuple[tuple[tuple[str, ...], str], ...] = (
    (("mem_cache/storage/lmcache/*",),
     "another cache class (LMCache's subclass of the cache, reached through its overrides)"),
    (("mem_cache/storage/*", "mem_cache/embedding_store.py", "mem_cache/l2_transfer.py"),
     "a storage backend or its client: the worlds' storage is a stand-in (stand_ins/storage.py); "
     "the backends need their services and client libraries"),
    (("mem_cache/pool_host/*", "mem_cache/memory_pool_host.py", "mem_cache/host_memory.py",
      "mem_cache/mla_host_dedup.py"),
     "a host KV pool: stood in (stand_ins/host_pool.py, shared_arena.py, sidecar_pools.py); "
     "its buffers are pinned torch tensors"),
    (("mem_cache/unified_cache/*", "mem_cache/rust_tree_core/*", "mem_cache/radix_cache.py",
      "mem_cache/evict_policy.py", "mem_cache/base_prefix_cache.py", "mem_cache/cpp_utils/*"),
     "the radix tree and its components: stood in (stand_ins/tree.py, sidecar_components.py)"),
    (("mem_cache/allocator/*", "mem_cache/*pool*.py", "mem_cache/layout/*", "mem_cache/page_interleave*.py",
      "mem_cache/kv_vmm_backing.py", "mem_cache/deepseek_v4*.py", "mem_cache/mamba_*.py",
      "mem_cache/hybrid_cache/*assembler.py", "mem_cache/*sizing.py", "mem_cache/*budget.py",
      "mem_cache/kv_cache_*.py", "mem_cache/dsa_cache_layer_split.py", "mem_cache/index_key_cache.py",
      "mem_cache/dsv41_request_window.py", "mem_cache/multi_ended_allocator.py", "mem_cache/allocator.py"),
     "a device memory pool or allocator: the worlds hold no device memory (GPU tensors)"),
    (("hardware_backend/*",), "an NPU or MLX hardware backend: the worlds run on the CPU"),
    (("distributed/*",), "collectives and communicators: stood in (stand_ins/collectives.py, p2p.py)"),
)
ELSEWHERE = ("the model runner, server configuration or a utility the path reaches by name: "
             "not the protocol; the worlds stub it (rt/stubs.py)")

NO_CALLER = "never entered: no case calls it"
OVERRIDDEN = "never entered: a subclass the cases build overrides it, and its own definition runs"
BLOCKS = {"If": "a branch no case takes", "except": "an exception no case raises (its except)",
          "For": "a loop body no case runs", "While": "a loop body no case runs",
          "Try": "a try no case leaves without an exception", "case": "a match case no case matches",
          "With": "a with every case raises entering", "AsyncFor": "a loop body no case runs",
          "AsyncWith": "a with every case raises entering", "FunctionDef": "a nested function no case calls",
          "AsyncFunctionDef": "a nested function no case calls", "ClassDef": "a nested class no case builds"}
EARLY = "after a return, raise or break every case takes first"


def file_reason(rel: str) -> str:
    """Why no case loads a file of the path (one reason per concept the worlds stand in for)."""
    for patterns, why in FILE_REASONS:
        if any(fnmatch(rel, p) for p in patterns):
            return STOOD_IN + why
    return STOOD_IN + ELSEWHERE


def function_reason(known: str) -> str:
    """Why no case enters a function of a file that runs (`known`: coverage_report.known_why)."""
    return f"never entered: {known}" if known else NO_CALLER


def overridden(name: str, bases: dict[str, tuple[str, ...]], entered: set[str]) -> str:
    """For `name` ("Class.method") that no case entered: OVERRIDDEN when a subclass of Class
    (`bases`: class name -> its base classes' names, over the path's files) defines the method and a
    case entered that definition (`overriding`): the worlds build the subclass, so the base's method
    is dead there, not missed. "" when none does. One text for all, so the tables group them."""
    return OVERRIDDEN if overriding(name, bases, entered) else ""


def overriding(name: str, bases: dict[str, tuple[str, ...]], entered: set[str]) -> list[str]:
    """The entered definitions ("Subclass.method") that override `name` in a subclass of its class."""
    cls, _, method = name.rpartition(".")
    if not cls or "." in cls:
        return []
    return sorted(f"{sub}.{method}" for sub in _subclasses(cls, bases) if f"{sub}.{method}" in entered)


def _subclasses(cls: str, bases: dict[str, tuple[str, ...]]) -> set[str]:
    out, todo = set(), [cls]
    while todo:
        base = todo.pop()
        for sub, its in bases.items():
            if base in its and sub not in out:
                out.add(sub)
                todo.append(sub)
    return out


def statement_reasons(own: list[Statement], ran: set[int]) -> Counter:
    """Per reason, how many statements of an entered function's body (`own`, as statements()
    yields them for the body) no case ran (`ran`: the raw lines the checks executed)."""
    covered_blocks: set[tuple] = set()
    missing = []
    for s in own:
        if s.covers(ran):
            for k in range(len(s.enclosing) + 1):
                covered_blocks.add(s.enclosing[k:])
        else:
            missing.append(s)
    reasons: Counter = Counter()
    for s in missing:
        reasons[_why_statement(s, covered_blocks)] += 1
    return reasons


def _why_statement(s: Statement, covered_blocks: set[tuple]) -> str:
    if s.kind in ("except", "case"):
        return BLOCKS[s.kind]
    chain = s.enclosing
    for k in range(len(chain) - 1, -1, -1):  # outermost block first
        kind = chain[k][0]
        if "." not in kind and kind not in ("except", "case"):
            continue  # the compound statement itself, around its except/case clauses: not a block
        if chain[k:] not in covered_blocks:
            return BLOCKS.get(kind.split(".")[0], EARLY)
    return EARLY


def tally(entries: Iterable[dict]) -> list[tuple[str, int, int]]:
    """(reason, statements, functions) over the per-function `left_out` of a --json report,
    most statements first: every statement of the path no check ran, once."""
    statements_by: Counter = Counter()
    functions_by: Counter = Counter()
    for f in entries:
        for why, n in (f.get("left_out") or {}).items():
            statements_by[why] += n
            functions_by[why] += 1
    return sorted(((why, n, functions_by[why]) for why, n in statements_by.items()), key=lambda t: (-t[1], t[0]))
