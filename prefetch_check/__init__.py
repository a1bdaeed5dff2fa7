"""prefetch-check: a model checker for SGLang HiCache's storage prefetch protocol."""

from explorer.limits import Limits
from explorer.result import BOUNDED, NOT_APPLICABLE, VERIFIED, VIOLATED, CheckResult
from model.config import Config, RequestSpec, uniform_config
from prefetch_check.api import build_model, check, compare

__all__ = [
    "BOUNDED", "NOT_APPLICABLE", "VERIFIED", "VIOLATED", "CheckResult", "Config", "Limits",
    "RequestSpec", "build_model", "check", "compare", "uniform_config",
]
