"""The honest floor: a tree whose prefetch path differs from every release the model follows
gets "not modelled: <piece> at file:line ..." and no verdicts, never the release's.

The edits are one-place changes of the real 0.5.23 release of the kind a pull request makes
(drain counts, reductions, ACK order against the copy, failure and exception paths, identity
tests, a return before a collective, a refactor that keeps behaviour), applied at test time to
the release fetched from the package index (skipped where it is not reachable and not cached).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from prefetch_check.cli import main
from prefetch_check.sglang import followed
from prefetch_check.sglang.followed import Followed, build, shipped, tree_path
from prefetch_check.sglang.locate import read_protocol_files
from prefetch_check.sglang.detect import detect_shape
from prefetch_check.sglang.path_code import digest, prefetch_path
from prefetch_check.sglang.tree_shape import tree_shape
from sglang_fixtures import FAMILIES, Edit, edited, files_of, write_srt
from test_sglang_release import release_srt

URC = "mem_cache/unified_radix_cache.py"
CC = "managers/cache_controller.py"
HCC = "mem_cache/hybrid_cache/hybrid_cache_controller.py"
STORAGE = "mem_cache/hicache_storage.py"
DRAIN = "UnifiedRadixCache._drain_storage_control_queues_impl"
ACK_SCENARIO = Path(__file__).parent / "fixtures" / "sglang" / "scenarios" / "ack-drain" / "fixture-ack-tp2.toml"

# name -> (the edit of the 0.5.23 files, the piece of the path the refusal must name first)
EDITS_0523: dict[str, tuple[tuple[Edit, ...], str]] = {
    "sync thread reduces completed tokens with MAX": ((Edit(
        CC, "                torch.distributed.ReduceOp.MIN,\n                self.prefetch_completion_sync_groups,",
        "                torch.distributed.ReduceOp.MAX,\n                self.prefetch_completion_sync_groups,"),),
        "HiCacheController._reduce_prefetch_ack"),
    "hit drain pops its local queue length": ((Edit(
        URC, "_drain_queue(cc.prefetch_hit_queue, n_storage_hit)",
        "_drain_queue(cc.prefetch_hit_queue, cc.prefetch_hit_queue.qsize())"),), DRAIN),
    "queue sizes agreed with MAX": ((Edit(
        URC, "        else:\n            self._all_reduce(ready_counts, torch.distributed.ReduceOp.MIN)",
        "        else:\n            self._all_reduce(ready_counts, torch.distributed.ReduceOp.MAX)"),),
        "UnifiedRadixCache._sync_hicache_ready_counts"),
    "allocation failure keeps the operation": ((Edit(
        URC, "            if host_indices is None:\n                self._finish_storage_prefetch(\n"
             "                    request, fulfilled_tokens=0, reason=\"host_capacity\"\n                )\n"
             "                self.revoke_pending_prefetch(request)\n",
        "            if host_indices is None:\n                self._finish_storage_prefetch(\n"
        "                    request, fulfilled_tokens=0, reason=\"host_capacity\"\n                )\n"),), DRAIN),
    "ACK drain matches by request id": ((Edit(
        URC, "info.operation is operation", "info.operation.request_id == operation.request_id"),), DRAIN),
    "return before the timeout vote's collective": ((Edit(
        URC, "            should_terminate_tensor = torch.tensor(\n",
        "            if operation.completed_tokens > 0:\n                return False\n"
        "            should_terminate_tensor = torch.tensor(\n"),), "UnifiedRadixCache._can_terminate_prefetch"),
    "IO counts a batch before its pages are copied": ((Edit(
        CC, "                completed_pages += hit_pages", "                completed_pages += len(batch_hashes)"),),
        "HiCacheController._page_transfer"),
    "storage query exceptions no longer caught": ((Edit(
        CC, "                except Exception:\n                    logger.exception(\n"
            "                        \"HiCache storage query failed",
        "                except ValueError:\n                    logger.exception(\n"
        "                        \"HiCache storage query failed"),), "HiCacheController.prefetch_thread_func"),
    "final ACK no longer in a finally": ((Edit(
        CC, "            try:\n                self._page_transfer(operation)\n            finally:\n",
        "            if True:\n                self._page_transfer(operation)\n            if True:\n"),),
        "HiCacheController.prefetch_io_aux_func"),
    "terminate without setting the flag": ((Edit(
        CC, "        operation.mark_terminate()\n        return operation.completed_tokens, operation.hash_value",
        "        return operation.completed_tokens, operation.hash_value"),), "HiCacheController.terminate_prefetch"),
    "terminated flag set without the lock": ((Edit(
        HCC, "    def mark_terminate(self):\n        with self._lock:\n            self._terminated_flag = True",
        "    def mark_terminate(self):\n        self._terminated_flag = True"),), "PrefetchOperation"),
    "release drain frees twice": ((Edit(
        URC, "                cc.mem_pool_host.free(torch.cat(host_indices_list, dim=0))\n",
        "                cc.mem_pool_host.free(torch.cat(host_indices_list, dim=0))\n"
        "                cc.mem_pool_host.free(torch.cat(host_indices_list, dim=0))\n"),), DRAIN),
    "sync thread reduces only completed_req ACKs": ((Edit(
        HCC, "                self._reduce_prefetch_ack(ack)\n",
        "                if ack.completed_req:\n                    self._reduce_prefetch_ack(ack)\n"),),
        "HybridCacheController.prefetch_sync_thread_func"),
    "storage batch size constant": ((Edit(STORAGE, "STORAGE_BATCH_SIZE = 128", "STORAGE_BATCH_SIZE = 64"),),
                                    "<module>.STORAGE_BATCH_SIZE"),
    # a refactor that keeps behaviour: the identity test moves into a helper no release has
    "identity test moved into a helper (refactor)": ((
        Edit(URC, "is_current = info is not None and info.operation is operation",
             "is_current = self._is_current_prefetch(info, operation)"),
        Edit(URC, "    def revoke_pending_prefetch(self, request: CacheRequestHandle) -> None:\n",
             "    def _is_current_prefetch(self, info, operation) -> bool:\n"
             "        return info is not None and info.operation is operation\n\n"
             "    def revoke_pending_prefetch(self, request: CacheRequestHandle) -> None:\n"),
    ), DRAIN),
}
# Edits that change no syntax tree: comments, docstrings, line breaks.
HARMLESS_0523 = (
    Edit(URC, "        def _drain_ack_prefetch():\n",
         "        def _drain_ack_prefetch():\n            # a comment a reviewer asked for\n\n"),
    Edit(CC, "        Request to terminate a prefetch operation.\n", "        Ask the IO work of an operation to stop.\n"),
    Edit(URC, "_drain_queue(cc.prefetch_hit_queue, n_storage_hit)",
         "_drain_queue(\n                cc.prefetch_hit_queue,\n                n_storage_hit,\n            )"),
)


def release_files(version: str) -> dict[str, str]:
    return read_protocol_files(release_srt(version))


def edited_tree(folder: Path, files: dict[str, str], name: str, edits: tuple[Edit, ...]) -> Path:
    write_srt(folder / "sglang" / "srt", edited(files, name, edits))
    return folder


def sglang_json(capsys, tmp_path, *trees, cache="cache") -> tuple[int, dict]:
    argv = ["sglang", "--engine", "model", *map(str, trees), "--cache-dir", str(tmp_path / cache), "--quiet", "--json", "-",
            "--scenarios", str(ACK_SCENARIO)]
    status = main(argv)
    return status, json.loads(capsys.readouterr().out)


# ---- the fingerprint itself (no network)


def test_a_fingerprint_ignores_comments_docstrings_and_formatting_and_sees_every_other_change():
    import ast

    def fp(text):
        return digest(ast.parse(text).body[0])

    base = fp("def f(x):\n    '''Why.'''\n    return x + 1\n")
    assert fp("def f(x):\n    # hm\n    return (x\n            + 1)\n") == base
    assert fp("def f(x):\n    '''Another why.'''\n    return x + 1\n") == base
    assert fp("def f(x):\n    return x + 2\n") != base
    assert fp("def f(y):\n    return y + 1\n") != base


def test_the_path_reaches_helpers_constants_and_imports_across_the_protocol_files():
    files = {
        URC: "from sglang.srt.mem_cache.hicache_storage import BATCH\n"
             "LIMIT = 3\n"
             "class UnifiedRadixCache:\n"
             "    def check_prefetch_progress(self, op):\n        return self._helper(op) < LIMIT\n"
             "    def _helper(self, op):\n        return len(op.hash_value) * BATCH\n"
             "    def unrelated(self):\n        return 0\n",
        STORAGE: "BATCH = 128\nOTHER = 1\n",
    }
    path = prefetch_path(files, "UnifiedRadixCache")
    assert set(path) == {
        f"{URC}:UnifiedRadixCache.check_prefetch_progress", f"{URC}:UnifiedRadixCache._helper",
        f"{URC}:<module>.LIMIT", f"{URC}:<module>.BATCH", f"{STORAGE}:<module>.BATCH",
        f"{URC}:UnifiedRadixCache",  # the class's header: its bases and class attributes
    }
    assert path[f"{URC}:UnifiedRadixCache._helper"].line == 6
    changed = dict(files, **{STORAGE: "BATCH = 64\nOTHER = 1\n"})
    differs = Followed(("base",), {k: {p.digest: ("base",)} for k, p in path.items()}).differing(
        prefetch_path(changed, "UnifiedRadixCache"))
    assert [p.ident for p in differs] == [f"{STORAGE}:<module>.BATCH"]
    unrelated = dict(files, **{URC: files[URC].replace("return 0", "return 1"), STORAGE: "BATCH = 128\nOTHER = 2\n"})
    assert prefetch_path(unrelated, "UnifiedRadixCache").keys() == path.keys()
    assert all(prefetch_path(unrelated, "UnifiedRadixCache")[k].digest == p.digest for k, p in path.items())


def test_a_fixture_family_is_refused_by_the_shipped_fingerprints_and_followed_once_built():
    files = files_of(*FAMILIES["unified"][0])
    refused = shipped().differing(tree_path(files))
    assert refused, "an upstream-shaped fixture is no release: the floor must refuse it"
    mine = build([("fixture", files, None)])
    assert mine.differing(tree_path(files)) == []
    note = followed.refusal(refused, shipped())
    assert "differs from every release the model follows (0.5.1 .. 0.5.23" in note


def _other_pythons() -> list[str]:
    """Interpreters 3.12 or 3.13 on this machine besides the one running the tests."""
    found = [shutil.which(f"python3.{minor}") for minor in (12, 13)]
    found += [str(p) for p in sorted(Path("/root/.pyenv/versions").glob("3.1[23]*/bin/python3"))]
    works = []
    for python in dict.fromkeys(p for p in found if p):
        probe = subprocess.run([python, "-c", "import sys; print(sys.version_info >= (3, 12))"],
                               capture_output=True, text=True)
        if probe.returncode == 0 and probe.stdout.strip() == "True":
            works.append(python)
    return works


def test_fingerprints_are_the_same_under_every_python_at_hand():
    """The shipped fingerprints are made with one Python; a user's may be another."""
    others = _other_pythons()
    if not others:
        pytest.skip("no Python 3.12 or 3.13 on this machine to compare with")
    import ast

    files = files_of(*FAMILIES["unified"][0])
    texts = {rel: files[rel] for rel in (URC, CC)}
    expected = {rel: digest(ast.parse(text)) for rel, text in texts.items()}
    module = Path(__file__).parents[1] / "prefetch_check" / "sglang" / "code_digest.py"
    script = ("import ast, importlib.util, json, sys\n"
              "spec = importlib.util.spec_from_file_location('code_digest', sys.argv[1])\n"
              "m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)\n"
              "texts = json.loads(sys.stdin.read())\n"
              "print(json.dumps({k: m.digest(ast.parse(t)) for k, t in texts.items()}))\n")
    for python in others:
        out = subprocess.run([python, "-I", "-c", script, str(module)], input=json.dumps(texts),
                             capture_output=True, text=True)
        assert out.returncode == 0, out.stderr
        assert json.loads(out.stdout) == expected, python


# ---- the real releases


@pytest.mark.parametrize("version", ["0.5.1", "0.5.19", "0.5.23"])
def test_a_followed_release_is_its_own_fingerprints(version):
    files = release_files(version)
    assert shipped().differing(tree_path(files)) == []
    assert version in shipped().releases
    # the shipped fingerprints hold what this release's files give today (followed.json is up to date)
    mine = build([(version, files, None)])
    for ident, by in mine.digests.items():
        assert set(by) <= set(shipped().digests[ident]), ident


def test_every_behaviour_changing_edit_of_0_5_23_is_refused_by_name(tmp_path, capsys):
    files = release_files("0.5.23")
    trees = {name: edited_tree(tmp_path / f"e{i}", files, name, edits)
             for i, (name, (edits, _)) in enumerate(EDITS_0523.items())}
    # a warm verdict cache: the unmodified release's checks are stored before the edits run
    status, doc = sglang_json(capsys, tmp_path, release_srt("0.5.23"))
    assert doc["releases"][0]["status"] == "checked" and doc["searches"] > 0
    status, doc = sglang_json(capsys, tmp_path, *trees.values())
    assert status == 3 and doc["exit_status"] == 3
    assert doc["searches"] == 0 and doc["from_cache"] == 0  # nothing answered for code nobody read
    for (name, (_, piece)), row in zip(EDITS_0523.items(), doc["releases"]):
        assert row["status"] == "not modelled" and "properties" not in row, name
        first = row["path_code"]["differing"][0]
        assert first["piece"].endswith(piece), (name, row["path_code"]["differing"])
        assert row["note"].startswith(f"{first['piece']} at {first['file']}:{first['line']} differs from every "
                                      "release the model follows"), name
        # the line is where that piece starts in the edited tree
        source = (trees[name] / "sglang" / "srt" / first["file"]).read_text().splitlines()[first["line"] - 1].strip()
        short = piece.rpartition(".")[2]
        assert source.startswith((f"def {short}(", f"class {short}", f"{short} =")), (name, source)
    refactor = doc["releases"][list(EDITS_0523).index("identity test moved into a helper (refactor)")]
    assert "UnifiedRadixCache._is_current_prefetch" in [p["piece"] for p in refactor["path_code"]["differing"]]


def test_an_edit_that_changes_no_syntax_keeps_the_release_verdicts(tmp_path, capsys):
    files = release_files("0.5.23")
    harmless = edited_tree(tmp_path / "harmless", files, "harmless", HARMLESS_0523)
    status, doc = sglang_json(capsys, tmp_path, release_srt("0.5.23"), harmless)
    release, edit = doc["releases"]
    assert edit["status"] == "checked" and edit["path_code"]["differing"] == []
    assert edit["properties"] == release["properties"]


@pytest.mark.parametrize("version, cache_file", [("0.5.18", "mem_cache/hiradix_cache.py"), ("0.5.21", URC), ("0.5.23", URC)])
def test_a_followed_release_gets_its_recorded_absences_and_an_edit_of_it_only_for_comparison(version, cache_file):
    """What a release lacks is read once from the whole release (followed.json) and given to a tree
    only where its whole path is that release's; an edited tree keeps it unrecognised, and only its
    conformance comparison stands on the nearest followed release, which is the one edited."""
    files = release_files(version)
    own = tree_shape(files)
    assert not own.differing and not own.unmatched
    recorded = shipped().recorded[version]
    for name, value in recorded.items():
        assert getattr(own.shape, name).value == value, name
    read = detect_shape(files)
    absent = [name for name in recorded if not getattr(read, name).recognised]
    assert absent, "every release lacks something: ACKs before 0.5.19, a page counter from 0.5.19"
    text = files[cache_file]
    assert text.count("def check_prefetch_progress(self") == 1
    # a one-place edit of the check's syntax (its first parameter renamed): the path differs there
    files = {**files, cache_file: text.replace("def check_prefetch_progress(self", "def check_prefetch_progress(this")}
    edited_shape = tree_shape(files)
    assert edited_shape.differing and all(not getattr(edited_shape.shape, n).recognised for n in absent)
    label, near = edited_shape.nearest
    assert label == version and all(getattr(near, n).value == recorded[n] for n in absent)
