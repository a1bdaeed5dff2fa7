"""Reading SGLang trees offline: SPECs and ranges against a fake index, the cached listing, fetching
from a fake wheel, locating files in any tree kind, `installed` without import, files at git commits."""

import importlib
import json
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from prefetch_check.sglang.errors import SglangSourceError
from prefetch_check.sglang.families import classify
from prefetch_check.sglang.fetch import fetch_release
from prefetch_check.sglang.git import commits_touching, files_at
from prefetch_check.sglang.index import list_releases, parse_index_output
from prefetch_check.sglang.locate import find_srt, installed_sglang, read_protocol_files
from prefetch_check.sglang.spec import Installed, PathSpec, Range, Release, expand, parse_spec
from prefetch_check.sglang.tree_shape import tree_shape
from prefetch_check.sglang.trees import read_trees
from prefetch_check.sglang.versions import in_range, sort_versions
from sglang_fixtures import files_of, fixture_follows, write_srt

LISTING = ("sglang (0.5.23)\nAvailable versions: 0.5.23, 0.5.22.post1, 0.5.22, 0.5.21, 0.5.2, 0.5.1.post3, "
           "0.5.1, 0.4.10.post2, 0.5.0rc1\n")


class FakePip:
    """Stands in for `python -m pip`: answers `index versions` and `download` from local data."""

    def __init__(self, listing=LISTING, wheels=None, online=True):
        self.listing, self.wheels, self.online, self.calls = listing, wheels or {}, online, []

    def __call__(self, args):
        self.calls.append(list(args))
        if not self.online:
            return subprocess.CompletedProcess(args, 1, "", "WARNING: retrying\nERROR: Could not find a version "
                                               "(network is unreachable)\n")
        if args[:2] == ["index", "versions"]:
            return subprocess.CompletedProcess(args, 0, self.listing, "")
        if args[0] == "download":
            version = args[-1].split("==")[1]
            dest = Path(args[args.index("-d") + 1])
            shutil.copy(self.wheels[version], dest / Path(self.wheels[version]).name)
            return subprocess.CompletedProcess(args, 0, "", "")
        raise AssertionError(args)


def test_versions_order_and_ranges():
    assert sort_versions(["0.5.10", "0.5.2", "0.5.1.post3", "0.5.1", "0.5.0rc1", "0.5.0", "0.5.0rc0", "x"]) == [
        "0.5.0rc0", "0.5.0rc1", "0.5.0", "0.5.1", "0.5.1.post3", "0.5.2", "0.5.10"]  # pip's order
    assert in_range("0.5.22.post1", "0.5.1", "0.5.22")  # post releases of the upper bound are in
    assert in_range("0.5.1.post3", "0.5.1", "0.5.2")
    assert not in_range("0.5.23", "0.5.1", "0.5.22")
    assert not in_range("0.5.1.post3", "0.5.1", "0.5.1.post2")
    # pre-releases: in a range only with pip's --pre, or where a bound is one
    assert not in_range("0.5.10rc0", "0.5.1", "0.5.22") and in_range("0.5.10rc0", "0.5.1", "0.5.22", pre=True)
    assert in_range("0.5.0rc1", "0.5.0rc0", "0.5.0rc2") and not in_range("0.5.0", "0.5.0rc0", "0.5.0rc2")


def test_parse_spec_kinds(tmp_path):
    assert parse_spec("0.5.20") == Release("0.5.20")
    assert parse_spec("0.5.15.post1") == Release("0.5.15.post1")
    assert parse_spec("0.5.0rc2") == Release("0.5.0rc2")  # a pre-release, as pip spells it
    assert parse_spec("0.5.1..0.5.22") == Range("0.5.1", "0.5.22")
    assert parse_spec("installed") == Installed()
    assert parse_spec(str(tmp_path)) == PathSpec(tmp_path)
    for bad, words in (("0.5.22..0.5.1", "empty"), ("0.5..x", "range"), ("no/such/dir", "not a release")):
        with pytest.raises(SglangSourceError, match=words):
            parse_spec(bad)


def test_range_expands_to_what_the_index_lists():
    listing = tuple(parse_index_output(LISTING))
    assert listing[:3] == ("0.4.10.post2", "0.5.0rc1", "0.5.1")
    targets = expand(["0.5.1..0.5.22", "0.5.2"], lambda: listing)  # 0.5.2 again: listed once
    assert [t.version for t in targets] == ["0.5.1", "0.5.1.post3", "0.5.2", "0.5.21", "0.5.22", "0.5.22.post1"]
    assert [t.version for t in expand(["0.4.10..0.5.1"], lambda: listing)] == ["0.4.10.post2", "0.5.1", "0.5.1.post3"]
    assert [t.version for t in expand(["0.4.10..0.5.1"], lambda: listing, pre=True)] == [
        "0.4.10.post2", "0.5.0rc1", "0.5.1", "0.5.1.post3"]
    with pytest.raises(SglangSourceError, match="no sglang release"):
        expand(["0.5.3..0.5.20"], lambda: listing)


def test_release_spec_does_not_ask_the_index():
    def no_index():
        raise AssertionError("the index was asked for a single release")
    assert [t.version for t in expand(["0.5.20"], no_index)] == ["0.5.20"]


def test_listing_is_cached_with_its_date_and_used_when_offline(tmp_path):
    fresh = list_releases(tmp_path, FakePip())
    assert fresh.stale is None and "0.5.23" in fresh.versions
    assert json.loads((tmp_path / "index.json").read_text())["fetched_at"] == fresh.fetched_at
    offline = list_releases(tmp_path, FakePip(online=False))
    assert offline.versions == fresh.versions
    assert "unreachable" in offline.stale and fresh.fetched_at in offline.stale and "network" in offline.stale


def test_listing_offline_without_cache_is_a_clear_error(tmp_path):
    with pytest.raises(SglangSourceError, match="package index is unreachable .*network is unreachable"):
        list_releases(tmp_path, FakePip(online=False))


def make_wheel(tmp_path: Path, version: str, family: str) -> Path:
    """A wheel-shaped zip holding a fixture's files plus some that must not be kept."""
    wheel = tmp_path / f"sglang-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        for rel, text in files_of(family).items():
            z.writestr(f"sglang/srt/{rel}", text)
        z.writestr("sglang/srt/models/llama.py", "# not a protocol file, kept: the path may reach it\n")
        z.writestr("sglang/multimodal_gen/runtime/managers/scheduler.py", "# same name, other package\n")
    return wheel


def test_fetch_keeps_the_srt_sources_only_and_a_second_run_uses_the_cache(tmp_path):
    pip = FakePip(wheels={"0.5.2": make_wheel(tmp_path, "0.5.2", "late2025")})
    cache = tmp_path / "cache"
    srt = fetch_release("0.5.2", cache, pip)
    kept = sorted(str(p.relative_to(srt)) for p in srt.rglob("*.py"))
    protocol = ["managers/cache_controller.py", "mem_cache/hiradix_cache.py", "mem_cache/registry.py"]
    assert kept == sorted(protocol + ["models/llama.py"])  # not sglang/multimodal_gen: outside sglang/srt
    assert not list(cache.rglob("*.whl"))  # the wheel is dropped
    assert json.loads((cache / "0.5.2" / "SOURCE.json").read_text())["files"] == protocol
    assert fetch_release("0.5.2", cache, FakePip(online=False)) == srt  # cached: no pip call needed


def test_fetch_offline_says_so_and_cached_releases_still_run(tmp_path):
    cache = tmp_path / "cache"
    fetch_release("0.5.2", cache, FakePip(wheels={"0.5.2": make_wheel(tmp_path, "0.5.2", "late2025")}))
    offline = FakePip(online=False)
    with pytest.raises(SglangSourceError, match=r"cannot download sglang==0.5.20 .*cached in .*: 0.5.2"):
        fetch_release("0.5.20", cache, offline)
    trees = read_trees(expand(["0.5.2", "0.5.20"], lambda: ()), cache, offline)
    assert [(t.label, t.srt is not None) for t in trees] == [("0.5.2", True), ("0.5.20", False)]
    assert classify(tree_shape(read_protocol_files(trees[0].srt), None, fixture_follows()).shape) == "late2025"
    assert "cannot download" in trees[1].error


def test_find_srt_in_each_tree_kind(tmp_path):
    srt_text = "class HiRadixCache: pass\n"
    for layout in ("checkout/python/sglang/srt", "site-packages/sglang/srt", "wheel/sglang/srt"):
        (tmp_path / layout / "mem_cache").mkdir(parents=True)
        (tmp_path / layout / "mem_cache" / "hiradix_cache.py").write_text(srt_text)
        top = tmp_path / layout.split("/")[0]
        assert find_srt(top) == (tmp_path / layout).resolve()
        assert read_protocol_files(find_srt(top)) == {"mem_cache/hiradix_cache.py": srt_text}
    assert find_srt(tmp_path / "wheel/sglang") == (tmp_path / "wheel/sglang/srt").resolve()
    with pytest.raises(SglangSourceError, match="no SGLang source found"):
        find_srt(tmp_path)


def test_installed_is_found_without_importing_it(tmp_path, monkeypatch):
    site = tmp_path / "site-packages"
    pkg = site / "sglang"
    (pkg / "srt" / "mem_cache").mkdir(parents=True)
    (pkg / "__init__.py").write_text("raise RuntimeError('sglang must not be imported')\n")
    (pkg / "srt" / "mem_cache" / "hiradix_cache.py").write_text("class HiRadixCache: pass\n")
    monkeypatch.syspath_prepend(str(site))
    importlib.invalidate_caches()
    version, srt = installed_sglang()
    assert srt == (pkg / "srt").resolve()
    assert "sglang" not in sys.modules
    [target] = expand(["installed"], lambda: ())
    assert target.srt == srt and target.label.startswith("installed")


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout.strip()


def test_commits_in_a_range_are_read_without_touching_the_work_tree(tmp_path):
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    repo = tmp_path / "sglang"
    srt = repo / "python/sglang/srt"
    git(tmp_path, "init", "-q", str(repo))
    git(repo, "config", "user.email", "t@example.invalid")
    git(repo, "config", "user.name", "t")

    def commit(family: str, message: str):
        shutil.rmtree(srt, ignore_errors=True)  # the family's files alone: the path reads the scheduler too
        write_srt(srt, files_of(family))
        git(repo, "add", "-A")
        git(repo, "commit", "-qm", message)
        return git(repo, "rev-parse", "HEAD")

    base = commit("seed", "seed shape")
    (repo / "README.md").write_text("docs only\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "docs only")
    second = commit("late2025", "late2025 shape")
    (srt / "mem_cache/hiradix_cache.py").write_text("# uncommitted edit\n")

    touched = commits_touching(repo, f"{base}..HEAD")
    assert [sha for sha, _ in touched] == [second]  # the docs-only commit is left out

    assert classify(tree_shape(files_at(repo, base), None, fixture_follows()).shape) == "seed"
    assert classify(tree_shape(files_at(repo, second), None, fixture_follows()).shape) == "late2025"
    assert (srt / "mem_cache/hiradix_cache.py").read_text() == "# uncommitted edit\n"  # work tree untouched
    with pytest.raises(SglangSourceError, match="expected a range"):
        commits_touching(repo, base)
    with pytest.raises(SglangSourceError, match="git log failed"):
        commits_touching(repo, "nosuch..HEAD")
