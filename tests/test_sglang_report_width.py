"""`prefetch-check sglang`'s terminal report fits its terminal: at 100 columns (and at 80) every line
fits, no property name is broken over two lines, and a tree's conformance is one line.

On real verdicts: the command runs the upstream-shaped fixture trees (tests/fixtures/sglang/)
with shipped scenarios chosen for long case names, options a release replaces, violations only
without an upstream assumption, skipped cases, and a tree the honest floor refuses; the
ack-drain tree also runs its code engine (the executor cannot load a fixture tree: its cases end
BOUNDED, with footnotes) and its conformance check.
"""

from __future__ import annotations

import dataclasses

import json
import re
from pathlib import Path

import pytest

from prefetch_check.cli import main
from prefetch_check.model.protocols import load_protocol
from prefetch_check.sglang import layout
from sglang_fixtures import LATE_ONCE, tree

pytestmark = pytest.mark.usefixtures("fixture_trees_followed")

SCENARIOS = Path(__file__).parents[1] / "scenarios"
READMIT = "ack-readmit-0519.toml"  # its model verdicts include operation_identity's violation
ACK = ["ack-alloc-differs-batches.toml", READMIT, "ack-best-effort.toml", "ack-abort.toml"]
POLL = ["seed-race.toml", "alloc-failure.toml", "release-staged-threshold-zero-full-host.toml"]
PROPERTIES = tuple(dict.fromkeys(load_protocol("ack-drain").property_names + load_protocol("predicate-poll").property_names))
ALSO_WRITTEN = {"wait_complete"}  # a policy's name: also the start of wait_complete_delivers


def broken_names(text: str) -> list[str]:
    """Pieces of a property name standing apart: a name cut over two lines (or two cells) leaves a
    word that is a part of it with an underscore in it (or, for `progress`, a part of 3+ letters)."""
    found = []
    for line in text.splitlines():
        for word in re.findall(r"[A-Za-z_]+", line):
            if word in PROPERTIES or word in ALSO_WRITTEN:
                continue
            for name in PROPERTIES:
                part = name.startswith(word) or name.endswith(word)
                if part and ("_" in word or (name == "progress" and len(word) >= 3)):
                    found.append(f"{word!r} (of {name}) in: {line.strip()}")
    return found


@pytest.fixture(scope="module")
def trees(tmp_path_factory):
    root = tmp_path_factory.mktemp("trees")
    seed = tree(root / "seed", "seed")  # the seed race: its predicate has no page-list test
    unified = tree(root / "unified", "ack-drain")
    refused = tree(root / "refused", *LATE_ONCE)
    predicate = refused / "sglang" / "srt" / "mem_cache" / "hiradix_cache.py"
    predicate.write_text(predicate.read_text().replace("len(operation.hash_value) > 0 and ", ""))
    return {"seed": seed, "unified": unified, "refused": refused}


def render(capsys, monkeypatch, cache: Path, width: int, *args: str, scenarios=(), engine="model") -> str:
    monkeypatch.setenv("COLUMNS", str(width))
    argv = ["sglang", *args, "--engine", engine, "--cache-dir", str(cache), "--quiet"]
    for name in scenarios:
        argv += ["--scenarios", str(SCENARIOS / name)]
    main(argv)
    return capsys.readouterr().out


def assert_fits(out: str, width: int) -> None:
    long = [line for line in out.splitlines() if len(line) > width]
    assert not long, f"{len(long)} line(s) longer than {width}: {long[:2]}"
    assert broken_names(out) == []


HEADER_LABELS = ("predicate", "options", "conformance", "the model", "its code")


def header_lines(out: str) -> list[list[str]]:
    """Per tree block, its header lines: the lines under the tree's title (which may wrap), up to a blank."""
    blocks, current = [], None
    for line in out.splitlines():
        if not line.strip():
            current = None
        elif current is None and not line.startswith((" ", "[")):
            current = []
            blocks.append(current)
        elif current is not None:
            current.append(line)
    return [b for b in blocks if any(line.startswith(tuple(f"  {h} " for h in HEADER_LABELS)) for line in b)]


@pytest.mark.parametrize("width", [100, 80])
def test_a_tree_block_fits_and_keeps_every_property_name_whole(trees, tmp_path, capsys, monkeypatch, width):
    cache = tmp_path / "cache"
    seed = render(capsys, monkeypatch, cache, width, str(trees["seed"]), scenarios=POLL)
    unified = render(capsys, monkeypatch, cache, width, str(trees["unified"]), scenarios=ACK, engine="both")
    refused = render(capsys, monkeypatch, cache, width, str(trees["refused"]), scenarios=POLL)
    for out in (seed, unified, refused):
        assert_fits(out, width)
    # the verdicts are there, by engine, with the shortest counterexample's length and case
    assert "property" in seed and "VIOLATED, " in seed and "steps" in seed
    for name in load_protocol("predicate-poll").property_names:
        assert re.search(rf"^  {name}\b", seed, re.M) or f"\n{name}\n" in seed, name
    assert "none could run" in unified  # the executor cannot load a fixture tree: said in the header
    # each tree's header says what the verdicts rest on; its conformance is one line
    [head] = header_lines(unified)
    labels = [line[2:].split("  ")[0] for line in head if line.startswith(tuple(f"  {h} " for h in HEADER_LABELS))]
    assert labels == list(HEADER_LABELS)
    at = next(i for i, line in enumerate(head) if line.startswith("  conformance"))
    assert head[at + 1].startswith("  the model")  # nothing of the conformance spills onto a second line
    # the trace commands are footnotes whose lines paste back as the command of the --json report
    assert re.search(r"^\[\d+\] ", seed, re.M)
    assert "not modelled" in refused and "differs from every release the model follows" in refused


def test_a_release_with_its_code_executed_fits_too(session_cache, capsys, monkeypatch):
    """0.5.23 with both engines: the code column, its violation (operation_identity, from its own
    code) and "not judged"; cut to two fast executor cases, the smallest conformance budget and one
    scenario file (the readmission's: the model's operation_identity violation; the conformance
    check replays every counterexample of the files given, 4 files took 40 s) (the run at 80
    columns answers from the run at 100's cache)."""
    from prefetch_check.sglang import code_checks, conformance_checks
    from test_sglang_release import release_srt

    fast = ("1 rank x 1 request", "1 rank, prefetched again, best_effort")
    whole_pack, whole_mapping = conformance_checks.pack, code_checks.mapping

    def one_budget(protocol):
        found = whole_pack(protocol)
        kit = dataclasses.replace(found.conformance, budgets=found.conformance.budgets[:1])
        return dataclasses.replace(found, conformance=kit)

    def fast_cases(protocol):
        """The two cases, the readmission one judging operation_identity up to its violation (its
        exhaustive search of every property, under the command's tracer, is a minute)."""
        found = whole_mapping(protocol)
        cut = [c if c.name != fast[1] else dataclasses.replace(
            c, judges=("operation_identity",), limits=dataclasses.replace(c.limits, stop_on=("operation_identity",)))
            for c in found.cases if c.name in fast]
        return dataclasses.replace(found, cases=tuple(cut))

    monkeypatch.setattr(conformance_checks, "pack", one_budget)
    monkeypatch.setattr(code_checks, "mapping", fast_cases)
    srt = release_srt("0.5.23")  # skipped where the index is unreachable and 0.5.23 is not cached
    for width in (100, 80):
        out = render(capsys, monkeypatch, session_cache / "cache", width, str(srt), scenarios=[READMIT], engine="both")
        assert_fits(out, width)
        assert "its code, executed" in out and "not judged" in out
        row = next(line for line in out.splitlines() if line.startswith("  operation_identity "))
        assert row.count("VIOLATED, ") == 2  # the model's and its code's
        [head] = header_lines(out)
        at = next(i for i, line in enumerate(head) if line.startswith("  conformance"))
        assert "conforms" in head[at] and head[at + 1].startswith("  the model")


def test_a_footnote_command_pastes_back_as_the_reports_command(trees, tmp_path, capsys, monkeypatch):
    import shlex

    cache = tmp_path / "cache"
    monkeypatch.setenv("COLUMNS", "80")
    main(["sglang", str(trees["seed"]), "--engine", "model", "--cache-dir", str(cache), "--quiet", "--json", "-",
          "--scenarios", str(SCENARIOS / "seed-race.toml")])
    captured = capsys.readouterr()
    doc = json.loads(captured.out)
    command = doc["releases"][0]["properties"]["no_early_acceptance"]["release"]["command"]
    out = render(capsys, monkeypatch, cache, 80, str(trees["seed"]), scenarios=["seed-race.toml"])
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("[") and "prefetch-check trace" in line)
    pasted = [lines[start].split(": ", 1)[1]]
    while pasted[-1].endswith("\\"):
        start += 1
        pasted.append(lines[start])
    shell = "\n".join(pasted)
    # the shell removes each backslash-newline, then splits into words
    assert shlex.split(shell.replace("\\\n", "")) == shlex.split(command)
    assert all(len(line) <= 80 for line in pasted)


def test_a_range_is_one_compact_table_that_fits(trees, tmp_path):
    """A range (or --commits) gets one row per tree, consecutive trees that read the same sharing
    one. Fixture trees are paths, not a range SPEC, so their rows go to the renderer directly."""
    from io import StringIO

    from rich.console import Console

    from prefetch_check.progress import RunProgress
    from prefetch_check.scenario import load_scenarios
    from prefetch_check.sglang import terminal
    from prefetch_check.sglang.checks import choose_cases, plan, run_all
    from prefetch_check.sglang.trees import Tree

    cases = choose_cases(load_scenarios([str(SCENARIOS / n) for n in POLL + ACK]), 2)
    labels = {"seed-a": "seed", "seed-b": "seed", "unified": "unified", "refused": "refused"}
    rows = [plan(Tree(label, trees[name] / "sglang" / "srt"), cases, None, {}, engines=("model",))
            for label, name in labels.items()]
    run_all(rows, tmp_path / "cache", 1, lambda n: RunProgress(n, quiet=True))
    for width in (100, 80):
        console = Console(file=StringIO(), width=width, markup=False)
        terminal.show(console, rows, as_summary=True)
        out = console.file.getvalue()
        assert_fits(out, width)
        table = out.split("\nN: the length")[0]
        assert table.count("seed-a .. seed-b") == 1  # two trees that read the same: one row
        assert "no_early_acceptance" in table and "not modelled" in table and "unified" in table


def test_text_breaks_only_at_spaces_and_after_hyphens():
    assert layout.wrap("VIOLATED, 11 steps ack-alloc-differs-batches [3]", 12) == [
        "VIOLATED, 11", "steps ack-", "alloc-", "differs-", "batches [3]"]
    assert layout.wrap(layout.unbroken("VIOLATED, 11 steps") + " x", 12) == ["VIOLATED, 11 steps", "x"]
    assert layout.min_width("wait_complete_delivers ack-alloc") == len("wait_complete_delivers")
    assert layout.fit([22, 40, 40], [22, 10, 10], 80) == [22, 29, 29]
    assert layout.fit([22, 40, 40], [22, 30, 30], 80) is None
    assert layout.fit([30, 40, 40], [10, 10, 10], 80) == [26, 27, 27]  # the widest first, the leftmost of equals
    assert layout.fit([30, 40, 40], [10, 10, 10], 80, last=(0,)) == [30, 25, 25]  # the first column last
    assert layout.fit([30, 40, 40], [10, 20, 20], 60, last=(0,)) == [20, 20, 20]


def test_the_check_sees_a_name_folded_as_rich_folds_it():
    """What the old table did: rich folds a name too long for its column anywhere."""
    from io import StringIO

    from rich.console import Console
    from rich.table import Table

    table = Table()
    table.add_column("property", overflow="fold")
    table.add_column("verdict")
    table.add_row("wait_complete_delivers", "VERIFIED")
    console = Console(file=StringIO(), width=24)
    console.print(table)
    assert broken_names(console.file.getvalue())
