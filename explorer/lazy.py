"""Names of a package that are imported on first use (PEP 562), so that importing the package
costs nothing until a name is asked for: the start-up of every command depends on it."""

from __future__ import annotations

import importlib
import sys
from typing import Callable, Mapping


def lazy_names(package: str, where: Mapping[str, str], public: list[str]) -> tuple[Callable, Callable]:
    """The module-level `__getattr__` and `__dir__` of `package`: a name in `where` is read from
    the submodule `where[name]` the first time, then kept in the package."""

    def __getattr__(name: str):
        if name not in where:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{where[name]}"), name)
        sys.modules[package].__dict__[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(sys.modules[package].__dict__) | set(public))

    return __getattr__, __dir__
