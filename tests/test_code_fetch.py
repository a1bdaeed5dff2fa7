"""PROTOCOL_FILES grew the small modules the executor runs: a release folder fetched before that
is completed when the package index answers, and still used as it is when it does not."""

from __future__ import annotations

import json
import shutil
import subprocess
import zipfile
from pathlib import Path

from prefetch_check.sglang.fetch import fetch_release
from prefetch_check.sglang.locate import PROTOCOL_FILES


def wheel(tmp_path: Path) -> Path:
    path = tmp_path / "sglang-0.5.23-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as z:
        for rel in ("managers/cache_controller.py", "utils/poll_timer.py", "mem_cache/unified_cache/component_type.py"):
            z.writestr(f"sglang/srt/{rel}", f"# {rel}\n")
        z.writestr("sglang/srt/models/llama.py", "# not kept\n")
    return path


class Pip:
    def __init__(self, archive=None):
        self.archive, self.calls = archive, 0

    def __call__(self, args):
        self.calls += 1
        if self.archive is None:
            return subprocess.CompletedProcess(args, 1, "", "ERROR: network is unreachable\n")
        shutil.copy(self.archive, Path(args[args.index("-d") + 1]) / self.archive.name)
        return subprocess.CompletedProcess(args, 0, "", "")


def test_the_executor_modules_are_kept_and_an_older_cache_is_completed(tmp_path):
    cache = tmp_path / "cache"
    srt = fetch_release("0.5.23", cache, Pip(wheel(tmp_path)))
    assert (srt / "utils/poll_timer.py").is_file() and (srt / "mem_cache/unified_cache/component_type.py").is_file()
    source = cache / "0.5.23" / "SOURCE.json"
    assert set(json.loads(source.read_text())["wanted"]) == set(PROTOCOL_FILES)
    assert fetch_release("0.5.23", cache, Pip()) == srt  # complete: no download
    # as a fetch made before the executor's files joined PROTOCOL_FILES left it
    old = json.loads(source.read_text())
    old.pop("wanted")
    old["files"] = ["managers/cache_controller.py"]
    source.write_text(json.dumps(old))
    (srt / "utils/poll_timer.py").unlink()
    offline = Pip()
    assert fetch_release("0.5.23", cache, offline) == srt and offline.calls == 1  # tried, then served as it is
    assert not (srt / "utils/poll_timer.py").exists()
    online = Pip(wheel(tmp_path))
    fetch_release("0.5.23", cache, online)
    assert online.calls == 1 and (srt / "utils/poll_timer.py").is_file()
    assert "wanted" in json.loads(source.read_text())


def test_every_file_the_executor_runs_is_kept_by_a_fetch():
    from prefetch_check.model.code.pack import pack, worlds

    for world in worlds():
        assert set(pack(world).files) <= set(PROTOCOL_FILES), world
