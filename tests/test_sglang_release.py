"""One real release from the package index (the smallest wheel, cached): skipped with the reason when
the index cannot be reached."""

import pytest

from prefetch_check.model.source.detect import classify, detect_shape
from prefetch_check.sglang.cache import cache_root
from prefetch_check.sglang.errors import SglangSourceError
from prefetch_check.sglang.fetch import fetch_release
from prefetch_check.sglang.locate import read_protocol_files

RELEASE = "0.5.1"  # ~2 MB wheel; its shape is the seed


def test_real_release_from_the_index_is_the_seed_shape():
    try:
        srt = fetch_release(RELEASE, cache_root())
    except SglangSourceError as exc:
        pytest.skip(f"package index not reachable: {exc}")
    shape = detect_shape(read_protocol_files(srt))
    assert classify(shape) == "seed", shape.unrecognised()
    assert shape.predicate.value == "mem_cache/hiradix_cache.py:HiRadixCache.can_terminate_prefetch"
    assert shape.cache_class.evidence[0].file == "managers/scheduler.py"
