"""The parent's side: start the child (`python -I`, a fresh temporary folder it removes whatever the
child left there: rt/scratch.py, CPU and memory caps, no network), hand it the request, enforce the
wall-clock timeout, read the answer. The checker's own process never imports the tree's code."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Optional

from prefetch_check.model.code.config import CodeConfig, CodeLimits, CodeResult
from prefetch_check.model.code.rt import bytecode
from prefetch_check.model.code.rt.scratch import SCRATCH_ENV, memory_fs

GRACE_SECONDS = 30.0  # beyond the search's own time limit: loading, judging, exiting


class ExecutorError(RuntimeError):
    """The child could not run the tree (it does not load, it was killed, it timed out)."""


def _registered(world: str) -> dict:
    """A protocol registered at run time (a test's own) is unknown to the child, a fresh
    interpreter: its descriptor (plain strings) and the folders its modules import from go with
    the request, and the child registers it before anything asks for its world."""
    from prefetch_check.model.protocols import registry

    found = registry.descriptor(world)
    if found is None or registry.is_builtin(world):
        return {}
    fields = dataclasses.asdict(found)
    tops = {v.partition(":")[0].split(".")[0] for v in fields.values() if isinstance(v, str) and v and ":" in v}
    paths = set()
    for top in tops - {"prefetch_check"}:
        spec = importlib.util.find_spec(top)
        if spec is not None and spec.submodule_search_locations:
            paths.add(str(Path(next(iter(spec.submodule_search_locations))).resolve().parent))
    return {"descriptor": fields, "paths": sorted(paths)}


def _child(request: dict, wall_seconds: float) -> dict:
    world = request["config"].get("world", "")
    if _registered(world):
        request = {**request, "protocol": _registered(world)}
    code_cache = bytecode.cache_dir()
    if code_cache is not None:
        request = {**request, "bytecode": str(code_cache)}
    with tempfile.TemporaryDirectory(prefix="prefetch-check-exec-", dir=memory_fs()) as work:
        try:
            # -B: the child writes no __pycache__ into the tree under test (nothing outside its folder)
            proc = subprocess.run([sys.executable, "-I", "-B", "-m", "prefetch_check.model.code.child"],
                                  input=json.dumps(request), capture_output=True, text=True, cwd=work,
                                  timeout=wall_seconds, env={"PATH": "/usr/bin:/bin", "HOME": work, SCRATCH_ENV: work})
        except subprocess.TimeoutExpired:
            raise ExecutorError(f"the executor's child ran past {wall_seconds:.0f} s and was killed") from None
    if proc.returncode != 0 or not proc.stdout:
        tail = (proc.stderr or "").strip().splitlines()[-3:]
        raise ExecutorError(f"the executor's child failed (exit {proc.returncode}): {' | '.join(tail)}")
    answer = json.loads(proc.stdout)
    bytecode.store(code_cache, answer.pop("compiled", []))
    if "error" in answer:
        raise ExecutorError(answer["error"] + "\n" + answer.get("traceback", ""))
    return answer


def check_tree(srt_path, config: CodeConfig = CodeConfig(), limits: CodeLimits = CodeLimits(),
               coverage: Optional[dict] = None) -> CodeResult:
    """Run the tree's own prefetch path under every schedule (up to `limits`) and judge it.
    `coverage`: None, or {"count": {file: [[first, last], ...]}} to trace which lines of the tree
    ran (coverage_tracer.py), counting the runs of those spans; `result.coverage` has the answer."""
    request = {"srt": str(Path(srt_path).resolve()), "config": config.to_json(), "limits": limits.to_json(),
               **({"coverage": coverage} if coverage is not None else {})}
    answer = _child(request, limits.max_seconds + GRACE_SECONDS)
    return CodeResult.from_json({**answer["result"], "coverage": answer.get("coverage")})


def replay(srt_path, config: CodeConfig, schedule: list[str], limits: CodeLimits = CodeLimits()) -> dict:
    """Run one schedule (a counterexample's choice list) again: its steps and findings."""
    request = {"srt": str(Path(srt_path).resolve()), "config": config.to_json(), "limits": limits.to_json(),
               "replay": list(schedule)}
    return _child(request, limits.max_seconds + GRACE_SECONDS)["replay"]


def run_unit_script(srt_path, script, world: str = CodeConfig().world, limits: CodeLimits = CodeLimits()) -> dict:
    """A unit-level reproduction (docs/repro/*.py) run against the tree in the child, the files of
    `world` (a protocol's) imported as for a check (rt/unit_script.py): {"exit", "stdout", "error"}."""
    request = {"srt": str(Path(srt_path).resolve()), "config": CodeConfig(world=world).to_json(), "limits": limits.to_json(),
               "script": str(Path(script).resolve())}
    return _child(request, limits.max_seconds + GRACE_SECONDS)["script"]


def conform(srt_path, configs: list[dict], limits: CodeLimits = CodeLimits()) -> list[dict]:
    """The conformance check (conformance/check.py) of a tree against model configurations, each
    {"name", "config" (its kit's config_to_json), "budget", "counterexamples", "mutant", "protocol"};
    "protocol" names the registered protocol whose world the tree runs in (one for every item;
    without it, CodeConfig's default world)."""
    return conform_traced(srt_path, configs, limits)[0]


def conform_traced(srt_path, configs: list[dict], limits: CodeLimits = CodeLimits(),
                   coverage: Optional[dict] = None) -> tuple[list[dict], Optional[dict]]:
    """`conform`, and with `coverage` (as check_tree's) the lines of the tree its replays ran."""
    if not configs:
        return [], None
    protocols = {item.get("protocol", CodeConfig().world) for item in configs}
    if len(protocols) != 1:
        raise ValueError(f"one conformance check runs one protocol's world; the configurations name {sorted(protocols)}")
    request = {"srt": str(Path(srt_path).resolve()), "config": CodeConfig(world=protocols.pop()).to_json(),
               "limits": limits.to_json(), "conform": {"configs": configs},
               **({"coverage": coverage} if coverage is not None else {})}
    answer = _child(request, limits.max_seconds + GRACE_SECONDS)
    return answer["conformance"], answer.get("coverage")
