"""The toy world as the executor sees it (prefetch_check/model/code/pack.py): what it runs of a
tree, its harness, its own properties and judge, and its conformance side."""

from __future__ import annotations

from pathlib import Path

from prefetch_check.model.code.config import CodeConfig
from prefetch_check.model.code.pack import ConformanceKit, WorldPack
from prefetch_check.model.code.rt import loader
from prefetch_check.model.code.rt.verdicts import CRASH, HANG, Finding

from toy_protocol.config import ToyConfig
from toy_protocol.world import refinement
from toy_protocol.world.harness import FILES, ToyRun

PROTOCOL = "toy"
PROPERTIES = ("complete_on_accept", "accepted", "no_crash")


def load(srt: Path, torch, holder, roots: tuple[str, ...]) -> dict:
    return loader.load_tree(srt, torch, FILES)


def judge(run, terminal: bool) -> list[Finding]:
    """The stand-ins' faults (an early acceptance), threads that died, and at the end of a run
    every rank that never accepted."""
    out = [Finding(f.prop, f.message, f.consequence, f.site, f.step) for f in run.world.faults]
    steps = len(run.baton.steps)
    for m in run.baton.threads:
        if m.status == "dead":
            message, site, _ = m.error
            if message.startswith("not modelled:"):
                out.append(Finding("not_modelled", message, "the executor cannot judge this path", site, steps))
            else:
                out.append(Finding("no_crash", f"{m.name} died: {message}", CRASH, site, steps))
    if terminal and not any(f.prop == "not_modelled" for f in out):
        out += [Finding("accepted", f"rank {r.index}: {r.operation.request_id} is never accepted", HANG, "", steps)
                for r in run.ranks if not r.accepted]
    return out


def make_run(executor, protocol) -> ToyRun:
    cfg = protocol.config
    return ToyRun(executor.modules, code_config(cfg), executor.holder, executor.roots)


def code_config(cfg: ToyConfig) -> CodeConfig:
    return CodeConfig(world=PROTOCOL, ranks=cfg.ranks, pages=cfg.pages)


def protocol_class(mutant: str):
    from toy_protocol.mutants import CATALOGUE
    from toy_protocol.protocol import ToyProtocol

    return next(m for m in CATALOGUE if m.name == mutant) if mutant else ToyProtocol


PACK = WorldPack(
    protocol=PROTOCOL, files=FILES, load=load, run=ToyRun, properties=PROPERTIES, judge=judge,
    conformance=ConformanceKit(
        refinement=refinement, make_run=make_run, in_transit=lambda action, field: False,
        config_to_json=lambda cfg: {"ranks": cfg.ranks, "pages": cfg.pages},
        config_from_json=lambda data: ToyConfig(**data), unsupported=lambda cfg: "", protocol_class=protocol_class,
        code_threads={"W": "W", "S": "S"}),
    bench=(("toy 1x2", CodeConfig(world=PROTOCOL, ranks=1, pages=2)),
           ("toy 2x2", CodeConfig(world=PROTOCOL, ranks=2, pages=2))),
)
