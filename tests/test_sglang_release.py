"""Real releases from the package index (fetched once into the user's cache): skipped with the reason
when the index cannot be reached and the release is not cached."""

import json
from pathlib import Path

import pytest

from prefetch_check import check
from prefetch_check.cli import main
from prefetch_check.model.protocols.ack_drain.config import uniform_ack_config
from prefetch_check.model.source.predicate import load_source_predicate
from prefetch_check.sglang.cache import cache_root
from prefetch_check.sglang.errors import SglangSourceError
from prefetch_check.sglang.families import classify
from prefetch_check.sglang.fetch import fetch_release
from prefetch_check.sglang.locate import read_protocol_files
from prefetch_check.sglang.tree_shape import tree_shape

RELEASE = "0.5.1"  # ~2 MB wheel; its shape is the seed


def test_real_release_from_the_index_is_the_seed_shape():
    try:
        srt = fetch_release(RELEASE, cache_root())
    except SglangSourceError as exc:
        pytest.skip(f"package index not reachable: {exc}")
    shape = tree_shape(read_protocol_files(srt)).shape  # a followed release: its recorded values too
    assert classify(shape) == "seed", shape.unrecognised()
    assert shape.predicate.value == "mem_cache/hiradix_cache.py:HiRadixCache.can_terminate_prefetch"
    assert shape.cache_class.evidence[0].file == "managers/scheduler.py"


# ---- the ack-drain releases: their own predicates from their own files, and the command end to end

ACK_RELEASES = ("0.5.19", "0.5.20", "0.5.21", "0.5.22", "0.5.23")
ACK_TP2 = Path(__file__).parent / "fixtures" / "sglang" / "scenarios" / "ack-drain" / "fixture-ack-tp2.toml"
POLL_TP2 = Path(__file__).parents[1] / "scenarios" / "tp2.toml"


def release_srt(version: str) -> Path:
    """The release's files from the cached fetch (downloaded once when the index is reachable)."""
    try:
        return fetch_release(version, cache_root())
    except SglangSourceError as exc:
        pytest.skip(f"package index not reachable and {version} not cached: {exc}")


@pytest.mark.parametrize("version", ACK_RELEASES)
def test_the_unified_predicate_of_each_ack_drain_release_loads_and_is_judged(version):
    srt = release_srt(version)
    name, predicate = load_source_predicate(
        f"{srt / 'mem_cache/unified_radix_cache.py'}:UnifiedRadixCache._can_terminate_prefetch")
    assert (predicate.protocol, predicate.shape, predicate.max_reading) == ("ack-drain", "unified", "vote")
    for policy in ("wait_complete", "timeout", "best_effort"):
        result = check(uniform_ack_config(ranks=2, pages=2, policy=policy), (name, predicate), protocol="ack-drain")
        assert result.all_verified, (policy, result.violated)


def test_the_hiradix_predicate_of_0_5_19_is_judged_on_ack_drain_and_refused_on_predicate_poll(capsys):
    srt = release_srt("0.5.19")
    spec = f"{srt / 'mem_cache/hiradix_cache.py'}:HiRadixCache.can_terminate_prefetch"
    name, predicate = load_source_predicate(spec)
    assert (predicate.protocol, predicate.shape) == ("ack-drain", "hiradix")
    assert main(["run", str(ACK_TP2), "--predicate-source", spec, "--quiet"]) == 0
    capsys.readouterr()
    assert main(["run", str(POLL_TP2), "--predicate-source", spec, "--quiet"]) == 2
    assert "belongs to the ack-drain protocol" in capsys.readouterr().err


def test_the_command_checks_a_real_release(tmp_path, capsys):
    release_srt("0.5.20")  # fetched (or found) in the user's cache; the command reads its own cache below
    argv = ["sglang", "--engine", "model", "0.5.20", "--cache-dir", str(cache_root()), "--scenarios", str(ACK_TP2), "--json", "-", "--quiet"]
    assert main(argv) == 0
    [row] = json.loads(capsys.readouterr().out)["releases"]
    assert (row["family"], row["status"], row["protocol"]) == ("unified", "checked", "ack-drain")
    assert {o["name"]: o["value"] for o in row["options"]} == {
        "cache": "unified", "ack_match": "operation", "deadline": "issue", "exceptions": "end_thread"}
    assert row["properties"]["wait_complete_delivers"]["release"]["verdict"] == "VERIFIED"


# ---- pre-releases and the 0.4 line


def test_a_pre_release_is_a_spec_and_a_release_without_storage_prefetch_says_so(tmp_path, capsys):
    """0.5.0rc2 is a release pip knows (it was refused as "not a release"); 0.4.9.post2 has no storage
    prefetch, which its row says plainly instead of listing unrecognised features. Neither is a
    release the model follows: exit 3."""
    for version in ("0.5.0rc2", "0.4.9.post2"):
        release_srt(version)
    status = main(["sglang", "--engine", "model", "0.5.0rc2", "0.4.9.post2", "--quiet", "--json", "-", "--scenarios", str(POLL_TP2)])
    doc = json.loads(capsys.readouterr().out)
    rc2, old = doc["releases"]
    assert status == 3 and rc2["release"] == "0.5.0rc2" and rc2["status"] == "not modelled"
    # refused by the honest floor; read like any tree, but what it lacks (no ACKs, no hit queue) is known
    # only for a followed release, so it is no family, while what it has is read as ever
    assert "differs from every release the model follows" in rc2["note"] and rc2["family"] == "unknown"
    assert rc2["shape"]["check_collective"]["value"] == "min-can-terminate" and rc2["shape"]["acks"]["value"] is None
    assert old["status"] == "not modelled" and old["note"].startswith("this release has no storage prefetch")
    assert "shape" not in old
