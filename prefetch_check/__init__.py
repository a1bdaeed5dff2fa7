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


from prefetch_check.explorer.limits import Limits
from prefetch_check.explorer.result import BOUNDED, NOT_APPLICABLE, VERIFIED, VIOLATED, CheckResult
from prefetch_check.model.config import Config, RequestSpec, uniform_config
from prefetch_check.api import build_model, check, compare

__all__ = [
    "BOUNDED", "NOT_APPLICABLE", "VERIFIED", "VIOLATED", "CheckResult", "Config", "Limits",
    "RequestSpec", "build_model", "check", "compare", "uniform_config",
]
