"""The predicate read from a source file: the before-fix shape is caught, the after-fix shapes verified,
and whatever the adapter cannot supply is refused with the attribute and the line."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from prefetch_check.explorer.result import VIOLATED
from prefetch_check.model.protocols.poll.predicates import PredicateError, buggy, fixed
from prefetch_check.model.source.predicate import is_source_spec, load_source_predicate, probe_views
from prefetch_check import check, uniform_config
from sglang_fixtures import Edit, edited

FIXTURES = Path(__file__).parent / "fixtures"
BEFORE = f"{FIXTURES / 'hiradix_before_fix.py'}:HiRadixCache.can_terminate_prefetch"
AFTER = f"{FIXTURES / 'hiradix_after_fix.py'}:HiRadixCache.can_terminate_prefetch"
UNSUPPORTED = FIXTURES / "hiradix_unsupported.py"

# The guarded after-fix shape is the before-fix predicate with the seed fix made: an empty page
# list is not done, and the ranks reduce [1 - int(may_stop), int(terminated)] with MAX inside the
# same `if self.tp_world_size > 1` branch (the timeout still through `self.is_prefetch_timeout`).
SEED_FIX = (
    Edit(
        "f",
        "        # every published page counted? (an empty page list counts as done)\n"
        "        done = operation.completed_tokens == len(operation.hash_value) * self.page_size\n",
        "        if len(operation.hash_value) == 0:\n"
        "            done = False\n"
        "        else:\n"
        "            done = operation.completed_tokens == len(operation.hash_value) * self.page_size\n",
    ),
    Edit(
        "f",
        "        if self.tp_world_size > 1:\n"
        "            vote = torch.tensor(int(may_stop), dtype=torch.int)\n"
        "            torch.distributed.all_reduce(vote, op=torch.distributed.ReduceOp.MIN, group=self.tp_group)\n"
        "            may_stop = bool(vote.item())\n"
        "        return may_stop\n",
        "        stopped_here = operation.is_terminated()\n"
        "        if self.tp_world_size > 1:\n"
        "            votes = torch.tensor([1 - int(may_stop), int(stopped_here)], dtype=torch.int)\n"
        "            torch.distributed.all_reduce(votes, op=torch.distributed.ReduceOp.MAX, group=self.tp_group)\n"
        "            may_stop = votes[0].item() == 0\n"
        "            stopped_here = votes[1].item() == 1\n"
        "        return may_stop or stopped_here\n",
    ),
)


@pytest.fixture(scope="module")
def specs(tmp_path_factory) -> dict:
    """name -> predicate spec: the fixture files', and the guarded shape (SEED_FIX made in a copy)."""
    guarded = tmp_path_factory.mktemp("guarded") / "hiradix_guarded_fix.py"
    before = (FIXTURES / "hiradix_before_fix.py").read_text()
    guarded.write_text(edited({"f": before}, "seed fix", SEED_FIX)["f"])
    return {"before": BEFORE, "after": AFTER, "after_guarded": f"{guarded}:HiRadixCache.can_terminate_prefetch"}


def line_of(path: Path, snippet: str) -> int:
    """1-based line of the first line containing `snippet` (so tests do not hard-code line numbers)."""
    for n, line in enumerate(path.read_text().splitlines(), start=1):
        if snippet in line:
            return n
    raise AssertionError(f"{snippet!r} not in {path}")


def write(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "cache.py"
    path.write_text(textwrap.dedent(body))
    return path


# ---- verdicts through the checker's API ----


@pytest.mark.parametrize("policy", ["wait_complete", "timeout"])
def test_before_fix_shape_is_caught_early_acceptance(policy):
    name, predicate = load_source_predicate(BEFORE)
    result = check(uniform_config(ranks=2, requests=1, pages=2, policy=policy), predicate)
    assert result.verdict("no_early_acceptance") == VIOLATED
    last = result.trace("no_early_acceptance").steps[-1]
    assert last.action.kind == "S.check"
    assert "len(hash_value)=0" in last.description and name in last.description


def test_before_fix_shape_is_caught_in_its_own_protocol_version():
    _, predicate = load_source_predicate(BEFORE)
    result = check(uniform_config(ranks=2, requests=1, pages=2, shape="seed"), predicate)
    assert "no_early_acceptance" in result.violated


@pytest.mark.parametrize("spec", ["after", "after_guarded"])
@pytest.mark.parametrize(
    "params",
    [
        dict(ranks=2, requests=1, pages=2),
        dict(ranks=2, requests=1, pages=2, policy="timeout"),
        dict(ranks=2, requests=1, pages=2, failing={1: {0}}),
        dict(ranks=1, requests=2, pages=2, hits=1, page_size=2),
    ],
)
def test_after_fix_shapes_are_verified(specs, spec, params):
    _, predicate = load_source_predicate(specs[spec])
    result = check(uniform_config(**params), predicate)
    assert result.all_verified, result.violated


@pytest.mark.parametrize("spec, builtin", [("before", buggy), ("after", fixed), ("after_guarded", fixed)])
def test_source_predicate_answers_like_the_builtin_with_the_same_shape(specs, spec, builtin):
    _, predicate = load_source_predicate(specs[spec])
    for view in probe_views():
        assert predicate(view) == builtin(view), view


def test_name_and_detected_protocol_version(specs):
    name, after = load_source_predicate(AFTER)
    assert name == "hiradix_after_fix.py:HiRadixCache.can_terminate_prefetch"
    assert after.__name__ == name
    assert after.shape == "late2025"
    assert load_source_predicate(BEFORE)[1].shape == "seed"
    assert load_source_predicate(specs["after_guarded"])[1].shape == "late2025"


def test_explanation_names_the_collective_line():
    _, predicate = load_source_predicate(AFTER)
    view = next(v for v in probe_views() if v.policy == "wait_complete" and not v.hash_value)
    text = predicate.explain(view, predicate(view))
    line = line_of(FIXTURES / "hiradix_after_fix.py", "self._all_reduce_attn_groups(votes")
    assert f"all_reduce(MAX) at line {line}" in text and text.endswith("-> wait")


# ---- refusals: attribute (or name) and line, never a verdict ----


@pytest.mark.parametrize(
    "cls, what, snippet",
    [
        ("ReadsController", "self.cache_controller", "self.cache_controller"),
        ("ReadsOperationField", "operation.host_indices", "operation.host_indices"),
        ("UnknownGlobal", "envs", "envs.PREFETCH_ALWAYS_DONE"),
        ("SumCollective", "SUM", "ReduceOp.SUM"),
        ("ReadsOnlyAtRunTime", "self.storage_backend_ready", "helper.storage_backend_ready"),
    ],
)
def test_unsupplied_reads_are_refused_with_attribute_and_line(cls, what, snippet):
    with pytest.raises(PredicateError) as err:
        load_source_predicate(f"{UNSUPPORTED}:{cls}.can_terminate_prefetch")
    text = str(err.value)
    assert what in text
    assert f"line {line_of(UNSUPPORTED, snippet)}:" in text
    assert snippet in text  # the source line is quoted


@pytest.mark.parametrize(
    "spec, words",
    [
        ("no_colon_here.py", "expected PATH.py:Class.method"),
        (f"{FIXTURES / 'missing.py'}:A.b", "no such file"),
        (f"{FIXTURES / 'hiradix_after_fix.py'}:HiRadixCach.can_terminate_prefetch", "did you mean 'HiRadixCache'"),
        (f"{FIXTURES / 'hiradix_after_fix.py'}:HiRadixCache.can_terminate", "did you mean 'can_terminate_prefetch'"),
        (f"{FIXTURES / 'hiradix_after_fix.py'}:HiRadixCache.can-terminate", "not a dotted Python name"),
    ],
)
def test_bad_specs_are_clear(spec, words):
    with pytest.raises(PredicateError, match=None) as err:
        load_source_predicate(spec)
    assert words in str(err.value)


def test_syntax_error_names_the_line(tmp_path):
    path = write(tmp_path, "class C:\n    def can_terminate_prefetch(self, operation)\n        return True\n")
    with pytest.raises(PredicateError) as err:
        load_source_predicate(f"{path}:C.can_terminate_prefetch")
    assert "not valid Python" in str(err.value) and "line 2" in str(err.value)


@pytest.mark.parametrize(
    "method, refusal",
    [
        ("def two(self, operation, extra):\n    return True", r"takes \(self, operation, extra\)"),
        ("async def later(self, operation):\n    return True", "async def"),
        (
            "def can_terminate_prefetch(self, operation):\n    operation.completed_tokens = 0\n    return True",
            "assigns `operation.completed_tokens`",
        ),
        (  # a non-boolean answer
            "def can_terminate_prefetch(self, operation):\n"
            "    if self.prefetch_stop_policy == \"timeout\":\n        return None\n    return True",
            "returned None",
        ),
    ],
    ids=["wrong signature", "async", "writes to the operation", "non-boolean answer"],
)
def test_a_method_the_adapter_cannot_run_is_refused(tmp_path, method, refusal):
    path = write(tmp_path, "class C:\n" + textwrap.indent(method, "    ") + "\n")
    name = method.split("(")[0].split()[-1]  # the method's name, off its `def` line
    with pytest.raises(PredicateError, match=refusal):
        load_source_predicate(f"{path}:C.{name}")


# ---- shapes the adapter understands ----


def test_module_function_and_broad_except_around_the_collective(tmp_path):
    path = write(
        tmp_path,
        """
        import torch

        def can_terminate_prefetch(self, operation):
            done = len(operation.hash_value) > 0 and operation.completed_tokens == len(operation.hash_value) * self.page_size
            votes = torch.tensor([1 - int(done), int(operation.is_terminated())], dtype=torch.int)
            try:
                torch.distributed.all_reduce(votes, op=torch.distributed.ReduceOp.MAX)
            except Exception:
                return True  # must not swallow the checker's stop at the collective
            return votes[0].item() == 0
        """,
    )
    name, predicate = load_source_predicate(f"{path}:can_terminate_prefetch")
    assert name == "cache.py:can_terminate_prefetch"
    for view in probe_views():
        if view.policy == "wait_complete":
            assert predicate(view) == fixed(view)


def test_inline_clock_follows_the_model_timeout(tmp_path):
    path = write(
        tmp_path,
        """
        import time

        class C:
            def can_terminate_prefetch(self, operation):
                late = time.monotonic() - operation.start_time > self.prefetch_timeout_config.base
                return late
        """,
    )
    _, predicate = load_source_predicate(f"{path}:C.can_terminate_prefetch")
    for view in probe_views():
        assert predicate(view) == view.timed_out


def test_is_source_spec():
    assert is_source_spec("python/sglang/srt/mem_cache/hiradix_cache.py:HiRadixCache.can_terminate_prefetch")
    assert not is_source_spec("mypkg.preds:strict")
    assert not is_source_spec("fixed")


def test_run_warns_when_the_code_and_the_scenario_model_different_protocol_versions(capsys):
    """The fixture performs the late2025 collective: checking it in a seed-shape scenario mixes
    two versions, which `run` says on stderr (once per scenario), and not for a matching one."""
    from prefetch_check.cli import main

    scenarios = Path(__file__).parent.parent / "scenarios"
    main(["run", str(scenarios / "seed-shape.toml"), str(scenarios / "tp2.toml"), "--predicate", AFTER, "--quiet"])
    err = capsys.readouterr().err
    assert err.count("termination collective") == 1  # once (the other warning is about actions never fired)
    assert "seed-shape.toml models shape = \"seed\"" in err and "performs the late2025 termination collective" in err
    assert "tp2.toml" not in err
