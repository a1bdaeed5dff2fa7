"""The child's caps as search bounds (model/code/rt/caps.py): a search that nears the CPU seconds
or the address space its child was given stops BOUNDED and says which, instead of the kernel
killing the child (or an allocation aborting it) with no verdicts at all."""

from __future__ import annotations

import resource

import pytest

from prefetch_check.model.code import CodeConfig, CodeLimits, check_tree
from prefetch_check.model.code.rt import caps
from test_code_executor import release


def test_a_search_past_the_childs_cpu_cap_ends_bounded_saying_so():
    """2x1 best_effort needs about 30 s of CPU (7,557 runs); a child of 4 CPU seconds stops short of
    its cap, with the verdicts it can give and the bound named."""
    result = check_tree(release("0.5.23"), CodeConfig(ranks=2, policy="best_effort"),
                        CodeLimits(max_seconds=120, child_cpu_seconds=4))
    assert not result.exhaustive and "the child's CPU cap of 4 s" in result.bound, result.bound
    assert 0 < result.runs < 7_557
    assert "VERIFIED" not in result.verdicts.values() and "BOUNDED" in result.verdicts.values()


def test_the_caps_are_reached_short_of_the_limit_and_not_before():
    cap = 100 << 20
    assert caps.reached(60, cap, cpu=1.0, memory=cap // 2) is None
    assert caps.reached(60, cap, cpu=58.0, memory=cap // 2) == ("cpu", 60)  # 5% of the cap before it
    assert caps.reached(900, cap, cpu=860.0, memory=0) is None and caps.reached(900, cap, cpu=871.0, memory=0)
    assert caps.reached(60, cap, cpu=1.0, memory=int(0.86 * cap)) == ("memory", cap)
    assert caps.reached(None, None, cpu=1e6, memory=1 << 40) is None  # in-process: no caps
    assert caps.address_space() > 0 and caps.cpu_seconds() > 0


def test_a_search_in_process_has_no_caps_of_the_child():
    """A test or script that runs a search in its own process, whose CPU seconds count all it did
    before, is not cut by the child's caps: the process has no RLIMIT_CPU or RLIMIT_AS of them."""
    if resource.getrlimit(resource.RLIMIT_CPU)[0] != resource.RLIM_INFINITY:
        pytest.skip("this process runs under a CPU limit of its own")
    assert caps.limits()[0] is None
