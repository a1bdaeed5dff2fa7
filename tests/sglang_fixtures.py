"""The upstream-shaped SGLang trees of tests/fixtures/sglang/, built from layers.

A family's tree is a list of layers. A layer is either a folder of fixture files (they replace
the earlier layers' files of the same name) or a named edit of the files the earlier layers made:
where a release family grew out of another, the edit shows exactly the lines that release
changed, and each of its replacements must apply exactly once (a fixture that drifts fails loudly).
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import NamedTuple

from prefetch_check.sglang.locate import find_srt, read_protocol_files

ROOT = Path(__file__).parent / "fixtures" / "sglang"


class Edit(NamedTuple):
    file: str  # relative to sglang/srt
    old: str
    new: str


_CONTROLLER = "managers/cache_controller.py"
_HIRADIX = "mem_cache/hiradix_cache.py"
_UNIFIED = "mem_cache/unified_radix_cache.py"

# layer -> its edits of the files the layers before it made
EDITS: dict[str, tuple[Edit, ...]] = {
    # late 2025 from the seed era, in the controller: host slots go back through host_mem_release_queue
    # (twice for the tail, as some releases shipped), pages are read in storage batches and counted
    # after their write, a short batch marks the operation terminated, the IO barrier is gone
    "late2025-controller": (
        Edit(
            _CONTROLLER,
            "# Fixture: seed-era controller (revoke queue, clamped threshold in the prefetch thread,\n"
            "# count before write, the tail freed directly after an IO barrier).\n"
            "class PrefetchOperation:\n"
            "    def increment(self, num_tokens):\n"
            "        with self._lock:\n"
            "            if self._done_flag:\n"
            "                return False\n"
            "            self.completed_tokens += num_tokens\n"
            "            return True\n"
            "\n"
            "\n"
            "class HiCacheController:\n"
            "    def __init__(self, prefetch_threshold=256):\n",
            "# Fixture: late2025 controller; the tail [completed, L) is queued for release twice,\n"
            "# once in _page_transfer and once in prefetch_io_aux_func (as some releases shipped).\n"
            "class HiCacheController:\n"
            "    def attach_storage_backend(self, prefetch_threshold=256):\n",
        ),
        Edit(
            _CONTROLLER,
            "        self.prefetch_revoke_queue = Queue()\n",
            "        self.prefetch_revoke_queue = Queue()\n"
            "        self.host_mem_release_queue = Queue()\n",
        ),
        Edit(
            _CONTROLLER,
            "    def generic_page_transfer(self, operation, batch_size=8):\n"
            "        for i in range(0, len(operation.hash_value), batch_size):\n"
            "            page_data = self.storage_backend.batch_get(operation.hash_value[i : i + batch_size])\n"
            "            if page_data is None:\n"
            "                break\n"
            "            if operation.increment(self.page_size * len(page_data)):\n"
            "                for data in page_data:\n"
            "                    self.mem_pool_host.set_from_flat_data_page(operation.host_indices[i], data)\n"
            "            else:\n"
            "                break\n",
            "    def _generic_page_get(self, operation, hash_values, host_indices):\n"
            "        page_data = self.storage_backend.batch_get(hash_values)\n"
            "        for i in range(len(hash_values)):\n"
            "            if page_data[i] is None:\n"
            "                break\n"
            "            self.mem_pool_host.set_from_flat_data_page(host_indices[i * self.page_size], page_data[i])\n"
            "            if not operation.increment(self.page_size):\n"
            "                break\n"
            "\n"
            "    def _page_transfer(self, operation):\n"
            "        for i in range(0, len(operation.hash_value), self.storage_batch_size):\n"
            "            batch = operation.hash_value[i : i + self.storage_batch_size]\n"
            "            before = operation.completed_tokens\n"
            "            self.page_get_func(operation, batch, operation.host_indices)\n"
            "            if operation.completed_tokens != before + len(batch) * self.page_size:\n"
            "                operation.mark_terminate()\n"
            "                break\n"
            "        self.append_host_mem_release(operation.host_indices[operation.completed_tokens :])\n",
        ),
        Edit(
            _CONTROLLER,
            "                self.generic_page_transfer(operation)\n"
            "                torch.distributed.barrier(group=self.prefetch_io_tp_group)\n"
            "                self.mem_pool_host.free(operation.host_indices[operation.completed_tokens :])\n",
            "                self._page_transfer(operation)\n"
            "                self.append_host_mem_release(operation.host_indices[operation.completed_tokens :])\n",
        ),
        Edit(
            _CONTROLLER,
            "storage_hit_count = self.query(operation)\n",
            "hash_value, storage_hit_count = self._storage_hit_query(operation)\n",
        ),
        Edit(
            _CONTROLLER,
            "self.mem_pool_host.free(operation.host_indices)\n",
            "self.append_host_mem_release(operation.host_indices)\n",
        ),
    ),
    # 0.5.6 on: the tail [completed, L) is queued once, after the transfer, not also inside it
    "late2025-tail-once": (
        Edit(
            _CONTROLLER,
            "# Fixture: late2025 controller; the tail [completed, L) is queued for release twice,\n"
            "# once in _page_transfer and once in prefetch_io_aux_func (as some releases shipped).\n",
            "# Fixture: late2025 controller as 0.5.6 on: the tail [completed, L) is queued for release once,\n"
            "# by prefetch_io_aux_func after the transfer.\n",
        ),
        Edit(
            _CONTROLLER,
            "                break\n"
            "        self.append_host_mem_release(operation.host_indices[operation.completed_tokens :])\n",
            "                break\n",
        ),
    ),
    # host slots are allocated in the drain once the agreed hits are known (prefetch_hit_queue),
    # not at issue; the timeout is capped; there is no abort path (on late2025 as 0.5.6 ships it)
    "staged": (
        Edit(
            _CONTROLLER,
            "# Fixture: late2025 controller as 0.5.6 on: the tail [completed, L) is queued for release once,\n"
            "# by prefetch_io_aux_func after the transfer.\n",
            "# Fixture: staged controller (hit queue and revoke queue; clamped threshold in the prefetch thread).\n",
        ),
        Edit(
            _CONTROLLER,
            "        self.prefetch_revoke_queue = Queue()\n",
            "\n"
            "    def _start_storage_threads(self):\n"
            "        self.prefetch_hit_queue = Queue()\n"
            "        self.prefetch_revoke_queue = Queue()\n",
        ),
        Edit(_CONTROLLER, "            if page_data[i] is None:\n                break\n", ""),
        Edit(
            _CONTROLLER,
            "        for i in range(0, len(operation.hash_value), self.storage_batch_size):\n"
            "            batch = operation.hash_value[i : i + self.storage_batch_size]\n",
            "        for i in range(0, len(operation.hash_value), STORAGE_BATCH_SIZE):\n"
            "            batch = operation.hash_value[i : i + STORAGE_BATCH_SIZE]\n",
        ),
        Edit(_CONTROLLER, "aux_func(self):\n        while not self.stop_event", "aux_func(self):\n        while not self.storage_stop_event"),
        Edit(_CONTROLLER, "thread_func(self):\n        while not self.stop_event", "thread_func(self):\n        while not self.storage_stop_event"),
        Edit(
            _CONTROLLER,
            "                    self.append_host_mem_release(operation.host_indices)\n"
            "                else:\n"
            "                    self.prefetch_buffer.put(operation)\n",
            "                else:\n"
            "                    operation.storage_hit_count = storage_hit_count\n"
            "                    self.prefetch_hit_queue.put(operation)\n",
        ),
        Edit(
            _HIRADIX,
            "# Fixture: late2025 shape (allocation at issue, MAX over [1 - can_terminate, terminated]).\n",
            "# Fixture: staged shape (host slots allocated in the drain once the hits are known).\n",
        ),
        Edit(
            _HIRADIX,
            "cc.host_mem_release_queue.qsize()])\n"
            "        self._all_reduce_attn_groups(qsizes, torch.distributed.ReduceOp.MIN)\n",
            "cc.prefetch_hit_queue.qsize()])\n"
            "        self._all_reduce_attn_groups(qsizes, torch.distributed.ReduceOp.MIN)\n"
            "        self._drain_storage_control_queues_impl(*qsizes.tolist())\n"
            "\n"
            "    def _drain_storage_control_queues_impl(self, n_revoke, n_storage_hit):\n"
            "        cc = self.cache_controller\n"
            "        for _ in range(n_storage_hit):\n"
            "            operation = cc.prefetch_hit_queue.get()\n"
            "            host_indices = cc.mem_pool_host.alloc(operation.storage_hit_count)\n"
            "            if host_indices is None:\n"
            "                self._revoke_pending_prefetch(operation.request_id)\n"
            "                continue\n"
            "            operation.host_indices = host_indices\n"
            "            cc.prefetch_buffer.put(operation)\n",
        ),
        Edit(
            _HIRADIX,
            "        return time.monotonic() - operation.start_time > self.prefetch_timeout_base + len(\n"
            "            operation.hash_value) * self.prefetch_timeout_per_page\n",
            "        cfg = self.prefetch_timeout_config\n"
            "        timeout = min(cfg.max, cfg.base + cfg.per_ki_token * len(operation.hash_value) * self.page_size / 1024)\n"
            "        return time.monotonic() - operation.start_time > timeout\n",
        ),
        Edit(
            _HIRADIX,
            "        if req_id not in self.ongoing_prefetch:\n"
            "            return True\n"
            "        node, key, host_indices, operation = self.ongoing_prefetch[req_id]\n",
            "        node, key, operation = self.ongoing_prefetch[req_id]\n",
        ),
        Edit(
            _HIRADIX,
            "        host_indices = self.cache_controller.mem_pool_host.alloc(len(tokens))\n"
            "        if host_indices is None:\n"
            "            return\n"
            "        operation = self.cache_controller.prefetch(req_id, host_indices, tokens, last_hash)\n"
            "        self.ongoing_prefetch[req_id] = (node, tokens, host_indices, operation)\n",
            "        operation = self.cache_controller.prefetch(req_id, tokens, last_hash)\n"
            "        self.ongoing_prefetch[req_id] = (node, tokens, operation)\n",
        ),
        Edit(
            _HIRADIX,
            "\n"
            "    def release_aborted_request(self, rid):\n"
            "        node, key, host_indices, operation = self.ongoing_prefetch.pop(rid)\n"
            "        completed_tokens, _ = self.cache_controller.terminate_prefetch(operation)\n"
            "        self._barrier_attn_groups()\n"
            "        self.cache_controller.append_host_mem_release(host_indices[:completed_tokens])\n",
            "",
        ),
    ),
    # the threshold test moves from the prefetch thread into the drain: no revoke queue
    "staged-drain-threshold": (
        Edit(
            _CONTROLLER,
            "# Fixture: staged controller (hit queue and revoke queue; clamped threshold in the prefetch thread).\n",
            "# Fixture: staged controller without a revoke queue: every agreed hit count goes to the drain.\n",
        ),
        Edit(_CONTROLLER, "        self.prefetch_revoke_queue = Queue()\n", ""),
        Edit(
            _CONTROLLER,
            "                if storage_hit_count < self.prefetch_threshold:\n"
            "                    self.prefetch_revoke_queue.put(operation.request_id)\n"
            "                else:\n"
            "                    operation.storage_hit_count = storage_hit_count\n"
            "                    self.prefetch_hit_queue.put(operation)\n",
            "                operation.storage_hit_count = storage_hit_count\n"
            "                self.prefetch_hit_queue.put(operation)\n",
        ),
        Edit(
            _HIRADIX,
            "# Fixture: staged shape (host slots allocated in the drain once the hits are known).\n",
            "# Fixture: staged shape with the threshold test moved into the drain (raw threshold, no revoke queue).\n",
        ),
        Edit(
            _HIRADIX,
            "[cc.prefetch_revoke_queue.qsize(), cc.prefetch_hit_queue.qsize()]",
            "[cc.prefetch_hit_queue.qsize()]",
        ),
        Edit(_HIRADIX, "(self, n_revoke, n_storage_hit):", "(self, n_storage_hit):"),
        Edit(
            _HIRADIX,
            "            operation = cc.prefetch_hit_queue.get()\n",
            "            operation = cc.prefetch_hit_queue.get()\n"
            "            if operation.storage_hit_count < self.prefetch_threshold:\n"
            "                self._revoke_pending_prefetch(operation.request_id)\n"
            "                continue\n",
        ),
    ),
    # the unified cache's timeout becomes an admission deadline, clocked from the first waiting check
    "unified-deadline": (
        Edit(
            _UNIFIED,
            "# Fixture: unified cache (no vote but under timeout; an ACK applies to the very operation; tail queued).\n",
            "# Fixture: unified cache with the admission deadline (clock from the first waiting check).\n",
        ),
        Edit(
            _UNIFIED,
            "    def _prefetch_timeout_check_linear_func(self, operation):\n"
            "        return time.monotonic() - operation.start_time > self.prefetch_timeout_base + len(\n"
            "            operation.hash_value) * self.prefetch_timeout_per_page\n",
            "    def _prefetch_deadline_expired(self, operation):\n"
            "        if operation.host_indices is not None and operation.completed_tokens >= len(operation.hash_value) * self.page_size:\n"
            "            return False\n"
            "        wait = self._storage_prefetch_wait.get(operation.handle)\n"
            "        return wait is not None and wait.timer.elapsed() > wait.timeout_s\n",
        ),
        Edit(
            _UNIFIED,
            "should_terminate = self._prefetch_timeout_check_linear_func(operation)",
            "should_terminate = self._prefetch_deadline_expired(operation)",
        ),
    ),
}

# folder layer -> {file the folder does not hold: (the layer it grew from, the edit layer that makes
# it)}: that release's file is the older family's with the lines the release changed
DERIVED: dict[str, dict[str, tuple[str, str]]] = {
    "late2025": {_CONTROLLER: ("seed", "late2025-controller")},
}

# family -> (its layers, the cache class to judge: None = the one the factory builds)
FAMILIES = {
    "seed": (("seed",), None),
    "late2025": (("late2025",), None),
    "staged": (("late2025", "late2025-tail-once", "staged"), None),
    "staged-drain-threshold": (("late2025", "late2025-tail-once", "staged", "staged-drain-threshold"), None),
    "ack-drain-hiradix": (("ack-drain",), "HiRadixCache"),
    "unified": (("ack-drain",), None),
    "unified-deadline": (("ack-drain", "unified-deadline"), None),
    "unknown": (("late2025", "unknown"), None),
}
# late2025 as 0.5.6 on ships it (tail released once)
LATE_ONCE = ("late2025", "late2025-tail-once")


def files_of(*layers: str) -> dict[str, str]:
    """The protocol files (path below sglang/srt -> text) the layers make, in order."""
    files: dict[str, str] = {}
    for layer in layers:
        if layer in EDITS:
            files = edited(files, layer)
        else:
            files.update(read_protocol_files(find_srt(ROOT / layer)))
            for rel, (base, edit) in DERIVED.get(layer, {}).items():
                files[rel] = edited({rel: files_of(base)[rel]}, edit)[rel]
    return files


def edited(files: dict[str, str], layer: str, edits: tuple[Edit, ...] | None = None) -> dict[str, str]:
    """`files` with the edits of `layer` (or the `edits` given, named `layer`) made, each exactly once."""
    out = dict(files)
    for edit in EDITS[layer] if edits is None else edits:
        text = out.get(edit.file, "")
        found = text.count(edit.old)
        if found != 1:
            raise AssertionError(f"edit {layer!r}: {edit.old!r} stands {found} times in {edit.file}, not once")
        out[edit.file] = text.replace(edit.old, edit.new)
    return out


def write_srt(srt: Path, files: dict[str, str]) -> None:
    """Write protocol files below an `sglang/srt` folder."""
    for rel, text in files.items():
        (srt / rel).parent.mkdir(parents=True, exist_ok=True)
        (srt / rel).write_text(text)


def tree(folder: Path, *layers: str) -> Path:
    """An SGLang-shaped tree `folder/sglang/srt/...` made of fixture layers."""
    write_srt(folder / "sglang" / "srt", files_of(*layers))
    return folder


@lru_cache(maxsize=1)
def fixture_follows():
    """The shipped fingerprints plus those of every fixture family: where a test checks a fixture
    tree through `prefetch-check sglang`, the tree stands for the release family it is shaped after
    (the honest floor, prefetch_check/sglang/followed.py, would refuse it otherwise)."""
    from prefetch_check.sglang import followed

    shapes = [(name, layers, cls) for name, (layers, cls) in FAMILIES.items() if name != "unknown"]
    shapes.append(("late2025 (tail once)", LATE_ONCE, None))
    return followed.shipped().merged(followed.build((f"fixture {name}", files_of(*layers), cls)
                                                    for name, layers, cls in shapes))


def git(repo: Path, *args: str) -> str:
    """Run git in `repo`; its output, stripped."""
    import subprocess

    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout.strip()


def new_repo(repo: Path) -> Path:
    """An empty git repository at `repo` with a committer set (skips the test without git)."""
    import shutil

    import pytest

    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    git(repo.parent, "init", "-q", str(repo))
    git(repo, "config", "user.email", "t@example.invalid")
    git(repo, "config", "user.name", "t")
    return repo
