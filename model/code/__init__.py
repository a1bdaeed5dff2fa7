"""The executor: a tree's own prefetch functions run as the steps, under our scheduler, with
stand-ins for the world, in a sandboxed child process (docs/executor.md).

    from prefetch_check.model.code import check_tree, CodeConfig, CodeLimits
    result = check_tree(srt, CodeConfig(ranks=2), CodeLimits(max_seconds=60))
    result.verdicts["deadlock_freedom"], result.exhaustive, result.violations
    print(render(result.violations["deadlock_freedom"]))  # step by step, with the tree's file:line
    to_trace(result.violations["deadlock_freedom"])  # the explorer's Trace: every viewer draws it
"""

import importlib

# name -> its module: imported on first use (PEP 562), so the child (child.py, a fresh interpreter
# per check) reaches its own modules without the parent's runner and the renderers, and imports
# them after it has put its compiled-code cache in place (rt/bytecode.py)
_WHERE = {"CodeConfig": "config", "CodeLimits": "config", "CodeResult": "config", "Step": "config",
          "Violation": "config", "render": "render", "ExecutorError": "runner", "check_tree": "runner",
          "replay": "runner", "to_trace": "trace"}

__all__ = ["CodeConfig", "CodeLimits", "CodeResult", "ExecutorError", "Step", "Violation", "check_tree", "render",
           "replay", "to_trace"]


def __getattr__(name: str):
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{_WHERE[name]}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
