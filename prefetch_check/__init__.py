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
    in a checkout that is not installed, read from pyproject.toml itself."""
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


__version__ = _version()

from prefetch_check.explorer.limits import Limits
from prefetch_check.explorer.result import BOUNDED, NOT_APPLICABLE, VERIFIED, VIOLATED, CheckResult
from prefetch_check.model.protocols.poll.config import Config, RequestSpec, uniform_config
from prefetch_check.api import build_model, check, compare
from prefetch_check.explorer.view import render

__all__ = [
    "BOUNDED", "NOT_APPLICABLE", "VERIFIED", "VIOLATED", "CheckResult", "Config", "Limits",
    "RequestSpec", "__version__", "build_model", "check", "compare", "render", "uniform_config",
]
