"""The child-side engine: load the tree once (its world's pack says what and how), then run
executions, each in fresh objects, with a strategy choosing the thread at every scheduling point
(strategies/): `run(strategy)` builds the world's run, drives it and judges how it ended."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from prefetch_check.model.code.config import CodeConfig
from prefetch_check.model.code.pack import pack
from prefetch_check.model.code.rt import stubs
from prefetch_check.model.code.rt.decision import TERMINAL, Decision, Stop
from prefetch_check.model.code.stand_ins.torch_stub import make_torch


class _Holder:
    """This run's world and collectives: what the once-loaded torch stand-in forwards to."""

    world = None
    collectives = None
    p2p = None  # a world with PP stages sets its point-to-point channels (stand_ins/p2p.py)

    def all_reduce(self, *args, **kwargs):
        return self.collectives.all_reduce(*args, **kwargs)

    def get_world_size(self, group=None):
        return self.collectives.get_world_size(group)

    def get_rank(self, group=None):
        return self.collectives.get_rank(group)

    def barrier(self, group=None, **kwargs):
        return self.collectives.barrier(group, **kwargs)

    def get_process_group_ranks(self, group):
        return self.collectives.get_process_group_ranks(group)

    def isend(self, *args, **kwargs):
        return self._p2p("isend").isend(*args, **kwargs)

    def recv(self, *args, **kwargs):
        return self._p2p("recv").recv(*args, **kwargs)

    def _p2p(self, name: str):
        if self.p2p is None:  # a world without stages: the call is outside its model
            raise self.world.not_modelled(f"torch.distributed.{name}")
        return self.p2p


@dataclass
class RunOutcome:
    schedule: list[str]  # the choices made, in order: the run, replayable
    end: str  # terminal, seen, depth (rt/decision.py)
    faults: list  # verdicts.Finding
    steps: list  # baton.StepRecord
    not_modelled: list[str] = field(default_factory=list)
    reached: frozenset = frozenset()  # the scripted events the run took (WorldRun.happened)


def drive(run, strategy) -> str:
    """Run `run`'s threads one at a time, `strategy` choosing each step, until it says stop;
    how the run ended. The caller abandons the run (judging first needs it as it stands)."""
    threads = {m.name: m for m in run.baton.threads}
    steps = run.baton.steps
    decision = Decision(run)
    ending = [TERMINAL]

    def decide():
        choice = strategy.choose(decision.at(len(steps)))
        if isinstance(choice, Stop):
            ending[0] = choice.end
            return None
        return threads[choice]

    run.baton.run(decide)
    return ending[0]


class Executor:
    def __init__(self, srt: Path, config: CodeConfig):
        self.srt, self.config = Path(srt).resolve(), config
        self.roots = (str(self.srt) + "/",)
        self.holder = _Holder()
        self.pack = pack(config.world)  # the protocol's world: what to import, which harness
        torch = make_torch(self.holder, stubs.not_modelled_factory(self.roots))
        self.modules = self.pack.load(self.srt, torch, self.holder, self.roots)
        self.run_class = self.pack.run
        self.tracer = None  # rt/tracer.py, when the child measures coverage: told where each run starts

    def starting(self) -> None:
        """A schedule starts (a search's run, a replay, a conformance replay): the coverage tracer
        counts the runs that execute each line asked for."""
        if self.tracer is not None:
            self.tracer.next_run()

    def new_run(self):
        """A fresh run of the world: its stand-ins, ranks and threads, nothing run yet."""
        self.starting()
        return self.run_class(self.modules, self.config, self.holder, self.roots)

    def run(self, strategy) -> RunOutcome:
        """One execution chosen by `strategy`, judged by the world's properties."""
        run = self.new_run()
        try:
            end = drive(run, strategy)
            findings = self.pack.judge(run, end == TERMINAL)
        finally:
            run.baton.abandon()
        nm = sorted({f.message for f in findings if f.prop == "not_modelled"})
        # a world pack's own run class may script no event (WorldRun.happened records them)
        return RunOutcome([s.choice for s in run.baton.steps], end, findings, run.baton.steps, nm,
                          frozenset(getattr(run, "reached", ())))
