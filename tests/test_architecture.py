"""The layering the design promises, checked on the source: the explorer knows no protocol, the
engine knows no particular protocol, and no two modules import each other in a circle."""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import networkx as nx

ROOT = Path(__file__).parent.parent
PACKAGES = {"prefetch_check.model": ROOT / "model", "prefetch_check.explorer": ROOT / "explorer",
            "prefetch_check": ROOT / "prefetch_check"}
PROTOCOL_WORDS = re.compile(r"\b(ranks?|(?<!pull-)requests?|hash_value|completed_tokens|prefetch(?!_check|-check)\w*)\b", re.I)


def modules() -> dict[str, Path]:
    out = {}
    for package, folder in PACKAGES.items():
        for path in folder.rglob("*.py"):
            if "__pycache__" in path.parts:
                continue
            parts = path.relative_to(folder).with_suffix("").parts
            name = ".".join((package,) + (parts[:-1] if parts[-1] == "__init__" else parts))
            out[name] = path
    return out


def imports(path: Path) -> set[str]:
    """The prefetch_check modules a file imports at its top level or in functions."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
    return {n for n in found if n.startswith("prefetch_check")}


def graph() -> nx.DiGraph:
    mods = modules()
    g = nx.DiGraph()
    g.add_nodes_from(mods)
    for name, path in mods.items():
        for target in imports(path):
            if target in mods and target != name:
                g.add_edge(name, target)
    return g


def test_the_explorer_imports_nothing_outside_itself():
    for name, path in modules().items():
        if name.startswith("prefetch_check.explorer"):
            outside = {t for t in imports(path) if not t.startswith("prefetch_check.explorer")}
            assert not outside, f"{path.relative_to(ROOT)} imports {sorted(outside)}"


def test_the_explorer_speaks_no_protocol_words():
    for path in (ROOT / "explorer").rglob("*.py"):
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            m = PROTOCOL_WORDS.search(line)
            assert m is None, f"{path.relative_to(ROOT)}:{n}: {m.group(0)!r} in {line.strip()!r}"


def test_the_engine_knows_no_particular_protocol():
    for name, path in modules().items():
        if name.startswith(("prefetch_check.model.engine", "prefetch_check.model.interface")):
            protocols = {t for t in imports(path) if t.startswith("prefetch_check.model.protocols")}
            assert not protocols, f"{path.relative_to(ROOT)} imports {sorted(protocols)}"


def test_model_imports_nothing_of_the_package_face():
    for name, path in modules().items():
        if name.startswith("prefetch_check.model"):
            face = {t for t in imports(path) if not t.startswith(("prefetch_check.model", "prefetch_check.explorer"))}
            assert not face, f"{path.relative_to(ROOT)} imports {sorted(face)}"


def test_no_import_circles():
    g = graph()
    # a package's __init__ that imports its own modules is not a circle of design
    g.remove_edges_from([(a, b) for a, b in list(g.edges) if b.startswith(a + ".") or a.startswith(b + ".")])
    cycles = list(nx.simple_cycles(g))
    assert not cycles, f"import circles: {cycles[:3]}"


def test_services_do_not_import_the_command_line():
    """Issue 20: what the command line and the Python API share (scenario cases, `--set`
    overrides) lives in a service module; only the command line imports prefetch_check.commands."""
    face = ("prefetch_check.commands", "prefetch_check.cli", "prefetch_check.__main__")
    for name, path in modules().items():
        if name.startswith(face):
            continue
        commands = {t for t in imports(path) if t.startswith("prefetch_check.commands")}
        assert not commands, f"{path.relative_to(ROOT)} imports {sorted(commands)}"


def test_the_model_reads_no_sglang_tree():
    """Reading SGLang trees (the shape, its families, a shape's options in each protocol) is the SGLang
    face's (prefetch_check/sglang/): model/source keeps only the sandboxed predicate interpreter, and no
    module of the model names the face in an import, nor in a "module" string imported later."""
    source = {p.stem for p in (ROOT / "model" / "source").glob("*.py")}
    assert source == {"__init__", "adapter", "files", "interpreter", "predicate", "sandbox"}
    dotted = re.compile(r"prefetch_check\.sglang\b")
    for path in (ROOT / "model").rglob("*.py"):
        if "__pycache__" in path.parts:
            continue
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            assert not dotted.search(line), f"{path.relative_to(ROOT)}:{n}: {line.strip()!r}"


# ---- issue 28: a protocol's world and SGLang mapping are its own folders, reached through registries


def _package(ref: str) -> str:
    """The package of a "module:attribute" string (its module's parent)."""
    return ref.partition(":")[0].rpartition(".")[0]


def protocol_folders() -> dict[str, dict[str, str]]:
    """Per built-in protocol with a world: its model package, its world's and its SGLang mapping's."""
    from prefetch_check.model.protocols.registry import descriptors
    from prefetch_check.sglang import mappings

    out = {}
    for d in descriptors():
        if not d.world:
            continue
        found = mappings.mapping(d.name)
        ref = next(r for r in mappings.BUILTIN if importlib.import_module(r).MAPPING is found)
        out[d.name] = {"model": _package(d.protocol), "world": _package(d.world), "mapping": _package(ref)}
    assert out
    return out


def test_a_world_and_a_mapping_are_imported_only_from_their_protocols_folders():
    """A world (model/code/worlds/<p>/) and an SGLang mapping (prefetch_check/sglang/mappings/<p>/) are
    reached through the registries (the descriptor's `world`, the mappings' BUILTIN), never imported
    by name from outside the protocol's own folders; and a protocol's folders import no other
    protocol's world, mapping or model."""
    folders = protocol_folders()
    within = lambda name, package: name == package or name.startswith(package + ".")  # noqa: E731
    for name, path in modules().items():
        mine = {p for p, f in folders.items() if any(within(name, v) for v in f.values())}
        # a world or a mapping module keeps to its own protocol's folders, model included (the
        # model's protocols share some of their own code: model/protocols/ is not policed here)
        kept = any(within(name, f[k]) for f in folders.values() for k in ("world", "mapping"))
        for target in imports(path):
            for protocol, f in folders.items():
                if protocol in mine:
                    continue
                guarded = tuple(f.values()) if kept else (f["world"], f["mapping"])
                hit = [g for g in guarded if within(target, g)]
                assert not hit, f"{path.relative_to(ROOT)} imports {target} ({protocol}'s own folder)"


def test_the_engine_strategies_and_conformance_loop_import_no_world():
    """The executor's engine (rt/), its strategies, the conformance loop and the public face of
    model/code/ name no protocol: they ask a world's pack through the registry."""
    engine = ("prefetch_check.model.code.rt", "prefetch_check.model.code.strategies", "prefetch_check.model.code.conformance")
    top = {f"prefetch_check.model.code.{p.stem}" for p in (ROOT / "model" / "code").glob("*.py")} | {"prefetch_check.model.code"}
    specific = tuple(f["model"] for f in protocol_folders().values()) + ("prefetch_check.model.code.worlds",)
    for name, path in modules().items():
        if name in top or name.startswith(engine):
            found = {t for t in imports(path) if t.startswith(specific)}
            assert not found, f"{path.relative_to(ROOT)} imports {sorted(found)}"


FACE = ("prefetch_check.sglang", "prefetch_check.commands", "prefetch_check.scenarios", "prefetch_check.cli")
# The one exception, pinned so it cannot grow: a protocol's scenario parameters (its `scenario`
# field) are written in the scenario parser's own vocabulary (prefetch_check/scenario/schema.py's
# Param, parameters.py's checks), which lives in the face; the model cannot import it. Moving that
# vocabulary into the model would let these two modules join their protocols' folders.
SCENARIO_PARAMETERS = {"prefetch_check.scenario.ack_drain_params", "prefetch_check.scenario.poll_params"}


def test_no_descriptor_string_names_the_face():
    """A descriptor's "module:attribute" strings are imported on first use, where the import graph
    cannot see them: none names the command line, the SGLang face or the shipped scenarios."""
    import dataclasses

    from prefetch_check.model.protocols.registry import descriptors

    scenario = set()
    for d in descriptors():
        for f in dataclasses.fields(d):
            value = getattr(d, f.name)
            if not isinstance(value, str) or not value.startswith("prefetch_check."):
                continue
            module = value.partition(":")[0]
            assert not module.startswith(FACE), f"{d.name}.{f.name} = {value!r} names the face"
            if module.startswith("prefetch_check.scenario."):
                assert f.name == "scenario", f"{d.name}.{f.name} = {value!r} names the face"
                scenario.add(module)
    assert scenario == SCENARIO_PARAMETERS


def test_the_test_only_toy_protocol_keeps_to_its_folder():
    """The toy third protocol (tests/toy_protocol/, world and SGLang mapping included) is reached
    only through its registrations: no module of the package imports it, its descriptor names
    none of the face, and its world and mapping import no built-in protocol's world, mapping or model."""
    import dataclasses
    import sys

    sys.path.insert(0, str(ROOT / "tests"))
    try:
        from toy_protocol.descriptor import DESCRIPTOR
    finally:
        sys.path.remove(str(ROOT / "tests"))
    for name, path in modules().items():
        text = path.read_text(encoding="utf-8")
        assert "toy_protocol" not in text, f"{path.relative_to(ROOT)} names the test-only toy protocol"
    for f in dataclasses.fields(DESCRIPTOR):
        value = getattr(DESCRIPTOR, f.name)
        assert not (isinstance(value, str) and value.startswith(FACE)), f"toy.{f.name} = {value!r} names the face"
    builtin = tuple(v for f in protocol_folders().values() for v in f.values())
    for path in (ROOT / "tests" / "toy_protocol").rglob("*.py"):
        if "tree" in path.relative_to(ROOT / "tests" / "toy_protocol").parts:
            continue  # the fixture tree: the code under test, not ours
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [node.module] if isinstance(node, ast.ImportFrom) and node.module else (
                [a.name for a in node.names] if isinstance(node, ast.Import) else [])
            hit = [n for n in names for b in builtin if n == b or n.startswith(b + ".")]
            assert not hit, f"{path.relative_to(ROOT)} imports {hit} (a built-in protocol's own folder)"
