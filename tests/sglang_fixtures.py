"""The upstream-shaped SGLang trees of tests/fixtures/sglang/, built from layers.

A family's tree is a list of layers. A layer is either a folder of fixture files (they replace
the earlier layers' files of the same name) or a named edit of the files the earlier layers made:
where one release family differs from another by a few lines, the edit shows exactly those
lines, and each of its replacements must apply exactly once (a fixture that drifts fails loudly).
"""

from __future__ import annotations

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

# family -> (its layers, the cache class to judge: None = the one the factory builds)
FAMILIES = {
    "seed": (("seed",), None),
    "late2025": (("late2025",), None),
    "staged": (("late2025", "staged"), None),
    "staged-drain-threshold": (("late2025", "staged", "staged-drain-threshold"), None),
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
    return files


def edited(files: dict[str, str], layer: str) -> dict[str, str]:
    out = dict(files)
    for edit in EDITS[layer]:
        text = out.get(edit.file, "")
        found = text.count(edit.old)
        if found != 1:
            raise AssertionError(f"edit layer {layer!r}: {edit.old!r} stands {found} times in {edit.file}, not once")
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
