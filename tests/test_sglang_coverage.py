"""Say what ran (issue "Run what users run", item 1): the statements a check executed, the
statements an edit changed, and "not checked" for a changed statement no case ran.

The counting of statements (statements.py) and the alignment of an edit (changed.py) are tested
on small sources written here; the tracer (rt/tracer.py, coverage.py) on a small module run in
this process with two "runs"; the whole chain on 0.5.23 with a named one-place edit applied at
test time (skipped where the release cannot be fetched), with the code engine cut to two cases.
"""

from __future__ import annotations

import ast
import dataclasses
import json
import shutil
import sys
import textwrap
from pathlib import Path

import pytest

from prefetch_check.cli import main
from prefetch_check.sglang.changed import DELETED, INSERTED, MODIFIED, SIGNATURE, diff_path
from prefetch_check.sglang.path_code import prefetch_path
from prefetch_check.sglang.statements import statements, body_of

FILE = "mem_cache/unified_radix_cache.py"
CLASS = '''
class UnifiedRadixCache:
    def check_prefetch_progress(self, rid):
        """Docstrings never count."""
        op = self.ongoing.get(rid)
        if op is None:
            return False
        done = self._can_terminate_prefetch(op)
        return done

    def _can_terminate_prefetch(self, op):
        if self.policy == "best_effort":
            return True
        return op.done
'''


def path_of(text: str) -> dict:
    return prefetch_path({FILE: text}, "UnifiedRadixCache")


def changed(old: str, new: str) -> list[tuple[int, str]]:
    found = diff_path({FILE: new}, path_of(new), {FILE: old}, path_of(old))
    return [(c.line, c.kind) for c in found]


def line_of(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


def test_statements_are_counted_once_at_their_first_line_without_docstrings():
    source = textwrap.dedent('''
        def f(x):
            """doc"""
            y = (x +
                 1)
            if y:
                return y
            try:
                pass
            except ValueError:
                raise
    ''')
    [fn] = ast.parse(source).body
    found = [(s.line, s.kind) for s in statements(body_of(fn))]
    assert found == [(4, "Assign"), (6, "If"), (7, "Return"), (8, "Try"), (9, "Pass"), (10, "except"), (11, "Raise")]
    assert next(s for s in statements(body_of(fn)) if s.line == 4).span == (4, 5)


def test_an_unchanged_or_reformatted_path_has_no_changed_statement():
    reformatted = CLASS.replace('"""Docstrings never count."""', '"""Another docstring."""  # and a comment')
    assert changed(CLASS, CLASS) == []
    assert changed(CLASS, reformatted) == []


def test_an_inserted_a_modified_and_a_deleted_statement_are_found_where_they_are():
    inserted = CLASS.replace("        done = self._can", "        self.polls += 1\n        done = self._can")
    assert changed(CLASS, inserted) == [(line_of(inserted, "self.polls += 1"), INSERTED)]
    modified = CLASS.replace('== "best_effort"', '!= "best_effort"')
    assert changed(CLASS, modified) == [(line_of(modified, '!= "best_effort"'), MODIFIED)]
    deleted = CLASS.replace("        if op is None:\n            return False\n", "")
    assert changed(CLASS, deleted) == [(line_of(deleted, "done = self._can"), DELETED)]


def test_a_changed_signature_counts_at_the_first_statement_the_function_runs():
    edited = CLASS.replace("def _can_terminate_prefetch(self, op):", "def _can_terminate_prefetch(self, op, force=False):")
    assert changed(CLASS, edited) == [(line_of(edited, 'if self.policy == "best_effort"'), SIGNATURE)]


def test_the_tracer_counts_the_runs_that_execute_a_span_and_the_lines_any_run_executed(tmp_path, monkeypatch):
    pytest.importorskip("coverage")
    from prefetch_check.model.code.rt.tracer import Tracer

    srt = tmp_path / "sglang" / "srt"
    srt.mkdir(parents=True)
    (srt / "tiny_prefetch.py").write_text(textwrap.dedent('''
        def step(flag):
            if flag:
                return "taken"
            return "not taken"
    '''))
    monkeypatch.syspath_prepend(str(srt))
    tracer = Tracer(srt, {"tiny_prefetch.py": [[4, 4], [5, 5]]})
    if sys.gettrace() is not None:
        pytest.skip("this process is traced already (a debugger or coverage run): the tracer cannot start")
    tracer.start()
    try:
        import tiny_prefetch

        for flag in (True, False, True):
            tracer.next_run()
            tiny_prefetch.step(flag)
    finally:
        tracer.stop()
        sys.modules.pop("tiny_prefetch", None)
    answer = tracer.answer()
    assert answer["runs"] == 3
    assert {4, 5} <= set(answer["lines"]["tiny_prefetch.py"])
    counted = {tuple(e["span"]): (e["runs"], e["load"]) for e in answer["counted"]["tiny_prefetch.py"]}
    assert counted == {(4, 4): (2, False), (5, 5): (1, False)}


# ---------------------------------------------------------------- the whole chain on 0.5.23


FAST = ("1 rank x 1 request", "1 rank, best_effort")


@pytest.fixture
def fast_cases(monkeypatch):
    """The code engine cut to two cases: one with wait_complete, one with best_effort."""
    from prefetch_check.sglang import code_checks

    whole = code_checks.mapping

    def cut(protocol):
        found = whole(protocol)
        return dataclasses.replace(found, cases=tuple(c for c in found.cases if c.name in FAST))

    monkeypatch.setattr(code_checks, "mapping", cut)


def edited_release(tmp_path: Path, old: str, new: str, file: str = FILE) -> Path:
    from test_sglang_release import release_srt

    srt = release_srt("0.5.23")
    root = tmp_path / "tree"
    shutil.copytree(srt, root / "sglang" / "srt")
    target = root / "sglang" / "srt" / file
    text = target.read_text()
    assert text.count(old) == 1, f"the named edit's anchor {old!r} is not once in 0.5.23's {file}"
    target.write_text(text.replace(old, new))
    return root


def check(tmp_path: Path, tree: Path, capsys) -> tuple[int, dict, str]:
    out = tmp_path / "report.json"
    status = main(["sglang", str(tree), "--engine", "code", "--cache-dir", str(tmp_path / "cache"), "--quiet",
                   "--json", str(out)])
    return status, json.loads(out.read_text())["releases"][0], capsys.readouterr().out


@pytest.mark.usefixtures("fast_cases")
def test_an_edit_no_case_executes_is_not_checked_and_gets_no_verdict(tmp_path, capsys):
    """evict_host of buffer_only mode returns 1 instead of 0: no case evicts host memory."""
    tree = edited_release(tmp_path, "            # is operation-owned (freed at each ack): nothing is evictable.\n"
                                    "            return 0", "            # edited\n            return 1")
    status, release, out = check(tmp_path, tree, capsys)
    assert status == 3
    assert release["status"] == "not checked"
    assert release["coverage"]["changed"]["against"] == "0.5.23"
    refusal = release["coverage"]["changed"]["never_executed"]
    assert refusal.startswith(f"{FILE}:") and "no case enters UnifiedRadixCache.evict_host" in refusal
    assert "not checked:" in out and "VERIFIED" not in out and "VIOLATED" not in out


@pytest.mark.usefixtures("fast_cases")
def test_an_edit_of_a_file_the_path_takes_whole_that_the_engine_never_runs_is_not_checked(tmp_path, capsys):
    """SimStorage.batch_exists (a backend the path reaches only through a call it cannot resolve,
    so its file is taken whole) sleeps no longer: the code engine does not run that file."""
    sim = "mem_cache/storage/sim_storage.py"
    tree = edited_release(tmp_path, "    ) -> int:\n        self._sleep_io(0, self.read_gbps)\n",
                          "    ) -> int:\n", file=sim)
    status, release, out = check(tmp_path, tree, capsys)
    assert status == 3 and release["status"] == "not checked"
    refusal = release["coverage"]["changed"]["never_executed"]
    assert refusal.startswith(f"{sim}:") and f"the code engine does not run {sim}" in refusal
    assert "VERIFIED" not in out and "VIOLATED" not in out


@pytest.mark.usefixtures("fast_cases")
def test_an_edit_the_cases_execute_keeps_its_verdicts_and_says_which_schedules_ran_it(tmp_path, capsys):
    tree = edited_release(tmp_path, '        if self.prefetch_stop_policy == "best_effort":\n            return True',
                          '        if self.prefetch_stop_policy == "best_effort":\n            flag = True\n'
                          '            return flag')
    status, release, out = check(tmp_path, tree, capsys)
    assert release["status"] != "not checked"
    statements_ = release["coverage"]["changed"]["statements"]
    assert statements_ and all(s["schedules"] > 0 for s in statements_)
    assert {c["case"] for s in statements_ for c in s["cases"]} == {"1 rank, best_effort"}
    assert release["coverage"]["changed"]["never_executed"] == ""
    assert "coverage: its code ran" in out
    assert status in (0, 1, 3) and "VERIFIED" in out
    cov = release["coverage"]
    # every statement no case ran is named with its reason, once (issue 29: "every statement left out")
    assert sum(r["statements"] for r in cov["left_out"]) == cov["statements"] - cov["executed"]
    for f in cov["per_function"]:
        assert sum(f.get("left_out", {}).values()) == f["statements"] - f["executed"], f["function"]
    whys = {r["why"] for r in cov["left_out"]}
    assert any(w.startswith("not loaded: a storage backend") for w in whys)
    assert "never entered: no case calls it" in whys or any(w.startswith("never entered: ") for w in whys)


# ---------------------------------------------------------------- why a statement was left out


def test_a_statement_no_case_ran_is_named_by_the_innermost_block_no_case_ran():
    from prefetch_check.sglang.left_out import BLOCKS, EARLY, statement_reasons

    source = textwrap.dedent('''
        def f(x):
            try:
                if x:
                    y = 1
                else:
                    y = 2
                    z = 3
            except KeyError:
                y = 4
            for i in range(x):
                y += i
            if y:
                return y
            return 0
    ''')
    fn = ast.parse(source).body[0]
    own = list(statements(body_of(fn)))
    ran = {3, 4, 5, 11, 13, 14}  # x true, the loop never runs its body, return y
    reasons = statement_reasons(own, ran)
    assert reasons == {BLOCKS["If"]: 2, BLOCKS["except"]: 2, BLOCKS["For"]: 1, EARLY: 1}
    assert sum(reasons.values()) == len(own) - sum(1 for s in own if s.covers(ran))


def test_a_file_no_case_loads_is_named_by_what_the_worlds_stand_in_for_it():
    from prefetch_check.sglang.left_out import STOOD_IN, file_reason

    assert "storage backend" in file_reason("mem_cache/storage/mooncake_store/mooncake_store.py")
    assert "another cache class" in file_reason("mem_cache/storage/lmcache/lmcache_unified_radix_cache.py")
    assert "host KV pool" in file_reason("mem_cache/pool_host/mha.py")
    assert "radix tree" in file_reason("mem_cache/unified_cache/unified_tree_core.py")
    assert "device memory pool" in file_reason("mem_cache/allocator/swa.py")
    assert file_reason("layers/dp_attention.py").startswith(STOOD_IN) and "stub" in file_reason("layers/dp_attention.py")


def test_a_base_method_a_subclass_the_cases_run_overrides_is_named_so():
    from prefetch_check.sglang.left_out import OVERRIDDEN, overridden, overriding

    bases = {"HiCacheController": (), "HybridCacheController": ("HiCacheController",),
             "Deeper": ("HybridCacheController",), "Unrelated": ()}
    entered = {"HybridCacheController._storage_hit_query", "Deeper.reset"}
    assert overriding("HiCacheController._storage_hit_query", bases, entered) == [
        "HybridCacheController._storage_hit_query"]
    assert overriding("HiCacheController.reset", bases, entered) == ["Deeper.reset"]  # through two levels
    assert overridden("HiCacheController.reset", bases, entered) == OVERRIDDEN
    assert overridden("HiCacheController.write", bases, entered) == ""  # no subclass ran its own
    assert overridden("Unrelated._storage_hit_query", bases, entered) == ""  # not a base of the one that ran
    assert overridden("module_function", bases, entered) == ""


def test_a_function_that_ran_on_no_piece_of_the_path_is_named_off_the_path():
    from prefetch_check.sglang.coverage_report import off_path

    other = "mem_cache/other.py"
    files = {FILE: CLASS + "\n    def flush(self):\n        return 1\n",
             other: "def helper():\n    def inner():\n        return 2\n    return inner()\n"}
    path = path_of(files[FILE])
    on_path = {ident for ident, _, _ in functions_of_files(path, files)}
    raw = {FILE: {line_of(files[FILE], "op = self.ongoing"), line_of(files[FILE], "return 1")},
           other: {2, 3, 4}}
    found = off_path(path, on_path, raw, files.__getitem__)
    # check_prefetch_progress is an entry point; flush and helper ran on no piece (inner is helper's code)
    assert [(f.ident, f.executed) for f in found] == [(f"{other}:helper", 3), (f"{FILE}:UnifiedRadixCache.flush", 1)]
    assert off_path(path, on_path | {f.ident for f in found}, raw, files.__getitem__) == []


def functions_of_files(path, files):
    from prefetch_check.sglang.coverage_report import _functions_with_modules

    modules = {rel: ast.parse(text) for rel, text in files.items()}
    return [item for item, _ in _functions_with_modules(path, modules)]


def test_the_coverage_table_tool_refuses_what_is_not_a_report_by_name(tmp_path, capsys):
    from prefetch_check.sglang.coverage_report import main as table

    not_json, no_releases = tmp_path / "r.txt", tmp_path / "r.json"
    not_json.write_text("coverage\n")
    no_releases.write_text("{}")
    report = tmp_path / "ok.json"
    report.write_text(json.dumps({"releases": [{"release": "0.5.23"}]}))
    assert table([str(tmp_path / "missing.json")]) == 2
    assert table([str(not_json)]) == 2
    assert table([str(no_releases)]) == 2
    assert table([str(report), "0.5.99"]) == 2
    assert table(["--help"]) == 0
    err = capsys.readouterr().err
    assert "missing.json: not a `prefetch-check sglang --json` report (No such file or directory)" in err
    assert "r.txt: not a" in err and "no key 'releases'" in err
    assert "no release 0.5.99 in the report" in err and err.count("usage:") == 1
    assert "Traceback" not in err
