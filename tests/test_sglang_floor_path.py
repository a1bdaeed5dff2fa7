"""The floor sees the whole path (issue 29, item 2): what the prefetch path reaches through
attributes, imports into any srt file, subclasses and the scheduler's retry methods is
fingerprinted, and a call whose receiver no static evidence types pulls the files defining
that method in whole. Small upstream-shaped fixture trees written here, and named one-place
edits of the real 0.5.23 files applied at test time (skipped when 0.5.23 cannot be fetched).
"""

from __future__ import annotations

import pytest

from prefetch_check.sglang.followed import Followed, build, refusal, shipped
from prefetch_check.sglang.locate import read_path_files, SrtFiles
from prefetch_check.sglang.path_code import prefetch_path
from prefetch_check.sglang.tree_shape import tree_shape
from sglang_fixtures import Edit, edited
from test_sglang_release import release_srt

URC = "mem_cache/unified_radix_cache.py"
PIPELINE = "mem_cache/buffer_mode/pipeline.py"
RETRIES = "mem_cache/storage_prefetch.py"
STORAGE = "mem_cache/hicache_storage.py"
BACKEND = "mem_cache/storage/disk/disk_store.py"
HELPERS = "mem_cache/helpers.py"
SCHEDULER = "managers/scheduler.py"
MIXIN = "managers/scheduler_retry_mixin.py"
UNRELATED = "models/llama.py"

FIXTURE = {
    URC: "from typing import Optional\n"
         "from sglang.srt.mem_cache.buffer_mode.pipeline import Pipeline\n"
         "from sglang.srt.mem_cache.storage_prefetch import Retries\n"
         "from sglang.srt.mem_cache.hicache_storage import Storage\n"
         "from sglang.srt.mem_cache import helpers\n"
         "class UnifiedRadixCache:\n"
         "    def __init__(self, storage: Storage):\n"
         "        self.buffer_pipeline: Optional[Pipeline] = None\n"
         "        self.retries = Retries()\n"
         "        self.storage = storage\n"
         "    def check_prefetch_progress(self, op):\n"
         "        self.buffer_pipeline.stage(op)\n"
         "        self.retries.poll_miss(op)\n"
         "        op.wobble()\n"
         "        return self.storage.exists(op)\n",
    PIPELINE: "class Pipeline:\n"
              "    def stage(self, op):\n        '''Stage it.'''\n        return op + 1\n"
              "    def unused(self):\n        return 0\n",
    RETRIES: "class Retries:\n"
             "    def __init__(self):\n        self.pending = {}\n"
             "    def poll_miss(self, op):\n        self.pending[op] = 1\n",
    STORAGE: "class Storage:\n    def exists(self, key):\n        raise NotImplementedError\n",
    BACKEND: "from sglang.srt.mem_cache.hicache_storage import Storage\n"
             "class DiskStore(Storage):\n    def exists(self, key):\n        return True\n",
    HELPERS: "def wobble_all(xs):\n    return [x.wobble() for x in xs]\n"
             "class Wobbler:\n    def wobble(self):\n        return 1\n",
    SCHEDULER: "from sglang.srt.managers.scheduler_retry_mixin import RetryMixin\n"
               "class Scheduler(RetryMixin):\n"
               "    def _prefetch_kvcache(self, req):\n        return self.tree_cache.check_prefetch_progress(req)\n",
    MIXIN: "class RetryMixin:\n"
           "    def _retry_storage_prefetch(self, req):\n        req.attempts += 1\n        self._prefetch_kvcache(req)\n",
    UNRELATED: "class Llama:\n    def wobble(self):\n        return 2\n",
}


def path_of(files):
    return prefetch_path(files, "UnifiedRadixCache")


def refused(files, base=FIXTURE):
    """The pieces of `files`' path a floor following only `base` refuses."""
    follows = Followed(("base",), {k: {p.digest: ("base",)} for k, p in path_of(base).items()})
    return follows.differing(path_of(files))


def test_the_path_reaches_through_attributes_imports_subclasses_and_scheduler_mixins():
    path = path_of(FIXTURE)
    assert f"{PIPELINE}:Pipeline.stage" in path  # self.buffer_pipeline: Optional[Pipeline]
    assert f"{PIPELINE}:Pipeline.unused" not in path  # a method nobody calls is not on the path
    assert f"{RETRIES}:Retries.poll_miss" in path  # self.retries = Retries()
    assert f"{STORAGE}:Storage.exists" in path and f"{BACKEND}:DiskStore.exists" in path  # an override
    assert f"{MIXIN}:RetryMixin._retry_storage_prefetch" in path  # an entry, in the mixin defining it
    assert f"{SCHEDULER}:Scheduler._prefetch_kvcache" in path
    assert not any(p.file == UNRELATED for p in path.values())  # not reached: not on the path


def test_an_unresolved_call_pulls_the_reached_files_defining_it_in_whole():
    path = path_of(FIXTURE)
    whole = {p.file: p for p in path.values() if p.whole}
    assert set(whole) == {HELPERS}  # op.wobble(): op is untyped, helpers.py is imported and defines wobble
    piece = whole[HELPERS]
    assert piece.ident == f"{HELPERS}:<file>" and piece.line == 1
    assert piece.why.startswith("wobble(...) at mem_cache/unified_radix_cache.py:UnifiedRadixCache.check_prefetch_progress")
    assert f"{HELPERS}:Wobbler.wobble" in path  # the definition itself is followed too
    # an edit anywhere in the whole file is refused, even in code no piece names
    changed = edited(FIXTURE, "helpers", (Edit(HELPERS, "return [x.wobble() for x in xs]", "return []"),))
    assert [p.ident for p in refused(changed)] == [f"{HELPERS}:<file>"]


@pytest.mark.parametrize("name, edit, piece", [
    ("buffer pipeline", Edit(PIPELINE, "return op + 1", "return op + 2"), f"{PIPELINE}:Pipeline.stage"),
    ("retry policy", Edit(RETRIES, "self.pending[op] = 1", "self.pending[op] = 0"), f"{RETRIES}:Retries.poll_miss"),
    ("storage backend", Edit(BACKEND, "return True", "return False"), f"{BACKEND}:DiskStore.exists"),
    ("scheduler retry", Edit(MIXIN, "req.attempts += 1", "req.attempts += 2"),
     f"{MIXIN}:RetryMixin._retry_storage_prefetch"),
])
def test_a_fixture_edit_on_the_path_is_refused_by_name_and_line(name, edit, piece):
    differs = refused(edited(FIXTURE, name, (edit,)))
    assert differs and differs[0].ident == piece, [p.ident for p in differs]
    line = edited(FIXTURE, name, (edit,))[differs[0].file].splitlines()[differs[0].line - 1]
    assert line.lstrip().startswith(f"def {piece.rpartition('.')[2]}("), line


def test_a_docstring_or_an_unreached_file_changes_nothing():
    quiet = edited(FIXTURE, "quiet", (Edit(PIPELINE, "'''Stage it.'''", "'''Stage the operation.'''"),
                                      Edit(UNRELATED, "return 2", "return 3")))
    assert refused(quiet) == []


def test_a_tree_is_read_as_the_files_its_path_reaches(tmp_path):
    srt = tmp_path / "sglang" / "srt"
    for rel, text in FIXTURE.items():
        (srt / rel).parent.mkdir(parents=True, exist_ok=True)
        (srt / rel).write_text(text)
    files = read_path_files(SrtFiles.of_folder(srt))
    assert UNRELATED not in files and {PIPELINE, RETRIES, BACKEND, MIXIN, HELPERS} <= set(files)
    assert path_of(files) == path_of(dict(FIXTURE))


# ---- named edits of the real 0.5.23 files

EDITS_0523 = {
    "buffer_only pipeline: staged check inverted": (Edit(
        PIPELINE, "        return request in self.staged_prefetches\n",
        "        return request not in self.staged_prefetches\n"), "BufferModePipeline.has_staged"),
    "retry policy: the cap no longer cancels": (Edit(
        RETRIES, "            if req.storage_prefetch_retry_attempts >= max_attempts:\n                self.cancel(req.rid)\n",
        "            if req.storage_prefetch_retry_attempts > max_attempts:\n                self.cancel(req.rid)\n"),
        "StoragePrefetchRetries.pop_ready"),
    "host pool: free of nothing returns 1": (Edit(
        "mem_cache/pool_host/base.py", "        if indices_cpu.numel() == 0:\n            return 0\n",
        "        if indices_cpu.numel() == 0:\n            return 1\n"), "HostKVCache.free"),
    "storage backend: file existence skips the metadata cache": (Edit(
        STORAGE, "        if self.metadata_cache is not None and self.metadata_cache.contains(key):\n            return True\n"
                 "        tensor_path = os.path.join(self.file_path, f\"{key}.bin\")",
        "        tensor_path = os.path.join(self.file_path, f\"{key}.bin\")"), "HiCacheFile.exists"),
    "scheduler: the re-issue cap off by one": (Edit(
        SCHEDULER, "        max_attempts = get_memory().hicache_storage_prefetch_retry_max_attempts\n"
                   "        if req.storage_prefetch_retry_attempts >= max_attempts:\n            logger.warning(\n"
                   "                \"HiCache storage prefetch reissue cap reached",
        "        max_attempts = get_memory().hicache_storage_prefetch_retry_max_attempts\n"
        "        if req.storage_prefetch_retry_attempts > max_attempts:\n            logger.warning(\n"
        "                \"HiCache storage prefetch reissue cap reached"), "Scheduler._retry_storage_prefetch"),
    # what the worlds run beside the prefetch: the load-back of a host hit, the readmission
    "load-back: init_load_back ignores whether the linker has the hit": (Edit(
        URC, "        if self.linker is not None and self.linker.has_hit(req.rid):\n            return self.linker.load_back(req)",
        "        if self.linker is not None:\n            return self.linker.load_back(req)"),
        "UnifiedRadixCache.init_load_back"),
    "load-back: no cache controller answers -1": (Edit(
        URC, "            return self.cache_controller.start_loading()\n        return 0\n",
        "            return self.cache_controller.start_loading()\n        return -1\n"),
        "UnifiedRadixCache.ready_to_load_host_cache"),
    "controller: an empty load queue answers 0": (Edit(
        "managers/cache_controller.py", "        if len(self.load_queue) == 0:\n            return -1\n",
        "        if len(self.load_queue) == 0:\n            return 0\n"), "HiCacheController.start_loading"),
    "buffer_only admission: a shrunk anchor is staged anyway": (Edit(
        PIPELINE, "        if matched_len < f.matched_len:\n            logger.warning(\n                \"HiCache staged prefetch deferred req=%s reason=shrunk \"",
        "        if matched_len < 0:\n            logger.warning(\n                \"HiCache staged prefetch deferred req=%s reason=shrunk \""),
        "BufferModePipeline.prepare_staged_prefetch"),
    "scheduler: a retracted request keeps its retry count": (Edit(
        SCHEDULER, "        if is_retracted:\n            req.storage_prefetch_retry_attempts = 0\n",
        "        if is_retracted:\n            pass\n"), "Scheduler._add_request_to_queue"),
}


@pytest.fixture(scope="module")
def release_0523():
    return read_path_files(SrtFiles.of_folder(release_srt("0.5.23")))


def test_0_5_23_is_its_own_fingerprints_and_its_path_reaches_the_attribute_code(release_0523):
    taken = tree_shape(release_0523)
    assert taken.differing == [] and not taken.unmatched
    for ident in ("BufferModePipeline.has_staged", "StoragePrefetchRetries.pop_ready", "HostKVCache.free",
                  "HiCacheFile.exists", "Scheduler._retry_storage_prefetch",
                  "Scheduler._prefetch_after_device_hit_loss", "Scheduler._process_storage_prefetch_retries",
                  "UnifiedRadixCache.init_load_back", "UnifiedRadixCache.load_back", "UnifiedRadixCache.insert",
                  "HiCacheController.start_loading", "Scheduler._add_request_to_queue",
                  "BufferModePipeline.prepare_staged_prefetch"):
        assert any(i.endswith(":" + ident) for i in taken.path), ident


def test_each_edit_of_0_5_23_reached_through_an_attribute_is_not_modelled_by_name(release_0523):
    """Every named edit at once, in one tree (a path of 0.5.23 takes seconds to follow): each edited
    function is a piece no followed release has, named by file and `def` line; nothing else differs
    but the edited files where they are also fingerprinted whole."""
    edits = tuple(edit for edit, _ in EDITS_0523.values())
    files = edited(release_0523, "all attribute-reached edits", edits)
    differing = tree_shape(files).differing
    functions = {(p.file, p.name): p for p in differing if p.name != "<file>"}
    assert sorted(functions) == sorted((edit.file, piece) for edit, piece in EDITS_0523.values())
    assert {p.file for p in differing if p.name == "<file>"} <= {edit.file for edit in edits}
    for piece in functions.values():
        assert files[piece.file].splitlines()[piece.line - 1].lstrip().startswith(
            f"def {piece.name.rpartition('.')[2]}("), piece.ident
    note = refusal(differing, shipped())
    assert any(note.startswith(f"{name} at {file}:") for file, name in functions), note


def test_a_comment_in_the_0_5_23_pipeline_is_not_refused(release_0523):
    files = edited(release_0523, "comment", (Edit(
        PIPELINE, "        return request in self.staged_prefetches\n",
        "        # a staged request is one the pipeline holds\n        return request in self.staged_prefetches\n"),))
    assert tree_shape(files).differing == []
