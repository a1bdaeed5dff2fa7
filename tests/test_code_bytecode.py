"""The child's compiled-code cache (model/code/rt/bytecode.py): a check through it finds what a
check compiling from source finds; an entry is the code of the source it is filed under; a hit
from another folder gets that folder's file name."""

from __future__ import annotations

import importlib
import sys

from prefetch_check.model.code import CodeConfig, CodeLimits, check_tree
from prefetch_check.model.code.rt import bytecode
from test_code_executor import EDITS, edited, release


def _figures(result):
    return (result.verdicts, result.runs, result.states, result.exhaustive,
            {p: (v.schedule, v.site, v.message) for p, v in result.violations.items()})


def test_a_check_through_the_cache_finds_what_one_compiling_from_source_finds(tmp_path, monkeypatch):
    """An edited copy of 0.5.23 whose edit is caught (its counterexample names the edited file's
    line): with the cache off, through an empty cache (every file compiled in the child, then
    kept), and with every file read back; then the release itself, whose unedited files are hits
    filed from the copy's folder."""
    rel, old, new, config, prop = EDITS["publish_before_alloc"]
    tree = edited(tmp_path / "tree", release("0.5.23"), rel, old, new)
    limits = CodeLimits(max_seconds=120)
    monkeypatch.setenv(bytecode.CACHE_ENV, "off")
    plain = check_tree(tree, config, limits)
    assert plain.verdicts[prop] == "VIOLATED"
    folder = tmp_path / "code"
    monkeypatch.setenv(bytecode.CACHE_ENV, str(folder))
    first = check_tree(tree, config, limits)
    kept = sorted(p.name for p in folder.iterdir())
    again = check_tree(tree, config, limits)
    assert _figures(first) == _figures(plain) == _figures(again)
    assert len(kept) > 50  # the tree's files and the executor's own modules the child imports
    assert sorted(p.name for p in folder.iterdir()) == kept  # the second child compiled nothing
    monkeypatch.setenv(bytecode.CACHE_ENV, "off")
    release_plain = check_tree(release("0.5.23"), config, limits, coverage={"count": {}})
    monkeypatch.setenv(bytecode.CACHE_ENV, str(folder))
    release_cached = check_tree(release("0.5.23"), config, limits, coverage={"count": {}})
    assert _figures(release_cached) == _figures(release_plain)
    assert release_cached.coverage == release_plain.coverage and release_plain.coverage["lines"]  # the files' own names
    assert len(list(folder.iterdir())) == len(kept) + 1  # only the file the edit changed was new


def test_an_entry_is_the_code_of_the_source_it_is_filed_under(tmp_path):
    module = tmp_path / "m.py"
    module.write_text("def f():\n    return 1\n")
    folder = tmp_path / "code"
    bytecode.store(folder, [str(module)])
    module.write_text("def f():\n    return 2\n")  # changed after the child compiled it
    bytecode.store(folder, [str(module)])
    names = sorted(p.name for p in folder.iterdir())
    assert names == sorted({bytecode.key(b"def f():\n    return 1\n"), bytecode.key(b"def f():\n    return 2\n")})


def test_a_hit_from_another_folder_gets_that_folders_file_name(tmp_path, monkeypatch):
    """The same source in two folders: one entry, and each module's functions name their own file
    (what tracebacks, the sites of a counterexample and coverage read)."""
    a, b = tmp_path / "a", tmp_path / "b"
    for d in (a, b):
        d.mkdir()
        (d / "pc_cached_mod.py").write_text("def f():\n    def g():\n        return 1\n    return g\n")
    folder = tmp_path / "code"
    bytecode.store(folder, [str(a / "pc_cached_mod.py")])
    from importlib import _bootstrap_external

    monkeypatch.setattr(_bootstrap_external.SourceLoader, "source_to_code",
                        _bootstrap_external.SourceLoader.source_to_code)  # the hook is undone after the test
    misses = bytecode.install(str(folder))
    monkeypatch.syspath_prepend(str(b))
    monkeypatch.delitem(sys.modules, "pc_cached_mod", raising=False)
    module = importlib.import_module("pc_cached_mod")
    sys.modules.pop("pc_cached_mod")
    assert misses == []
    assert module.f.__code__.co_filename == str(b / "pc_cached_mod.py")
    assert module.f().__code__.co_filename == str(b / "pc_cached_mod.py")


def test_off_keeps_nothing(monkeypatch):
    monkeypatch.setenv(bytecode.CACHE_ENV, "off")
    assert bytecode.cache_dir() is None
    assert bytecode.install(None) == []


def test_the_folder_is_pruned_to_its_newest_entries(tmp_path, monkeypatch):
    """Each edited copy of a release adds the edited file's entry: past KEEP + KEEP // 3 entries
    the oldest go, down to KEEP."""
    import os

    monkeypatch.setattr(bytecode, "KEEP", 3)
    folder = tmp_path / "code"
    sources = []
    for i in range(5):  # 3 + 1 entries are kept as they are; the fifth store prunes the two oldest
        module = tmp_path / f"m{i}.py"
        module.write_text(f"X = {i}\n")
        sources.append(module)
        bytecode.store(folder, [str(module)])
        if i < 4:
            os.utime(folder / bytecode.key(module.read_bytes()), (1_000 + i, 1_000 + i))
    left = {p.name for p in folder.iterdir()}
    assert left == {bytecode.key(m.read_bytes()) for m in sources[2:]}
