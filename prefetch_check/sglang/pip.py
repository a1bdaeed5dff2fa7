"""Running pip as a subprocess of this Python (never installing): `pip index versions`, `pip download`.

The runner is a plain callable so that tests can stand in a fake index without a network.
"""

from __future__ import annotations

import subprocess
import sys
from typing import Callable, Sequence

Runner = Callable[[Sequence[str]], subprocess.CompletedProcess]
PIP_TIMEOUT = 300  # seconds: one wheel of ~40 MB on a slow link


def run_pip(args: Sequence[str]) -> subprocess.CompletedProcess:
    """`python -m pip ARGS`, output captured; a timeout is reported like a failed run."""
    cmd = [sys.executable, "-m", "pip", "--disable-pip-version-check", *args]
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=PIP_TIMEOUT)
    except subprocess.TimeoutExpired:
        return subprocess.CompletedProcess(cmd, 124, "", f"pip did not answer within {PIP_TIMEOUT} s")


def last_error_line(result: subprocess.CompletedProcess) -> str:
    """The most telling line of pip's stderr (its ERROR line, else the last non-warning line)."""
    lines = [l.strip() for l in (result.stderr or "").splitlines() if l.strip()]
    errors = [l for l in lines if l.startswith("ERROR")]
    others = [l for l in lines if not l.startswith("WARNING")]
    return (errors or others or ["no output"])[-1]
