"""The executor: a tree's own prefetch functions run as the steps, under our scheduler, with
stand-ins for the world, in a sandboxed child process (docs/executor.md).

    from prefetch_check.model.code import check_tree, CodeConfig, CodeLimits
    result = check_tree(srt, CodeConfig(ranks=2), CodeLimits(max_seconds=60))
    result.verdicts["deadlock_freedom"], result.exhaustive, result.violations
    print(render(result.violations["deadlock_freedom"]))  # step by step, with the tree's file:line
    to_trace(result.violations["deadlock_freedom"])  # the explorer's Trace: every viewer draws it
"""

from prefetch_check.model.code.config import CodeConfig, CodeLimits, CodeResult, Step, Violation
from prefetch_check.model.code.render import render
from prefetch_check.model.code.runner import ExecutorError, check_tree, replay
from prefetch_check.model.code.trace import to_trace

__all__ = ["CodeConfig", "CodeLimits", "CodeResult", "ExecutorError", "Step", "Violation", "check_tree", "render",
           "replay", "to_trace"]
