"""The toy's SGLang side (prefetch_check/sglang/mappings/): its executor world runs the ToyCache
of mem_cache/toy_cache.py, and `prefetch-check sglang --engine code` executes these cases on a
tree that has it. No release has the toy's shape (no `acks` value of its own), so the model's
column never maps a release to it."""

from __future__ import annotations

from prefetch_check.model.code import CodeConfig
from prefetch_check.sglang.code_checks import Case
from prefetch_check.sglang.code_world import methods
from prefetch_check.sglang.mappings import Mapping
from prefetch_check.sglang.release_options import ReleaseOptions

from toy_protocol.world.harness import CACHE
from toy_protocol.world.pack import PROTOCOL


def runs(cache, controllers: dict) -> str:
    """A ToyCache with the check the scheduler calls; the controller is in its own file."""
    if "check_prefetch_progress" not in methods(cache):
        return "the toy world runs ToyCache.check_prefetch_progress, which this tree's ToyCache does not define"
    return ""


def release_options(shape) -> ReleaseOptions:
    return ReleaseOptions(None, not_modelled=("no release has the toy's shape",))


MAPPING = Mapping(protocol=PROTOCOL, acks="toy", release_options=release_options, judged_class="ToyCache",
                  judged_file=CACHE, runs=runs,
                  cases=(Case("1 rank x 2 pages", CodeConfig(world=PROTOCOL, ranks=1, pages=2)),
                         Case("2 ranks x 2 pages", CodeConfig(world=PROTOCOL, ranks=2, pages=2))))
