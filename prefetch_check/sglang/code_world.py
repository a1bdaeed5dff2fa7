"""Which executor world a tree's code runs in, read from the classes and threads the tree has
(with `ast`, nothing imported). Each protocol's SGLang mapping (mappings/<protocol>/mapping.py)
names the cache class its world runs and asks for what it runs to be present (`runs`); a tree
with a thread the world has no place for is not that world's. Nothing here reads an absence as a
value: a tree that has what no world runs gets no world, and says what was looked for."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Optional

from prefetch_check.sglang.locate import CONTROLLER
from prefetch_check.sglang.mappings import judged_file, mappings


def _classes(path: Path) -> dict[str, ast.ClassDef]:
    if not path.is_file():
        return {}
    try:
        tree = ast.parse(path.read_text(encoding="utf-8", errors="replace"))
    except SyntaxError:
        return {}
    return {node.name: node for node in tree.body if isinstance(node, ast.ClassDef)}


def methods(cls: Optional[ast.ClassDef]) -> dict[str, ast.FunctionDef]:
    """The methods a class defines itself, by name (none for no class)."""
    if cls is None:
        return {}
    return {n.name: n for n in cls.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}


def starts_io_thread(fn: Optional[ast.FunctionDef]) -> bool:
    """`threading.Thread(target=self.prefetch_io_aux_func, ...)` inside the function."""
    for node in ast.walk(fn) if fn is not None else ():
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "Thread":
            for kw in node.keywords:
                if kw.arg == "target" and isinstance(kw.value, ast.Attribute) and kw.value.attr == "prefetch_io_aux_func":
                    return True
    return False


def world_of(srt: Path, judged_class: Optional[str]) -> tuple[Optional[str], str]:
    """(the protocol whose world runs the tree, '') for a tree the executor runs, else (None, why not).
    Each mapping with this judged class is asked in turn, with the class from its `judged_file`
    and the classes of the controller file (its `runs` says what it needs of them)."""
    srt = Path(srt)
    runners = [m for m in mappings() if m.judged_class and judged_file(m)]
    if judged_class not in {c for m in runners for c in (m.judged_class,) + m.other_classes}:
        classes = " or ".join(dict.fromkeys(m.judged_class for m in runners))
        return None, f"the executor runs {classes}; this row judges {judged_class or 'no class'}"
    controllers = _classes(srt / CONTROLLER)
    reasons = []
    for m in runners:
        if not judged_file(m, judged_class):
            continue
        cache = _classes(srt / judged_file(m, judged_class)).get(judged_class)
        why = m.runs(cache, controllers) if cache is not None else f"the tree has no {judged_class} class to run"
        if not why:
            return m.protocol, ""
        reasons.append(why)
    reasons += [f"the {m.protocol} world runs {m.judged_class} only" for m in runners if not judged_file(m, judged_class)]
    return None, "; ".join(dict.fromkeys(reasons))


def own_class(srt: Path) -> Optional[str]:
    """The judged class of a mapping that names its own file (a protocol the HiCache detector
    does not read: its class is found where its mapping says), when the tree has it."""
    for m in mappings():
        if m.judged_file and m.judged_class in _classes(Path(srt) / m.judged_file):
            return m.judged_class
    return None


def own_files() -> tuple[str, ...]:
    """The files the mappings name for their judged classes beyond the HiCache protocol files."""
    return tuple(dict.fromkeys(m.judged_file for m in mappings() if m.judged_file))
