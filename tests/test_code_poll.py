"""The executor's predicate-poll world (model/code/worlds/predicate_poll/harness.py): the HiRadixCache and
HiCacheController of 0.5.1-0.5.18 run as written, on the real cached releases (skipped with the
reason where the package index is unreachable and a release is not cached).

0.5.1's early acceptance is found from its own code: under wait_complete with one rank, the
predicate `completed_tokens == len(hash_value) * page_size` holds (0 == 0) before the prefetch
thread publishes its page list, and the scheduler accepts a prefetch that loads nothing.
0.5.1.post3 guards the predicate with the page list's length and is clean of it."""

from __future__ import annotations

import json
import shutil

import pytest

from prefetch_check.cli import main
from prefetch_check.model.code import CodeConfig, CodeLimits, check_tree
from pack_helpers import use_cases
from prefetch_check.sglang.mappings import mapping
from prefetch_check.sglang.code_world import world_of
from test_sglang_release import release_srt

POLL = dict(world="predicate-poll")
LIMITS = CodeLimits(max_seconds=120)
HIRADIX = "mem_cache/hiradix_cache.py"
PREDICATE = "operation.completed_tokens == len(operation.hash_value) * self.page_size"
GUARD = "if len(operation.hash_value) == 0:"


def line_of(srt, rel: str, text: str) -> int:
    lines = (srt / rel).read_text().splitlines()
    found = [n for n, line in enumerate(lines, 1) if text in line]
    assert len(found) == 1, (rel, text, found)
    return found[0]


def test_0_5_1_accepts_a_prefetch_before_its_page_list_is_published():
    srt = release_srt("0.5.1")
    result = check_tree(srt, CodeConfig(ranks=1, **POLL), LIMITS)
    assert result.exhaustive and not result.not_modelled
    assert result.verdicts["no_early_acceptance"] == "VIOLATED"
    assert result.verdicts["wait_complete_delivers"] == "VIOLATED"  # the early acceptance loads nothing
    early = result.violations["no_early_acceptance"]
    assert "hash_value was still empty" in early.message
    predicate = f"{HIRADIX}:{line_of(srt, HIRADIX, PREDICATE)}"
    reads = [s for s in early.steps if s.site == predicate]
    assert [s.label.rsplit(".", 1)[-1] for s in reads] == ["completed_tokens", "hash_value"]
    assert reads[0].observed.endswith("completed_tokens=0") and reads[1].observed.endswith("hash_value=[]")
    assert all(s.choice == "S0" for s in early.steps)  # the scheduler alone: the prefetch thread never ran
    assert early.site.startswith(f"{HIRADIX}:")  # where check_prefetch_progress asks the predicate


def test_0_5_1_post3_guards_the_predicate_and_is_clean_of_it():
    srt = release_srt("0.5.1.post3")
    line_of(srt, HIRADIX, GUARD)  # the fix: an empty page list is not complete
    result = check_tree(srt, CodeConfig(ranks=1, **POLL), LIMITS)
    assert result.exhaustive and not result.not_modelled
    assert result.verdicts["no_early_acceptance"] == "VERIFIED"
    assert result.verdicts["wait_complete_delivers"] == "VERIFIED"


def test_the_guard_removed_from_0_5_1_post3_brings_the_race_back(tmp_path):
    """The executor follows the code, not the version: the fixed release with its guard edited out."""
    srt = tmp_path / "srt"
    shutil.copytree(release_srt("0.5.1.post3"), srt)
    path = srt / HIRADIX
    text = path.read_text()
    assert text.count(GUARD) == 1
    path.write_text(text.replace(GUARD, "if False:"))
    result = check_tree(srt, CodeConfig(ranks=1, **POLL), LIMITS)
    assert result.verdicts["no_early_acceptance"] == "VIOLATED"


def test_0_5_18_waits_forever_on_an_empty_page_list_at_threshold_0():
    """0.5.18's raw threshold test lets 0 hits through; the guarded predicate never accepts the
    empty list: the request polls forever (the model's release-staged-drain-threshold-zero)."""
    result = check_tree(release_srt("0.5.18"), CodeConfig(ranks=1, hits=(0,), threshold_pages=0, **POLL), LIMITS)
    assert result.exhaustive and result.verdicts["progress"] == "VIOLATED"
    assert "never admitted" in result.violations["progress"].message
    clean = check_tree(release_srt("0.5.16"), CodeConfig(ranks=1, hits=(0,), threshold_pages=0, **POLL), LIMITS)
    assert clean.exhaustive and clean.verdicts["progress"] == "VERIFIED"  # its prefetch thread revokes 0 hits


@pytest.mark.parametrize("version", ["0.5.2", "0.5.6", "0.5.16"])
def test_each_poll_family_runs_as_written_with_nothing_outside_the_world(version):
    result = check_tree(release_srt(version), CodeConfig(ranks=1, **POLL), LIMITS)
    assert result.exhaustive and not result.not_modelled
    assert {v for v in result.verdicts.values()} <= {"VERIFIED", "NOT JUDGED"}


def test_the_world_is_chosen_by_the_classes_and_threads_a_tree_has():
    assert world_of(release_srt("0.5.1"), "HiRadixCache") == ("predicate-poll", "")
    assert world_of(release_srt("0.5.18"), "HiRadixCache") == ("predicate-poll", "")
    assert world_of(release_srt("0.5.23"), "UnifiedRadixCache") == ("ack-drain", "")
    # 0.5.19's HiRadixCache runs the sync thread: the ack-drain world's (tests/test_code_hiradix.py)
    assert world_of(release_srt("0.5.19"), "HiRadixCache") == ("ack-drain", "")


def test_the_command_gives_0_5_1_its_code_column(tmp_path, capsys, monkeypatch):
    use_cases(monkeypatch, "predicate-poll", mapping("predicate-poll").cases[:1])
    argv = ["sglang", "--engine", "code", str(release_srt("0.5.1")), "--cache-dir", str(tmp_path / "cache"),
            "--quiet", "--json", "-"]
    assert main(argv) == 1
    code = json.loads(capsys.readouterr().out)["releases"][0]["code"]
    assert code["engine"] == "code" and code["ran"] and code["not_modelled"] == []
    early = code["properties"]["no_early_acceptance"]
    assert early["verdict"] == "VIOLATED" and early["case"] == "1 rank x 1 request"
    assert main(argv[:-2] + ["--code-trace", "no_early_acceptance"]) == 1
    assert f"{HIRADIX}:" in capsys.readouterr().out
