"""A fetch keeps every sglang/srt source file (the prefetch path reaches any of them): a release
folder fetched by an older prefetch-check (protocol files only) is fetched again when the package
index answers, and is an error naming the folder when it does not, never a tree read with files
missing."""

from __future__ import annotations

import json
import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest

from prefetch_check.sglang.errors import SglangSourceError
from prefetch_check.sglang.fetch import KEEP, fetch_release
from prefetch_check.sglang.locate import PROTOCOL_FILES


def wheel(tmp_path: Path) -> Path:
    path = tmp_path / "sglang-0.5.23-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as z:
        for rel in ("managers/cache_controller.py", "utils/poll_timer.py", "mem_cache/unified_cache/component_type.py"):
            z.writestr(f"sglang/srt/{rel}", f"# {rel}\n")
        z.writestr("sglang/srt/models/llama.py", "# kept: any srt source file\n")
        z.writestr("sglang/srt/models/weights.bin", "not kept: not a source file\n")
        z.writestr("sglang/lang/api.py", "# not kept: not below sglang/srt\n")
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


def test_every_srt_source_is_kept_and_an_older_cache_is_fetched_again_or_refused(tmp_path):
    cache = tmp_path / "cache"
    srt = fetch_release("0.5.23", cache, Pip(wheel(tmp_path)))
    assert (srt / "utils/poll_timer.py").is_file() and (srt / "mem_cache/unified_cache/component_type.py").is_file()
    assert (srt / "models/llama.py").is_file() and not (srt / "models/weights.bin").exists()
    assert not (cache / "0.5.23" / "sglang" / "lang").exists()
    source = cache / "0.5.23" / "SOURCE.json"
    assert json.loads(source.read_text())["kept"] == KEEP
    assert fetch_release("0.5.23", cache, Pip()) == srt  # complete: no download
    # as an older prefetch-check left it: the protocol files only
    old = json.loads(source.read_text())
    old.pop("kept")
    old["wanted"] = list(PROTOCOL_FILES)
    source.write_text(json.dumps(old))
    (srt / "models/llama.py").unlink()
    offline = Pip()
    with pytest.raises(SglangSourceError, match="older prefetch-check, which kept only the protocol files"):
        fetch_release("0.5.23", cache, offline)
    assert offline.calls == 1
    online = Pip(wheel(tmp_path))
    assert fetch_release("0.5.23", cache, online) == srt
    assert online.calls == 1 and (srt / "models/llama.py").is_file()
    assert json.loads(source.read_text())["kept"] == KEEP


def test_every_file_the_executor_runs_is_kept_by_a_fetch():
    """A fetch keeps every srt source (KEEP): each file a world imports or reads is one of them."""
    from fnmatch import fnmatch

    from prefetch_check.model.code.pack import pack, worlds

    for world in worlds():
        for rel in pack(world).files + pack(world).read:
            assert rel.endswith(".py") and fnmatch(f"sglang/srt/{rel}", KEEP), (world, rel)
        assert not fnmatch("sglang/srt/README.md", KEEP)  # the pattern is not a catch-all
