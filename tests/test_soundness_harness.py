"""The soundness harness, run for every built-in protocol: on each of its harness configurations
and under each predicate it ships, the fully reduced search gives every verdict the plain search
gives. This is what a protocol's `reductions_vouched = True` stands for (tests/test_reductions.py
adds random configurations and the shipped scenarios for the predicate-poll protocol)."""

from __future__ import annotations

import pytest

from prefetch_check.model.engine.vouch import TooLarge, compare
from prefetch_check.model.protocols import load_protocol
from prefetch_check.model.protocols.registry import names

CASES = [
    (name, i, predicate)
    for name in names()
    for i, _ in enumerate(load_protocol(name).harness_configs())
    for predicate in load_protocol(name).builtin_predicates
]


def test_every_builtin_protocol_is_vouched_for_and_has_a_harness():
    for name in names():
        cls = load_protocol(name)
        assert cls.__dict__.get("reductions_vouched") is True, name
        assert len(cls.harness_configs()) >= 5 and cls.builtin_predicates, name
        kinds = set(cls.action_kinds())
        assert kinds and all("." in k for k in kinds)


@pytest.mark.parametrize("name, index, predicate", CASES)
def test_the_reductions_keep_every_verdict(name, index, predicate):
    cls = load_protocol(name)
    config = cls.harness_configs()[index]
    try:
        difference = compare(cls, config, predicate)
    except TooLarge as exc:
        pytest.skip(f"harness configuration {index + 1} of {name}: {exc}")
    assert difference is None, f"{name}, harness configuration {index + 1}, {predicate}: {difference}"
