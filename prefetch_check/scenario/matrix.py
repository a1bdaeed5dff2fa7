"""`[matrix]`: one run per combination of the listed values, in a fixed order.

    [matrix]
    ranks = [1, 2]
    policy = ["wait_complete", "timeout"]

gives four cases, `ranks` varying slowest (the order the keys are written in).
A key is either set at the top level or swept here, never both.
"""

from __future__ import annotations

import itertools

from prefetch_check.scenario.parameters import ValueProblem
from prefetch_check.scenario.schema import MAX_CASES
from prefetch_check.scenario.errors import did_you_mean


def check_matrix(matrix, top: dict, has_request_tables: bool, schema) -> dict:
    """Validate the shape of `[matrix]` (the values themselves are checked per case)."""
    if not isinstance(matrix, dict):
        raise ValueProblem(("matrix",), "matrix must be a table: [matrix] followed by `parameter = [values]` lines")
    size = 1
    for key, values in matrix.items():
        if key not in schema.parameters:
            raise ValueProblem(("matrix", key), f"unknown parameter {key!r} in [matrix]" + did_you_mean(key, schema.parameters))
        if key in top:
            raise ValueProblem(
                ("matrix", key), f"{key!r} is set both at the top level and in [matrix]; keep one (the matrix sweeps it)"
            )
        if has_request_tables and key in schema.shorthand:
            raise ValueProblem(
                ("matrix", key), f"[matrix] cannot sweep {key!r} when [[request]] tables describe the requests"
            )
        if not isinstance(values, list) or not values:
            raise ValueProblem(("matrix", key), f"matrix.{key} must be a non-empty list of values, e.g. {key} = [1, 2]")
        size *= len(values)
    if size > MAX_CASES:
        raise ValueProblem(("matrix",), f"the matrix makes {size} cases; at most {MAX_CASES} are allowed per scenario")
    return matrix


def expand(matrix: dict) -> list[dict]:
    """Every combination as {key: value}; [{}] when there is no matrix."""
    keys = list(matrix)
    return [dict(zip(keys, combo)) for combo in itertools.product(*(matrix[k] for k in keys))]


def case_label(choice: dict) -> str:
    """`ranks=2, policy=timeout`: how a case is named in reports."""
    return ", ".join(f"{k}={value_text(v)}" for k, v in choice.items())


def value_text(value) -> str:
    """A matrix value as a case's label writes it: `true`, `2`, `unified`."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {value_text(v)}" for k, v in value.items()) + "}"
    return str(value)
