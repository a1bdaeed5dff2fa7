"""Source predicates of the ack-drain shapes (SGLang 0.5.19+): what they answer, the protocol they
belong to (read from what they do, never from the file name), and the refusal to judge them on a
scenario of the other protocol."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from prefetch_check import check, uniform_config
from prefetch_check.cli import main
from prefetch_check.explorer.result import VIOLATED
from prefetch_check.model.protocols.ack_drain import predicates as ack_predicates
from prefetch_check.model.protocols.ack_drain.config import uniform_ack_config
from prefetch_check.model.protocols.poll.predicates import PredicateError
from prefetch_check.model.source.predicate import load_source_predicate, probe_views, protocol_mismatch
from sglang_fixtures import ROOT, files_of

FIXTURES = Path(__file__).parent / "fixtures"
SHAPES = FIXTURES / "ack_drain_predicates.py"
SCENARIOS = Path(__file__).parents[1] / "scenarios"
ACK_SCENARIOS = FIXTURES / "sglang" / "scenarios" / "ack-drain"


def spec(qualname: str) -> str:
    return f"{SHAPES}:{qualname}"


HIRADIX = spec("HiRadixCache.can_terminate_prefetch")
# 0.5.19-0.5.22's unified predicate, in the upstream-shaped tree of the ack-drain family
UNIFIED_FILE = ROOT / "ack-drain" / "sglang" / "srt" / "mem_cache" / "unified_radix_cache.py"
UNIFIED = f"{UNIFIED_FILE}:UnifiedRadixCache._can_terminate_prefetch"


@pytest.fixture(scope="module")
def shapes(tmp_path_factory) -> dict:
    """The spec of each upstream predicate shape: 0.5.19's HiRadixCache, 0.5.19-0.5.22's unified one
    and 0.5.23's (the unified-deadline family's file: the unified one with the deadline call)."""
    deadline = tmp_path_factory.mktemp("deadline") / UNIFIED_FILE.name
    deadline.write_text(files_of("ack-drain", "unified-deadline")["mem_cache/unified_radix_cache.py"])
    return {"hiradix": HIRADIX, "unified": UNIFIED, "deadline": f"{deadline}:UnifiedRadixCache._can_terminate_prefetch"}


@pytest.mark.parametrize(
    "qualname, protocol, shape",
    [
        ("HiRadixCache.can_terminate_prefetch", "ack-drain", "hiradix"),
        ("UnifiedOldTest._can_terminate_prefetch", "ack-drain", "unified"),
        ("NegatedMax.can_terminate_prefetch", "predicate-poll", "seed"),
        ("LocalGuarded.can_terminate_prefetch", None, None),
    ],
)
def test_the_protocol_is_read_from_what_the_function_does(qualname, protocol, shape):
    _, predicate = load_source_predicate(spec(qualname))
    assert (predicate.protocol, predicate.shape) == (protocol, shape), predicate.membership


@pytest.mark.parametrize("shape", ["unified", "deadline"])
def test_the_unified_shapes_are_read_as_the_unified_one(shapes, shape):
    _, predicate = load_source_predicate(shapes[shape])
    assert (predicate.protocol, predicate.shape) == ("ack-drain", "unified"), predicate.membership


def test_the_file_name_does_not_decide(tmp_path):
    """The same function in a file named like a predicate-poll release is still ack-drain's."""
    renamed = tmp_path / "hiradix_cache.py"
    shutil.copy(UNIFIED_FILE, renamed)
    _, predicate = load_source_predicate(f"{renamed}:UnifiedRadixCache._can_terminate_prefetch")
    assert predicate.protocol == "ack-drain"


@pytest.mark.parametrize("shape", ["hiradix", "unified", "deadline"])
def test_ack_drain_shapes_answer_like_our_transcription(shapes, shape):
    _, predicate = load_source_predicate(shapes[shape])
    for view in probe_views():
        assert predicate(view) == ack_predicates.fixed(view), view


def test_the_unified_vote_is_read_back_as_upstream_reads_it():
    """A one-element MAX: the local answer is tensor[0] == 1 here, not == 0 as for [1 - can_terminate]."""
    _, unified = load_source_predicate(UNIFIED)
    _, negated = load_source_predicate(spec("NegatedMax.can_terminate_prefetch"))
    assert (unified.max_reading, negated.max_reading) == ("vote", "negated")
    fired = next(v for v in probe_views() if v.policy == "timeout" and v.timed_out and not v.terminated)
    assert unified(fired) is True
    text = unified.explain(fired, True)
    assert "all_reduce(MAX)" in text and "read back as tensor[0] == 1" in text and text.endswith("-> accept")


@pytest.mark.parametrize("shape", ["hiradix", "unified", "deadline"])
@pytest.mark.parametrize("policy", ["wait_complete", "timeout", "best_effort"])
def test_ack_drain_shapes_are_verified_on_the_ack_drain_protocol(shapes, shape, policy):
    loaded = load_source_predicate(shapes[shape])
    for cache in ("unified", "hiradix"):
        result = check(uniform_ack_config(ranks=2, pages=2, policy=policy, cache=cache), loaded, protocol="ack-drain")
        assert result.all_verified, (cache, result.violated)


def test_a_broken_edit_of_the_unified_predicate_is_caught():
    loaded = load_source_predicate(spec("UnifiedOldTest._can_terminate_prefetch"))
    result = check(uniform_ack_config(ranks=2, pages=2), loaded, protocol="ack-drain")
    assert result.verdict("no_early_acceptance") == VIOLATED
    assert "len(hash_value)=0" in result.trace("no_early_acceptance").steps[-1].description


def test_rank_consensus_is_accepted_and_other_decorators_are_refused():
    load_source_predicate(UNIFIED)  # @rank_consensus(same_results=True): an assertion, not a step
    with pytest.raises(PredicateError) as err:
        load_source_predicate(spec("CachedDecorator._can_terminate_prefetch"))
    assert "@functools.lru_cache(maxsize=None)" in str(err.value) and "rank_consensus" in str(err.value)


def test_a_vote_read_back_neither_way_is_refused():
    with pytest.raises(PredicateError) as err:
        load_source_predicate(spec("IgnoresTheVote._can_terminate_prefetch"))
    assert "as tensor[0] == 1 on" in str(err.value) and "as tensor[0] == 0 on" in str(err.value)


def test_protocol_mismatch_says_why_and_fits_what_fits():
    name, hiradix = load_source_predicate(HIRADIX)
    why = protocol_mismatch(name, hiradix, "predicate-poll")
    assert why and "belongs to the ack-drain protocol" in why and "never accepts under wait_complete" in why
    assert protocol_mismatch(name, hiradix, None) == why  # None: the default protocol, predicate-poll
    assert protocol_mismatch(name, hiradix, "ack-drain") is None
    local = load_source_predicate(spec("LocalGuarded.can_terminate_prefetch"))
    assert protocol_mismatch(*local, "predicate-poll") is None and protocol_mismatch(*local, "ack-drain") is None
    assert protocol_mismatch("fixed", ack_predicates.fixed, "predicate-poll") is None  # a plain function knows nothing


def test_the_local_predicate_runs_on_both_protocols():
    loaded = load_source_predicate(spec("LocalGuarded.can_terminate_prefetch"))
    assert check(uniform_config(ranks=2, pages=2), loaded).all_verified
    assert check(uniform_ack_config(ranks=2, pages=2), loaded, protocol="ack-drain").all_verified


# ---- the commands: a refusal (exit 2), never a verdict on the other protocol


def test_run_refuses_an_ack_drain_predicate_on_a_predicate_poll_scenario(capsys):
    assert main(["run", str(SCENARIOS / "tp2.toml"), "--predicate-source", HIRADIX, "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "tp2.toml" in err and "belongs to the ack-drain protocol" in err and "VIOLATED" not in err


def test_run_refuses_a_predicate_poll_predicate_on_an_ack_drain_scenario(capsys):
    late = f"{FIXTURES / 'hiradix_after_fix.py'}:HiRadixCache.can_terminate_prefetch"
    assert main(["run", str(ACK_SCENARIOS / "fixture-ack-tp2.toml"), "--predicate-source", late, "--quiet"]) == 2
    assert "belongs to the predicate-poll protocol" in capsys.readouterr().err


def test_run_judges_it_on_an_ack_drain_scenario(capsys):
    assert main(["run", str(ACK_SCENARIOS / "fixture-ack-tp2.toml"), "--predicate-source", UNIFIED, "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "fixture-ack-tp2" in out and "VERIFIED" in out and "VIOLATED" not in out


def test_trace_refuses_the_pairing_too(capsys):
    assert main(["trace", str(SCENARIOS / "tp2.toml"), "--predicate", HIRADIX, "--quiet"]) == 2
    assert "belongs to the ack-drain protocol" in capsys.readouterr().err
