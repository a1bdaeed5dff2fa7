"""The scheduler's own retry, re-issue and readmission methods, compiled from the tree's
managers/scheduler.py as written (its file name and line numbers kept, so coverage and traces
point at the release's lines). The file as a whole imports the server; only these methods are
taken out of `class Scheduler` by `ast` and run against the waiting-queue stand-in
(waiting_queue.py), whose module globals are the names these methods read."""

from __future__ import annotations

import __future__
import ast
import enum
import functools
import sys
from http import HTTPStatus
from pathlib import Path
from typing import Deque, Dict, List, Optional, Set, Tuple, Union

SCHEDULER = "managers/scheduler.py"
# the methods this world runs as written, when the release has them (0.5.23's names)
RETRY = ("_process_storage_prefetch_retries", "_retry_storage_prefetch", "_prefetch_after_device_hit_loss")
ISSUE = ("_prefetch_kvcache", "_add_request_to_queue", "_release_aborted_request")
# what _add_request_to_queue asks before the issue: the request's priority and the waiting queue's cap
ADMIT = ("_set_or_validate_priority", "_abort_on_queued_limit")
METHODS = ISSUE + RETRY + ADMIT


class CacheRequestOutcome(enum.Enum):
    """base_prefix_cache's outcome of a finished request (only ABORT reaches the prefetch path)."""

    FINISHED = "finished"
    ABORT = "abort"


class DisaggregationMode(enum.Enum):
    NULL = "null"
    PREFILL = "prefill"
    DECODE = "decode"


class _QuietLogger:
    """scheduler.py's module logger: the retry path logs, nothing on the path reads a log."""

    def debug(self, *args, **kwargs):
        pass

    info = warning = error = debug


class AbortOutput:
    """The scheduler's abort message to the tokenizer (scheduler.py `_make_abort_req` builds an
    AbortReq with the weight-version spans the output reports): only why it ended is kept."""

    def __init__(self, req, finished_reason=None):
        self.rid, self.finished_reason = req.rid, finished_reason or {}


class Memory:
    """get_memory()'s server arguments that these methods read."""

    def __init__(self, poll_interval: int, max_attempts: int, host_memory_mode: str = "cache"):
        self.hicache_storage_prefetch_retry_poll_interval = poll_interval
        self.hicache_storage_prefetch_retry_max_attempts = max_attempts
        self.hicache_host_memory_mode = host_memory_mode
        self.enable_flexkv = False


def scheduler_methods(srt: Path, memory: Memory, names: tuple[str, ...] = METHODS) -> dict:
    """{name: function} for each of `names` that the tree's class Scheduler defines, bound to a
    fresh namespace (each run's own `get_memory`)."""
    path = Path(srt).resolve() / SCHEDULER
    if not path.is_file():
        return {}
    code, defined = _compiled(str(path), path.read_text(), names)
    if code is None:
        return {}
    namespace = dict(get_memory=lambda: memory, logger=_QuietLogger(), CacheRequestOutcome=CacheRequestOutcome,
                     DisaggregationMode=DisaggregationMode, _make_abort_req=AbortOutput, HTTPStatus=HTTPStatus,
                     sys=sys, Optional=Optional, List=List, Dict=Dict, Set=Set,
                     Tuple=Tuple, Deque=Deque, Union=Union, __name__="sglang.srt.managers.scheduler")
    exec(code, namespace)
    return {name: namespace[name] for name in defined}


@functools.lru_cache(maxsize=4)
def _compiled(filename: str, text: str, names: tuple[str, ...]):
    """The methods' code object and their names, compiled once per file text (a memo of a pure
    function: parsing the 4,000-line scheduler.py took most of every run of the retry world)."""
    module = ast.parse(text, filename=filename)
    cls = next((n for n in module.body if isinstance(n, ast.ClassDef) and n.name == "Scheduler"), None)
    if cls is None:
        return None, ()
    defs = [n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name in names]
    for d in defs:
        d.decorator_list = []  # none of these is decorated in the releases read; a decorator is not the path
    code = compile(ast.Module(body=defs, type_ignores=[]), filename, "exec",
                   flags=__future__.annotations.compiler_flag, dont_inherit=True)
    return code, tuple(d.name for d in defs)
