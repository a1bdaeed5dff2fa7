"""prefetch-check: a model checker for SGLang HiCache's storage prefetch protocol.

Everything importable lives in this one package. The protocol models (`model/`) and the
generic search (`explorer/`) keep their own top-level folders in the source tree and are
installed as `prefetch_check.model` and `prefetch_check.explorer` (pyproject.toml maps
them); in a source checkout that is not installed they are found beside this folder.
"""

import os as _os

_here = _os.path.dirname(__file__)
_root = _os.path.dirname(_here)
if not _os.path.isdir(_os.path.join(_here, "model")) and _os.path.isfile(_os.path.join(_root, "model", "__init__.py")):
    __path__.append(_root)  # a checkout: prefetch_check.model is ../model, prefetch_check.explorer ../explorer


def _version() -> str:
    """The version pyproject.toml gives (its one source), as the installed metadata records it;
    in a checkout that is not installed, read from pyproject.toml itself.

    The metadata is found the way importlib.metadata finds it (the first
    `prefetch_check-*.dist-info` on sys.path), read without importing importlib.metadata,
    which alone costs more than a whole `--version` may (issue 23: start-up)."""
    import sys

    for entry in sys.path:
        try:
            names = _os.listdir(entry or ".")
        except OSError:
            continue
        for name in names:
            if name.startswith("prefetch_check-") and name.endswith(".dist-info"):
                try:
                    with open(_os.path.join(entry or ".", name, "METADATA"), encoding="utf-8") as f:
                        for line in f:
                            if line.startswith("Version:"):
                                return line.split(":", 1)[1].strip()
                            if not line.strip():
                                break  # the end of the headers
                except OSError:
                    pass
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("prefetch-check")
    except PackageNotFoundError:
        import tomllib

        try:
            with open(_os.path.join(_root, "pyproject.toml"), "rb") as f:
                return tomllib.load(f)["project"]["version"]
        except (OSError, KeyError, tomllib.TOMLDecodeError):
            return "unknown"


# The public API, imported on first use (PEP 562): `import prefetch_check` (and every command of
# the CLI, which imports only what it uses) does not pay for networkx, the viewers, the scenario
# loader and the search until a name is asked for. `from prefetch_check import check` works as before.
_LAZY = {
    "Limits": "prefetch_check.explorer.limits",
    "BOUNDED": "prefetch_check.explorer.result",
    "NOT_APPLICABLE": "prefetch_check.explorer.result",
    "VERIFIED": "prefetch_check.explorer.result",
    "VIOLATED": "prefetch_check.explorer.result",
    "CheckResult": "prefetch_check.explorer.result",
    "Config": "prefetch_check.model.protocols.poll.config",
    "RequestSpec": "prefetch_check.model.protocols.poll.config",
    "uniform_config": "prefetch_check.model.protocols.poll.config",
    "Checker": "prefetch_check.checker",
    "build_model": "prefetch_check.api",
    "check": "prefetch_check.api",
    "compare": "prefetch_check.api",
    "render": "prefetch_check.explorer.view.render",
}

__all__ = [
    "BOUNDED", "NOT_APPLICABLE", "VERIFIED", "VIOLATED", "CheckResult", "Checker", "Config", "Limits",
    "RequestSpec", "__version__", "build_model", "check", "compare", "render", "uniform_config",
]


def __getattr__(name: str):
    if name == "__version__":
        value = _version()
    elif name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(_LAZY[name]), name)
    else:
        raise AttributeError(f"module 'prefetch_check' has no attribute {name!r}")
    globals()[name] = value  # asked once
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
