"""The ack-drain case list of `prefetch-check sglang` (mappings/ack_drain/mapping.py): every case
runs something no other case runs, and the cases of two ranks or more search under the round gate
without the MIN assumption, but the ones named with their reason (issue 31)."""

from __future__ import annotations

from prefetch_check.sglang.mappings.ack_drain.mapping import AGREED_GATE, CASES


def test_no_two_cases_share_a_name_or_a_configuration():
    """Two cases of one configuration would run the same search twice under two names (as the gate
    "any" made of the 2-rank load-back case that had its own "any" twin). The 2-rank reset's two
    cases share one, each judging what its tree's join does (their skips split the trees)."""
    assert len({case.name for case in CASES}) == len(CASES)
    seen: dict[str, str] = {}
    for case in CASES:
        key = repr(sorted(case.config.to_json().items())) + repr(case.judges)
        assert key not in seen, (case.name, seen.get(key))
        seen[key] = case.name


def test_two_ranks_search_without_the_min_assumption_but_where_named():
    agreed = {case.name for case in CASES if case.config.ranks > 1 and case.config.gate() == "agreed"}
    assert agreed == set(AGREED_GATE)
    assert all(why for why in AGREED_GATE.values())
    assert any(case.config.pp_size > 1 and case.config.round_gate == "any" for case in CASES)
    assert all(case.config.round_gate == "auto" for case in CASES if case.config.ranks == 1)
