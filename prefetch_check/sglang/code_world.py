"""Which executor world a tree's code runs in, read from the classes and threads the tree has
(with `ast`, nothing imported). Each world asks for what it runs to be present; a tree with a
thread the world has no place for is not that world's. Nothing here reads an absence as a value:
a tree that has what neither world runs gets no world, and says what was looked for.

- ack-drain (harness.py): the judged class UnifiedRadixCache, a controller with the sync thread
  (`prefetch_sync_thread_func`) and `PrefetchAck` (0.5.19 on);
- poll (poll_harness.py): the judged class HiRadixCache polling `can_terminate_prefetch`, a
  HiCacheController whose `prefetch_thread_func` starts the IO thread itself
  (`threading.Thread(target=self.prefetch_io_aux_func)`), and no sync thread (0.5.1-0.5.18).
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Optional

from prefetch_check.sglang.locate import CACHE_FILES as FILES, CONTROLLER


def _classes(path: Path) -> dict[str, ast.ClassDef]:
    if not path.is_file():
        return {}
    try:
        tree = ast.parse(path.read_text(encoding="utf-8", errors="replace"))
    except SyntaxError:
        return {}
    return {node.name: node for node in tree.body if isinstance(node, ast.ClassDef)}


def _methods(cls: Optional[ast.ClassDef]) -> dict[str, ast.FunctionDef]:
    if cls is None:
        return {}
    return {n.name: n for n in cls.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}


def _starts_io_thread(fn: Optional[ast.FunctionDef]) -> bool:
    """`threading.Thread(target=self.prefetch_io_aux_func, ...)` inside the function."""
    for node in ast.walk(fn) if fn is not None else ():
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "Thread":
            for kw in node.keywords:
                if kw.arg == "target" and isinstance(kw.value, ast.Attribute) and kw.value.attr == "prefetch_io_aux_func":
                    return True
    return False


def world_of(srt: Path, judged_class: Optional[str]) -> tuple[Optional[str], str]:
    """(world, '') for a tree the executor runs, else (None, why not)."""
    srt = Path(srt)
    if judged_class not in FILES:
        return None, f"the executor runs UnifiedRadixCache or HiRadixCache; this row judges {judged_class or 'no class'}"
    cache = _classes(srt / FILES[judged_class]).get(judged_class)
    controllers = _classes(srt / CONTROLLER)
    base = controllers.get("HiCacheController")
    ctrl = _methods(base)
    if cache is None or base is None:
        return None, f"the tree has no {judged_class if cache is None else 'HiCacheController'} class to run"
    if judged_class == "UnifiedRadixCache":
        if "prefetch_sync_thread_func" in ctrl and "PrefetchAck" in controllers:
            return "ack-drain", ""
        return None, ("the executor runs the UnifiedRadixCache of the ack-drain path (PrefetchAck and the sync "
                      "thread prefetch_sync_thread_func); this tree's controller has neither")
    if "can_terminate_prefetch" not in _methods(cache):
        return None, "the poll world runs HiRadixCache.can_terminate_prefetch, which this tree's HiRadixCache does not define"
    if "prefetch_sync_thread_func" in ctrl:
        return None, ("this HiRadixCache's controller runs the sync thread (prefetch_sync_thread_func), which the "
                      "poll world has no place for, and the ack-drain world runs UnifiedRadixCache only")
    if not _starts_io_thread(ctrl.get("prefetch_thread_func")):
        return None, ("the poll world runs the IO thread prefetch_thread_func starts itself "
                      "(threading.Thread(target=self.prefetch_io_aux_func)); this tree starts it elsewhere")
    return "poll", ""
