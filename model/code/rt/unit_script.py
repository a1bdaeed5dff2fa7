"""A unit-level reproduction (docs/repro/*.py), run in the child against a tree: the script a
maintainer runs with SGLang installed, here with the tree's prefetch-path files imported as the
executor imports them (the world's files as written, stubs for the rest) but without its hooks
and probes: no run of ours is active, and the script drives the threads itself.

Its answer: the exit status (0 when the fault did not show, 1 when it did, as the scripts say),
what it printed, and the last lines of a traceback if it raised."""

from __future__ import annotations

import contextlib
import io
import runpy
import sys
import traceback
from pathlib import Path


class _OneRank:
    """torch.distributed for a script: one rank and no collective (the scripts replace the
    methods that reduce over ranks, as SGLang's own unit tests do)."""

    def get_world_size(self, group=None):
        return 1

    def get_rank(self, group=None):
        return 0

    def all_reduce(self, *args, **kwargs):
        raise RuntimeError("a unit-level script runs one rank: replace the method that reduces over ranks")

    barrier = isend = recv = get_process_group_ranks = all_reduce


def run(path: str) -> dict:
    """Run the script at `path` as `__main__`; its exit status and output."""
    out = io.StringIO()
    status, error = 0, ""
    argv, search = sys.argv, list(sys.path)
    sys.argv = [path]
    sys.path.insert(0, str(Path(path).resolve().parent))  # as `python SCRIPT` does: its folder's modules
    try:
        with contextlib.redirect_stdout(out):
            runpy.run_path(path, run_name="__main__")
    except SystemExit as stop:
        code = stop.code
        status = code if isinstance(code, int) else (0 if code is None else 1)
        if code is not None and not isinstance(code, int):
            out.write(f"{code}\n")
    except BaseException:  # the script's own failure is its answer, not the child's
        status, error = 2, traceback.format_exc(limit=-8)
    finally:
        sys.argv, sys.path[:] = argv, search
    return {"exit": status, "stdout": out.getvalue(), "error": error}


def answer(srt: str, world: str, path: str) -> dict:
    """Import the tree's files of `world` (its pack's `imports`: stubs for the rest, no probes),
    then run the script: {"script": run's answer}, or {"error"} when the world imports nothing
    plain or the tree does not load."""
    from prefetch_check.model.code.pack import pack
    from prefetch_check.model.code.rt import stubs
    from prefetch_check.model.code.stand_ins.torch_stub import make_torch

    found = pack(world)
    if found.imports is None:
        return {"error": f"the {world} world has no plain import for unit-level scripts"}
    roots = (str(Path(srt).resolve()) + "/",)
    try:
        found.imports(Path(srt), make_torch(_OneRank(), stubs.not_modelled_factory(roots)), roots)
    except Exception as exc:
        return {"error": f"the tree does not load under the executor's stubs: {type(exc).__name__}: {exc}"}
    return {"script": run(path)}
