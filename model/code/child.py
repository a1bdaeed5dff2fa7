"""The executor's child process: `python -I -m prefetch_check.model.code.child` reads one JSON
request on stdin ({srt, config, limits, prefix?}), and writes one JSON answer on stdout.

Before anything of the tree is imported it caps CPU seconds and address space and disables the
network (socket cannot connect or bind); it runs in the fresh temporary folder the parent gives
it. The tree's code runs only here, never in the checker's own process."""

from __future__ import annotations

import json
import os
import resource
import sys


def _sandbox(limits: dict) -> None:
    cpu = int(limits.get("child_cpu_seconds", 900))
    mem = int(limits.get("child_memory_bytes", 2 << 30))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu))
    resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
    import socket

    def refuse(*args, **kwargs):
        raise PermissionError("network disabled in the executor's child process")

    socket.socket = refuse  # type: ignore[assignment]
    socket.create_connection = refuse  # type: ignore[assignment]
    socket.getaddrinfo = refuse  # type: ignore[assignment]


def main() -> int:
    request = json.loads(sys.stdin.read())
    _sandbox(request.get("limits", {}))
    from prefetch_check.model.code.rt import bytecode

    compiled = bytecode.install(request.get("bytecode"))  # the code of the files compiled before (rt/bytecode.py)
    import logging

    logging.disable(logging.CRITICAL)  # the path's logging is inert (class c); thousands of runs
    from prefetch_check.model.code.config import CodeConfig, CodeLimits
    from prefetch_check.model.code.rt.executor import Executor
    from prefetch_check.model.code.rt.search import explore
    from prefetch_check.model.code.strategies.replay import replay_strategy
    from prefetch_check.model.code.rt import tracer as coverage_tracer

    if "protocol" in request:  # a protocol registered at run time in the parent (runner._registered)
        from prefetch_check.model.protocols import registry

        sys.path.extend(request["protocol"]["paths"])
        registry.register(registry.Descriptor(**request["protocol"]["descriptor"]))
    tracer = coverage_tracer.started(request)  # coverage: None unless asked; before the tree is imported
    config = CodeConfig.from_json(request["config"])
    if "script" in request:  # a unit-level reproduction (docs/repro): the tree imported, nothing hooked
        from prefetch_check.model.code.rt import unit_script

        answer = unit_script.answer(request["srt"], config.world, request["script"])
        sys.stdout.write(json.dumps(answer))
        sys.stdout.flush()
        os._exit(0)
    limits = CodeLimits(**{k: tuple(v) if isinstance(v, list) else v for k, v in request.get("limits", {}).items()})
    try:
        executor = Executor(request["srt"], config)
        executor.tracer = tracer  # coverage: told where each schedule starts
    except Exception as exc:  # the tree does not load under the stubs: say where
        import traceback

        answer = {"error": f"the tree does not load under the executor's stubs: {type(exc).__name__}: {exc}",
                  "traceback": traceback.format_exc(limit=-6)}
    else:
        if "conform" in request:  # the conformance check (conformance/check.py)
            from prefetch_check.model.code.conformance.check import serve

            answer = serve(executor, request["conform"])
        elif "replay" in request:
            out = executor.run(replay_strategy(request["replay"], limits))
            answer = {"replay": {"end": out.end, "steps": [vars(s) for s in out.steps],
                                 "findings": [vars(f) for f in out.faults]}}
        else:
            answer = {"result": explore(executor, limits).to_json()}
        coverage_tracer.finish(tracer, answer)  # coverage: the lines it executed travel with the answer
    answer["compiled"] = compiled  # the files compiled from source here: the parent keeps their code
    sys.stdout.write(json.dumps(answer))
    sys.stdout.flush()
    os._exit(0)  # leftover daemon threads of an abandoned run must not delay the exit


if __name__ == "__main__":
    sys.exit(main())
