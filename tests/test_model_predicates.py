"""The completion predicate as a plug-in: what buggy and fixed answer, what a predicate sees,
and a user's own `package.module:function` driving the model."""

from __future__ import annotations

import pytest

from prefetch_check.explorer.check import check
from prefetch_check.explorer.replay import replay
from prefetch_check.explorer.result import VERIFIED, VIOLATED
from prefetch_check.model.protocols.poll.config import uniform_config
from prefetch_check.model.predicate_loader import load_predicate
from prefetch_check.model.protocols.poll.predicates import OperationView, PredicateError, buggy, fixed
from models import readable


def view(pages=0, tokens=0, page_size=1, policy="wait_complete", timed_out=False, terminated=False):
    return OperationView(tuple(f"h{i}" for i in range(pages)), tokens, page_size, terminated, policy, timed_out)


@pytest.mark.parametrize(
    "op, buggy_says, fixed_says",
    [
        (view(0, 0), True, False),  # the race: nothing published yet, 0 == 0
        (view(2, 0), False, False),
        (view(2, 1), False, False),
        (view(2, 2), True, True),
        (view(2, 4, page_size=2), True, True),
        (view(2, 2, page_size=2), False, False),
        (view(0, 0, policy="timeout"), True, False),
        (view(0, 0, policy="timeout", timed_out=True), True, True),
        (view(2, 0, policy="timeout", timed_out=True), True, True),
        (view(0, 0, policy="best_effort"), True, True),
        (view(2, 0, policy="best_effort"), True, True),
    ],
)
def test_buggy_and_fixed_differ_only_on_an_empty_page_list(op, buggy_says, fixed_says):
    assert (buggy(op), fixed(op)) == (buggy_says, fixed_says)


def test_the_predicate_sees_hash_values_and_tokens(proto):
    p = proto(uniform_config(pages=3, hits=2, page_size=2))
    s = p.state("S0.issue.q0 P0.take.q0 P0.publish.q0 I0.take.q0 I0.write.q0 I0.increment.q0")
    v = p.model.protocol.view_of(s[0].ops[0])
    assert len(v.hash_value) == 2 and v.completed_tokens == 2 and v.page_size == 2
    assert (v.terminated, v.timed_out, v.policy, v.is_terminated()) == (False, False, "wait_complete", False)


def test_builtin_names_resolve():
    assert load_predicate("buggy") == ("buggy", buggy)
    assert load_predicate("fixed") == ("fixed", fixed)


@pytest.mark.parametrize(
    "spec, words",
    [
        ("fixd", "unknown predicate 'fixd'"),
        ("no_such_module_xyz:fn", "cannot import module 'no_such_module_xyz'"),
        ("os.path:no_such_function", "has no function 'no_such_function'"),
    ],
)
def test_bad_predicate_specs_say_what_is_wrong(spec, words):
    with pytest.raises(PredicateError, match=words):
        load_predicate(spec)


USER_MODULE = '''
def always(op):
    return True

def waits_for_pages(op):
    return len(op.hash_value) > 0 and op.completed_tokens >= len(op.hash_value) * op.page_size
'''


@pytest.fixture
def user_predicates(tmp_path, monkeypatch):
    (tmp_path / "my_predicates.py").write_text(USER_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    return "my_predicates"


def test_a_users_predicate_drives_the_model(user_predicates):
    model = readable(uniform_config(pages=2), f"{user_predicates}:always")
    assert model.protocol.predicate_name == f"{user_predicates}:always"
    result = check(model)
    assert result.verdict("no_early_acceptance") == VIOLATED
    assert result.trace("no_early_acceptance").schedule == "S0.issue.q0 S0.drain_arrive S0.drain S0.check.q0"
    # the trace explains a user's predicate with what it was given
    assert "len(hash_value)=0" in result.trace("no_early_acceptance").steps[-1].description


def test_a_users_correct_predicate_is_verified(user_predicates):
    result = check(readable(uniform_config(ranks=2, pages=2), f"{user_predicates}:waits_for_pages"))
    assert result.all_verified and result.verdict("progress") == VERIFIED


def test_a_predicate_function_can_be_passed_directly():
    model = readable(uniform_config(pages=1), lambda op: True, name="accept_all")
    assert model.protocol.predicate_name == "accept_all"
    s = replay(model, "S0.issue.q0 S0.drain_arrive S0.drain S0.check.q0").final_state
    assert s[0].s_coll[2] == (0, 0)
