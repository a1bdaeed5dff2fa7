"""`prefetch-check sglang` on small upstream-shaped trees (offline): a row per release family, the
race found in an edited release, the trace command that reproduces it, the verdict cache, and
`--commits` on a checkout with history built here."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest

from prefetch_check.cli import main
from conftest import also_follow
from sglang_fixtures import FAMILIES, LATE_ONCE, ROOT, files_of, git, new_repo, tree

# The fixture trees stand for the release families they are shaped after (the floor has its own
# tests in test_sglang_floor.py).
pytestmark = pytest.mark.usefixtures("fixture_trees_followed")

SCENARIOS = Path(__file__).parents[1] / "scenarios"
POLL = [str(SCENARIOS / "tp2.toml")]
ACK = [str(ROOT / "scenarios" / "ack-drain" / name) for name in ("fixture-ack-tp2.toml", "fixture-ack-timeout.toml")]
GUARD = "len(operation.hash_value) > 0 and "


def sglang(capsys, tmp_path: Path, *args: str, scenarios=POLL + ACK) -> tuple[int, dict]:
    """Run the command with a JSON report on stdout; (exit status, report)."""
    argv = ["sglang", "--engine", "model", *args, "--cache-dir", str(tmp_path / "cache"), "--json", "-", "--quiet"]
    for s in scenarios:
        argv += ["--scenarios", s]
    status = main(argv)
    return status, json.loads(capsys.readouterr().out)


def by_label(doc: dict) -> dict:
    return {Path(r["release"]).name: r for r in doc["releases"]}


def test_a_row_per_release_family(tmp_path, capsys):
    trees = {
        "unified": tree(tmp_path / "unified", "ack-drain"),
        "deadline": tree(tmp_path / "deadline", "ack-drain", "unified-deadline"),
        "late": tree(tmp_path / "late", *LATE_ONCE),
        "seed": tree(tmp_path / "seed", "seed"),
        "staged": tree(tmp_path / "staged", *FAMILIES["staged"][0]),
        "unknown": tree(tmp_path / "unknown", "late2025", "unknown"),
    }
    status, doc = sglang(capsys, tmp_path, *map(str, trees.values()))
    rows = by_label(doc)
    # the seed fixture carries the race (its predicate has no page-list test): a violation, exit 1
    assert status == 1 and doc["exit_status"] == 1
    assert [rows[k]["status"] for k in trees] == [
        "checked", "checked", "checked", "checked", "checked", "not modelled"]
    unified = rows["unified"]
    assert unified["protocol"] == "ack-drain" and unified["family"] == "unified"
    assert unified["predicate"] == "mem_cache/unified_radix_cache.py:UnifiedRadixCache._can_terminate_prefetch"
    assert {o["name"]: o["value"] for o in unified["options"]} == {
        "cache": "unified", "ack_match": "operation", "deadline": "issue", "exceptions": "caught"}
    assert all(o["evidence"] for o in unified["options"])
    assert {r["case"] for r in unified["runs"]} == {"fixture-ack-tp2", "fixture-ack-timeout"}
    assert {r["predicate"] for r in unified["runs"]} == {unified["predicate_source"], "fixed"}
    assert all(v["release"]["verdict"] in ("VERIFIED", "NOT APPLICABLE") for v in unified["properties"].values())
    assert {o["name"]: o["value"] for o in rows["deadline"]["options"]}["deadline"] == "admission"
    assert {o["name"]: o["value"] for o in rows["late"]["options"]} == {"shape": "late2025", "clamp_threshold": True}
    assert {r["case"] for r in rows["late"]["runs"]} == {"tp2"}
    seed = rows["seed"]
    assert {o["name"]: o["value"] for o in seed["options"]}["count_before_write"] is True
    assert seed["properties"]["no_early_acceptance"]["release"]["verdict"] == "VIOLATED"
    assert seed["properties"]["no_early_acceptance"]["transcription"]["verdict"] == "VERIFIED"
    # 0.5.1's count-before-write order hands a page to the tree before its data: our transcription too
    assert seed["properties"]["data_integrity"]["transcription"]["verdict"] == "VIOLATED"
    staged = rows["staged"]
    assert {o["name"]: o["value"] for o in staged["options"]}["alloc_at"] == "hit"
    assert all(v["release"]["verdict"] in ("VERIFIED", "NOT APPLICABLE") for v in staged["properties"].values())
    assert rows["unknown"]["note"] and "properties" not in rows["unknown"]


def test_the_table_shows_family_options_and_verdicts(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "250")
    unified = tree(tmp_path / "unified", "ack-drain")
    argv = ["sglang", "--engine", "model", str(unified), "--cache-dir", str(tmp_path / "cache"), "--quiet"]
    assert main(argv + sum((["--scenarios", s] for s in ACK), [])) == 0
    out = capsys.readouterr().out
    for text in ("unified (ack-drain)", "cache=unified", "judged_class", "ack_match=operation (ack_match)",
                 "deadline=issue (timeout)", "no_early_acceptance", "VERIFIED", "ack-drain leaves out:"):
        assert text in out, text


def remove_guard(folder: Path) -> Path:
    """Drop the seed fix's page-list test from a fixture tree's predicate; its sglang/srt folder."""
    path = folder / "sglang" / "srt" / "mem_cache" / "hiradix_cache.py"
    text = path.read_text()
    assert GUARD in text
    path.write_text(text.replace(GUARD, ""))
    return folder / "sglang" / "srt"


def test_an_edited_predicate_is_refused_for_the_tree_and_judged_with_predicate_source(tmp_path, capsys):
    """The tree's answer would rest on the loader's reading of an edited predicate, so the tree is
    refused by name (exit 3); the predicate itself is judged on the model with --predicate-source."""
    edited = tree(tmp_path / "edited", *LATE_ONCE)
    remove_guard(edited)
    status, doc = sglang(capsys, tmp_path, str(edited))
    [row] = doc["releases"]
    assert status == 3 and row["status"] == "not modelled" and "properties" not in row
    assert row["note"].startswith("HiRadixCache.can_terminate_prefetch at mem_cache/hiradix_cache.py:")
    assert "differs from every release the model follows" in row["note"]
    assert row["path_code"]["differing"] == [{"piece": "HiRadixCache.can_terminate_prefetch",
                                              "file": "mem_cache/hiradix_cache.py",
                                              "line": row["path_code"]["differing"][0]["line"]}]
    spec = f"{edited / 'sglang/srt/mem_cache/hiradix_cache.py'}:HiRadixCache.can_terminate_prefetch"
    capsys.readouterr()
    assert main(["run", POLL[0], "--predicate-source", spec, "--quiet", "--json", "-"]) == 0
    [run] = json.loads(capsys.readouterr().out)["runs"]
    verdicts = {p["name"]: p["verdict"] for p in run["properties"]}
    assert verdicts["no_early_acceptance"] == "VIOLATED"


def test_an_edited_release_without_the_guard_has_the_race(tmp_path, capsys, monkeypatch, fixture_trees_followed):
    edited = tree(tmp_path / "edited", *LATE_ONCE)
    remove_guard(edited)
    also_follow(monkeypatch, fixture_trees_followed, "edited", edited / "sglang" / "srt")
    status, doc = sglang(capsys, tmp_path, str(edited))
    [row] = doc["releases"]
    assert status == 1 and row["status"] == "checked"
    own, ours = row["properties"]["no_early_acceptance"]["release"], row["properties"]["no_early_acceptance"]["transcription"]
    assert own["verdict"] == "VIOLATED" and own["steps"] > 0 and own["case"] == "tp2"
    assert ours["verdict"] == "VERIFIED"  # our transcription keeps the guard: the difference is the edit
    # the printed command reproduces the counterexample
    command = shlex.split(own["command"])
    assert command[:2] == ["prefetch-check", "trace"] and "--set" in command
    assert main(command[1:] + ["--quiet", "--format", "json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert len(shown["steps"]) == own["steps"] and shown["property"]["name"] == "no_early_acceptance"


def test_an_edited_unified_predicate_is_caught(tmp_path, capsys, monkeypatch, fixture_trees_followed):
    edited = tree(tmp_path / "edited", "ack-drain")
    path = edited / "sglang" / "srt" / "mem_cache" / "unified_radix_cache.py"
    text = path.read_text()
    wait = '        if self.prefetch_stop_policy == "wait_complete":\n            return False\n'
    assert wait in text
    path.write_text(text.replace(wait, wait.replace(
        "return False", "return operation.completed_tokens == len(operation.hash_value) * self.page_size")))
    also_follow(monkeypatch, fixture_trees_followed, "edited", edited / "sglang" / "srt")
    status, doc = sglang(capsys, tmp_path, str(edited), scenarios=ACK)
    [row] = doc["releases"]
    assert status == 1 and row["properties"]["no_early_acceptance"]["release"]["verdict"] == "VIOLATED"


def test_a_footnote_says_which_options_of_its_case_the_release_replaced(tmp_path, capsys, monkeypatch,
                                                                     fixture_trees_followed):
    """A case written for another shape (here ACKs matched by request id) runs with the release's
    options; its footnote and JSON say so, so its name does not mislead."""
    edited = tree(tmp_path / "edited", "ack-drain")
    path = edited / "sglang" / "srt" / "mem_cache" / "unified_radix_cache.py"
    wait = '        if self.prefetch_stop_policy == "wait_complete":\n            return False\n'
    path.write_text(path.read_text().replace(wait, wait.replace("return False", "return True")))
    also_follow(monkeypatch, fixture_trees_followed, "edited", edited / "sglang" / "srt")
    rid = tmp_path / "by-rid.toml"
    rid.write_text((ROOT / "scenarios" / "ack-drain" / "fixture-ack-tp2.toml").read_text() + 'ack_match = "rid"\n')
    status, doc = sglang(capsys, tmp_path, str(edited), scenarios=[str(rid)])
    [row] = doc["releases"]
    violated = row["properties"]["no_early_acceptance"]["release"]
    assert status == 1 and violated["verdict"] == "VIOLATED" and violated["case"] == "by-rid"
    assert violated["case_options_replaced"] == "with this release's ack_match=operation for its rid"
    assert "--set ack_match=operation" in violated["command"]
    assert main(["sglang", "--engine", "model", str(edited), "--cache-dir", str(tmp_path / "cache"), "--quiet", "--scenarios", str(rid)]) == 1
    assert re.search(r"^\[\d+\] by-rid \(with this release's ack_match=operation for its rid\): prefetch-check trace",
                     capsys.readouterr().out, re.M)


def test_a_second_run_comes_from_the_cache(tmp_path, capsys):
    trees = [str(tree(tmp_path / "unified", "ack-drain")), str(tree(tmp_path / "late", *LATE_ONCE))]
    _, first = sglang(capsys, tmp_path, *trees)
    _, second = sglang(capsys, tmp_path, *trees)
    runs = sum(len(r["runs"]) for r in first["releases"])
    assert first["searches"] > 0 and first["from_cache"] == 0
    assert second["searches"] == 0 and second["from_cache"] == runs
    assert [r["properties"] for r in first["releases"]] == [r["properties"] for r in second["releases"]]
    assert all(run["cached"] for r in second["releases"] for run in r["runs"])


def test_the_same_check_is_searched_once_across_releases(tmp_path, capsys):
    """Two releases with the same predicate code and options share every check."""
    a, b = tree(tmp_path / "a", *LATE_ONCE), tree(tmp_path / "b", *LATE_ONCE)
    _, doc = sglang(capsys, tmp_path, str(a), str(b), scenarios=POLL)
    assert doc["searches"] == 2  # tp2 under the release's predicate and under fixed, once for both trees


def test_the_class_shipped_but_not_built_when_asked(tmp_path, capsys):
    status, doc = sglang(capsys, tmp_path, str(tree(tmp_path / "t", "ack-drain")), "--cache-class", "HiRadixCache",
                         scenarios=ACK)
    [row] = doc["releases"]
    assert row["family"] == "ack-drain-hiradix" and row["status"] == "checked"
    assert row["predicate"] == "mem_cache/hiradix_cache.py:HiRadixCache.can_terminate_prefetch"
    assert {o["name"]: o["value"] for o in row["options"]}["cache"] == "hiradix"


def test_a_protocol_without_scenarios_says_so(tmp_path, capsys):
    status, doc = sglang(capsys, tmp_path, str(tree(tmp_path / "u", "ack-drain")), scenarios=POLL)
    [row] = doc["releases"]
    # no verdicts for the tree: exit 3, so a CI gate does not pass on a tree nobody checked
    assert status == 3 and row["status"] == "no scenarios" and "--scenarios" in row["note"]


def test_markdown_is_appended(tmp_path, capsys):
    out = tmp_path / "summary.md"
    unified = str(tree(tmp_path / "u", "ack-drain"))
    for _ in range(2):
        assert main(["sglang", "--engine", "model", unified, "--cache-dir", str(tmp_path / "cache"), "--markdown", str(out), "--quiet",
                     "--scenarios", ACK[0]]) == 0
    text = out.read_text()
    assert text.count("## prefetch-check sglang") == 2 and "| no_early_acceptance |" in text


@pytest.mark.parametrize("args, words", [
    (["--max-ranks", "-1"], "--max-ranks"),
    (["--commits", "a..b"], "exactly one SPEC"),
    (["--json", "/nonexistent-folder/x.json"], "does not exist"),
])
def test_bad_input_is_one_paragraph_and_exit_2(tmp_path, capsys, args, words):
    assert main(["sglang", "--engine", "model", "0.5.20", "--cache-dir", str(tmp_path), *args]) == 2
    assert words in capsys.readouterr().err


# ---- --commits: the bisect a maintainer wants


def test_commits_say_where_each_verdict_changed(tmp_path, capsys, monkeypatch, fixture_trees_followed):
    repo = new_repo(tmp_path / "sglang")
    tree(repo / "python", *LATE_ONCE)

    def commit(message: str) -> str:
        git(repo, "add", "-A")
        git(repo, "commit", "-qm", message)
        return git(repo, "rev-parse", "HEAD")

    base = commit("late2025 with the guard")
    remove_guard(repo / "python")
    broken = commit("drop the guard")
    (repo / "README.md").write_text("docs only\n")
    commit("docs only")
    tree(repo / "python", *LATE_ONCE)
    fixed = commit("restore the guard")

    # by default the commit that edits the predicate is refused, and that is a change too
    status, doc = sglang(capsys, tmp_path, str(repo), "--commits", f"{base}..HEAD", scenarios=POLL)
    assert [r["status"] for r in doc["releases"]] == ["checked", "not modelled", "checked"]
    refused = [c for c in doc["changes"] if c["what"] == "refused"]
    assert [(c["after"], c["at"].split()[0]) for c in refused] == [("not modelled", broken[:10])]
    assert "differs from every release the model follows" in refused[0]["why"]
    assert [c for c in doc["changes"] if c["what"] != "refused"] == []  # restored: as the base, nothing changed
    assert status == 3
    # with the broken commit standing for a release, the verdict that changed is named
    also_follow(monkeypatch, fixture_trees_followed, "broken", remove_guard(tree(tmp_path / "broken", *LATE_ONCE)))
    status, doc = sglang(capsys, tmp_path, str(repo), "--commits", f"{base}..HEAD", scenarios=POLL)
    labels = [r["release"] for r in doc["releases"]]
    assert [label.split()[0] for label in labels] == [base[:10], broken[:10], fixed[:10]]  # docs-only left out
    assert labels[0].endswith("(base)")
    own = [r["properties"]["no_early_acceptance"]["release"]["verdict"] for r in doc["releases"]]
    assert own == ["VERIFIED", "VIOLATED", "VERIFIED"]
    changes = [(c["what"], c["before"], c["after"], c["at"].split()[0]) for c in doc["changes"]]
    assert ("no_early_acceptance", "VERIFIED", "VIOLATED", broken[:10]) in changes
    assert ("no_early_acceptance", "VIOLATED", "VERIFIED", fixed[:10]) in changes
    assert status == 1
    # the trace command of the broken commit points at a file that exists
    command = doc["releases"][1]["properties"]["no_early_acceptance"]["release"]["command"]
    source = shlex.split(command)[shlex.split(command).index("--predicate") + 1].rpartition(":")[0]
    assert Path(source).is_file()


def test_a_regression_after_a_refused_commit_is_still_found(tmp_path, capsys, monkeypatch, fixture_trees_followed):
    """Each commit is compared with the last one judged: a refused commit in between (listed as such)
    does not hide the regression after it; the line names the commit by its whole subject."""
    repo = new_repo(tmp_path / "sglang")
    srt = tree(repo / "python", *LATE_ONCE) / "sglang" / "srt"
    controller = srt / "managers" / "cache_controller.py"
    original = controller.read_text()

    def commit(message: str) -> str:
        git(repo, "add", "-A")
        git(repo, "commit", "-qm", message)
        return git(repo, "rev-parse", "HEAD")

    base = commit("late2025 with the guard")
    assert original.count("prefetch_threshold=256") == 1
    controller.write_text(original.replace("prefetch_threshold=256", "prefetch_threshold=128"))
    refused = commit("lower the default prefetch threshold, a change in code the model has not read")
    controller.write_text(original)
    broken_srt = remove_guard(repo / "python")
    subject = "drop the page-list test from can_terminate_prefetch because the publish always comes first"
    broken = commit(subject)
    also_follow(monkeypatch, fixture_trees_followed, "broken", broken_srt)
    monkeypatch.setenv("COLUMNS", "400")
    argv = ["sglang", "--engine", "model", str(repo), "--commits", f"{base}..HEAD", "--cache-dir", str(tmp_path / "cache"), "--quiet"]
    assert main(argv + ["--scenarios", POLL[0]]) == 1
    out = capsys.readouterr().out
    assert f"no_early_acceptance: VERIFIED -> VIOLATED at {broken[:10]} {subject}\n" in out
    assert f"{refused[:10]} lower the default prefetch threshold, a change in code the model has not read: " \
           "not modelled, skipped" in out
    status, doc = sglang(capsys, tmp_path, str(repo), "--commits", f"{base}..HEAD", scenarios=POLL)
    found = [(c["what"], c["before"], c["after"], c["at"]) for c in doc["changes"]]
    assert ("no_early_acceptance", "VERIFIED", "VIOLATED", f"{broken[:10]} {subject}") in found
    assert ("refused", "", "not modelled", f"{refused[:10]} lower the default prefetch threshold, a change in code "
            "the model has not read") in found


def test_a_tree_mixing_two_followed_families_gets_no_model_verdicts(tmp_path, capsys):
    """Every piece is code of a followed fixture, but the controller is late2025's and the cache the
    seed's: the model's configuration is known for neither mix, so the row is refused by name."""
    mixed = tree(tmp_path / "mixed", "seed")
    late = files_of(*FAMILIES["late2025"][0])
    (mixed / "sglang" / "srt" / "managers" / "cache_controller.py").write_text(late["managers/cache_controller.py"])
    status, doc = sglang(capsys, tmp_path, str(mixed))
    [row] = doc["releases"]
    assert status == 3 and row["status"] == "not modelled" and "properties" not in row
    assert row["note"].startswith("its prefetch path mixes releases:") and "fixture late2025" in row["note"]
    assert row["family"] == "unknown" and row["shape"]["acks"]["value"] is None  # no absence read off it
