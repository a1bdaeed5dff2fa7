"""Loading the tree's own prefetch-path files in the child process: a meta-path finder serves
`sglang.*` from the tree for the files a world runs as written (its pack's `files`) and a stub module for everything else, and
`torch`/`msgspec` from the stand-ins. After loading, each real module's bindings of Queue,
Empty, threading and time are pointed at the run's stand-ins (the files bind them at import)."""

from __future__ import annotations

import importlib.abc
import importlib.util
import sys
import types
from pathlib import Path

from prefetch_check.model.code.rt import stubs
from prefetch_check.model.code.stand_ins import msgspec_stub


def module_name(rel: str) -> str:
    return "sglang.srt." + rel[:-3].replace("/", ".")


class TreeFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def __init__(self, srt: Path, extra: dict[str, types.ModuleType], real: tuple[str, ...]):
        self.srt, self.extra = srt, extra
        self.roots = (str(srt) + "/",)
        self.real = {module_name(rel): srt / rel for rel in real if (srt / rel).is_file()}
        self.known: dict[str, dict] = {}

    def find_spec(self, fullname, path=None, target=None):
        if fullname in self.real:
            return importlib.util.spec_from_file_location(fullname, self.real[fullname])
        if fullname in self.extra or fullname == "sglang" or fullname.startswith("sglang."):
            return importlib.util.spec_from_loader(fullname, self, is_package=True)
        return None

    def create_module(self, spec):
        if spec.name in self.extra:
            return self.extra[spec.name]
        return stubs.StubModule(spec.name, self.known.get(spec.name, {}), self.roots)

    def exec_module(self, module):
        return None


def load_tree(srt: Path, torch_module: types.ModuleType, real: tuple[str, ...], first: str = "",
              known_extra: dict | None = None) -> dict[str, types.ModuleType]:
    """Import the tree's real files (`real`, a world's: below sglang/srt, those a release lacks are
    stubbed like the rest) under stubs; {rel: module} of those present. `first`: a file of `real`
    imported before the stubs are made, whose module the stubs' known names are taken from (the
    ack-drain world's component types); `known_extra`: more stand-in names per stub module."""
    srt = Path(srt).resolve()
    finder = TreeFinder(srt, {"torch": torch_module, "torch.distributed": torch_module.distributed,
                              "msgspec": msgspec_stub.make_msgspec()}, real)
    sys.meta_path.insert(0, finder)
    ct = None
    if first and module_name(first) in finder.real:
        ct = importlib.import_module(module_name(first))
    finder.known = stubs.known(ct)
    for name, names in (known_extra or {}).items():
        finder.known[name] = {**finder.known.get(name, {}), **names}
    loaded = {}
    for rel in real:
        if module_name(rel) in finder.real:
            loaded[rel] = importlib.import_module(module_name(rel))
    return loaded


def bind_world(modules: dict[str, types.ModuleType], queue_factory, empty, threading_mod, time_mod) -> None:
    """Point each real module's import-time bindings at this run's stand-ins."""
    for mod in modules.values():
        g = mod.__dict__
        if "Queue" in g:
            g["Queue"] = queue_factory
        if "Empty" in g:
            g["Empty"] = empty
        if "threading" in g:
            g["threading"] = threading_mod
        if "time" in g:
            g["time"] = time_mod
