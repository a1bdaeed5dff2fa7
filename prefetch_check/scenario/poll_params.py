"""The predicate-poll protocol's scenario parameters (declared in schema.py, built in parameters.py)."""

from prefetch_check.scenario.parameters import build_config  # noqa: F401
from prefetch_check.scenario.schema import GLOBAL, REQUEST, REQUESTS  # noqa: F401
