"""The tree's own file backend (CodeConfig(storage="file"), model/code/stand_ins/file_storage.py):
HiCacheFile and its LRU file evictor run as written on a fresh directory of each run. Uncapped it
adds no scheduling point, so the searches are the stand-in's run for run; capped, its evictor
takes pages for a write's room; one-place edits of the backend are caught with their consequence."""

from __future__ import annotations

import tempfile

import pytest

from prefetch_check.model.code import CodeConfig, CodeLimits, check_tree, runner
from prefetch_check.model.code.rt.scratch import SCRATCH_ENV
from prefetch_check.model.code.runner import ExecutorError
from prefetch_check.sglang.mappings.ack_drain.file_storage_cases import FILE_STORAGE_CASES
from test_code_executor import clean, edited, release
from test_code_poll import line_of

LIMITS = CodeLimits(max_seconds=120)
STORAGE = "mem_cache/hicache_storage.py"
EVICTOR = "mem_cache/storage/file/lru_file_evictor.py"
CONTROLLER = "managers/cache_controller.py"

# HiCacheFile.get hands the page back without reading the file into it
NO_READ = ("                if f.readinto(buf) != expected:\n                    raise IOError(f\"Short read for {suffixed}\")\n",
           "                pass\n")
# exists looks for the unsuffixed key: every page reads as missing
UNSUFFIXED = ("    def exists(self, key: str) -> bool:\n        key = self._get_suffixed_key(key)\n",
              "    def exists(self, key: str) -> bool:\n")
# set leaves the page in its temporary file
NO_RENAME = ("            os.replace(tmp_path, tensor_path)\n", "            pass\n")
# set writes an empty page
EMPTY_WRITE = ("            value.contiguous().view(dtype=torch.uint8).numpy().tofile(tmp_path)\n",
               "            open(tmp_path, \"wb\").close()\n")


def files(**kwargs) -> CodeConfig:
    return CodeConfig(storage="file", **{"ranks": 1, **kwargs})


@pytest.mark.parametrize("case", FILE_STORAGE_CASES, ids=[case.name for case in FILE_STORAGE_CASES])
def test_0_5_23s_file_backend_cases_are_exhaustive_and_clean(case):
    result = check_tree(release("0.5.23"), case.config, LIMITS)
    assert result.exhaustive and not result.not_modelled, (result.bound, result.not_modelled)
    assert clean(result), {k: v.message for k, v in result.violations.items()}


@pytest.mark.parametrize("kwargs", [dict(), dict(ranks=2), dict(backup=True)], ids=["1x1", "2x1", "write_through"])
def test_uncapped_the_file_backend_searches_what_the_stand_in_does(kwargs):
    """Its reads and writes are where the stand-in's are: the same runs, states and verdicts."""
    stand_in = check_tree(release("0.5.23"), CodeConfig(**{"ranks": 1, **kwargs}), LIMITS)
    on_disk = check_tree(release("0.5.23"), files(**kwargs), LIMITS)
    assert (on_disk.runs, on_disk.states, on_disk.verdicts) == (stand_in.runs, stand_in.states, stand_in.verdicts)


def test_the_backends_locks_inside_its_loops_are_told_apart():
    """The metadata cache's lock is a point inside a batch query's loop: without each page's query
    observed, the second page's point would be the first's state and the search would stop there
    (15 runs, 30 states, before the recording observed them)."""
    result = check_tree(release("0.5.23"), files(file_metadata_cache=True), LIMITS)
    assert result.exhaustive and clean(result), result.verdicts
    assert result.states > check_tree(release("0.5.23"), files(), LIMITS).states


def test_the_backend_and_its_evictor_run_as_written():
    srt = release("0.5.23")
    result = check_tree(srt, files(backup=True, file_pages=3), LIMITS, coverage={})
    assert result.exhaustive and clean(result), result.verdicts
    ran = result.coverage["lines"]
    for text in ("with open(tensor_path, \"rb\", buffering=0) as f:", "os.replace(tmp_path, tensor_path)",
                 "self._evictor = LRUFileEvictor("):
        assert line_of(srt, STORAGE, text) in ran[STORAGE], text
    assert line_of(srt, EVICTOR, "evict_stem, evict_size = self._lru.popitem(last=False)  # oldest") in ran[EVICTOR]


# _generic_page_get stores a page the backend did not return (no break at the first None)
NO_BREAK = ("            if page_data[i] is None:\n                logger.warning(\n", "            if False:\n                logger.warning(\n")


def test_a_page_another_server_deletes_is_a_short_read_the_release_handles(tmp_path):
    """Deleted between the query and the read, the page reads as None (FileNotFoundError), and the
    IO stops at it; without that stop the tree is handed a page nothing was read into."""
    srt = release("0.5.23")
    result = check_tree(srt, files(file_lost=(1,)), LIMITS, coverage={})
    assert result.exhaustive and clean(result), result.verdicts
    assert line_of(srt, STORAGE, 'logger.warning(f"Failed to fetch {key} from HiCacheFile storage.")') in \
        result.coverage["lines"][STORAGE]
    found = check_tree(edited(tmp_path, srt, CONTROLLER, *NO_BREAK), files(file_lost=(1,)), LIMITS)
    assert "holds nothing written" in found.violations["data_integrity"].message


# HiCacheFile._read_page reports a page read without writing it into the pool
READ_PAGE_UNWRITTEN = ("        host_pool.set_from_flat_data_page(page_offset, data_page)\n        return True\n",
                       "        return True\n")


@pytest.mark.parametrize("edit, config, prop, message", [
    (NO_READ, files(), "data_integrity", "handed to the tree for page q0p0 holds nothing written"),
    (UNSUFFIXED, files(), "wait_complete_delivers", "the storage held 2"),
    (NO_RENAME, files(backup=True), "progress", "its pages ['q1p0', 'q1p1'] never stored"),
    (EMPTY_WRITE, files(backup=True), "data_integrity", "the backup stores nothing under key q1p0"),
    # the sidecar pools read through the backend's v2 API (_batch_io_v2 -> _read_page)
    (READ_PAGE_UNWRITTEN, files(sidecars=("swa", "mamba", "indexer")), "data_integrity",
     "holds nothing written in its indexer pool"),
], ids=["get reads nothing", "exists unsuffixed", "set never renames", "set writes an empty page",
        "a sidecar page read unwritten"])
def test_a_one_place_edit_of_the_file_backend_is_caught(tmp_path, edit, config, prop, message):
    result = check_tree(edited(tmp_path, release("0.5.23"), STORAGE, *edit), config, LIMITS)
    assert result.verdicts[prop] == "VIOLATED", result.verdicts
    assert message in result.violations[prop].message, result.violations[prop].message


def test_the_file_backend_refuses_what_it_does_not_model():
    for kwargs in (dict(host_memory_mode="buffer_only"), dict(sidecars=("swa",), sidecar_failing=((1,),)),
                   dict(failing=((1,),)),
                   dict(pp_size=2, ranks=2)):
        with pytest.raises(ValueError, match="storage file"):
            CodeConfig(storage="file", **kwargs)
    with pytest.raises(ValueError, match="file_pages"):
        CodeConfig(file_pages=2)
    with pytest.raises(ValueError, match="file_metadata_cache"):
        CodeConfig(file_metadata_cache=True)
    for kwargs in (dict(file_lost=(1,)), dict(storage="file", file_lost=(2,))):
        with pytest.raises(ValueError, match="file_lost"):
            CodeConfig(**kwargs)
    with pytest.raises(ValueError, match="storage 'disk'"):
        CodeConfig(storage="disk")


def test_every_run_removes_its_directory_at_its_end(tmp_path, monkeypatch):
    """A run's files go when the run is abandoned (every run is, where it ends), not when its
    objects are collected: the child exits without collecting them."""
    from prefetch_check.model.code.rt.executor import Executor
    from prefetch_check.model.code.rt.search import explore
    monkeypatch.setenv(SCRATCH_ENV, str(tmp_path))
    result = explore(Executor(release("0.5.23"), files(backup=True)), LIMITS)
    assert result.runs == 152 and result.exhaustive
    assert list(tmp_path.iterdir()) == []


# HiCacheFile's constructor refuses: no run is built, so none ends to remove its directory
INIT_RAISES = ("        self, storage_config: HiCacheStorageConfig, file_path: str = \"/tmp/hicache\"\n    ):\n",
               "        self, storage_config: HiCacheStorageConfig, file_path: str = \"/tmp/hicache\"\n    ):\n"
               "        raise RuntimeError(\"no storage here\")\n")


def test_a_backend_that_fails_to_construct_leaves_its_files_in_the_childs_folder(tmp_path, monkeypatch):
    """The child makes its files in the folder the parent made for it (a TemporaryDirectory, which
    the parent removes whatever the child did): a constructor that raises (the child reports it,
    with no verdict) leaves its run's directory there, not in a folder nobody removes. The parent's
    folder is kept here to look inside it."""
    scratch = tmp_path / "scratch"
    scratch.mkdir()

    class Kept:
        def __init__(self, prefix="", dir=None):
            self.name = tempfile.mkdtemp(prefix=prefix, dir=dir)

        def __enter__(self):
            return self.name

        def __exit__(self, *exc):
            return False

    monkeypatch.setattr(runner, "memory_fs", lambda: str(scratch))
    monkeypatch.setattr(runner.tempfile, "TemporaryDirectory", Kept)
    srt = edited(tmp_path / "tree", release("0.5.23"), "mem_cache/hicache_storage.py", *INIT_RAISES)
    with pytest.raises(ExecutorError, match="no storage here"):
        check_tree(srt, files(), LIMITS)
    (work,) = scratch.iterdir()
    assert [p.name.startswith("prefetch-check-hicache-file-") for p in work.iterdir()] == [True]
