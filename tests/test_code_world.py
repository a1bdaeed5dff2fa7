"""The executor's stand-ins and baton on their own, in the checker's process (nothing of SGLang is
imported here): queues block, collectives rendezvous and reduce, mismatched collectives and
unknown callees are reported, the tensor and msgspec stand-ins behave as the path needs."""

from __future__ import annotations

import types

import pytest

from prefetch_check.model.code.rt import stubs
from prefetch_check.model.code.rt.baton import Baton
from prefetch_check.model.code.stand_ins.collectives import Collectives, Group
from prefetch_check.model.code.stand_ins.context import World
from prefetch_check.model.code.stand_ins.errors import NotModelled
from prefetch_check.model.code.stand_ins.msgspec_stub import Struct, field
from prefetch_check.model.code.stand_ins.queues import Queue
from prefetch_check.model.code.stand_ins.torch_stub import Tensor, cat, tensor


def drive(baton: Baton, schedule: list[str]) -> list[str]:
    """Run the baton along `schedule`, then first-enabled; the names that ran."""
    ran: list[str] = []

    def decide():
        enabled = [m for m in baton.enabled()]
        if not enabled:
            return None
        want = schedule[len(ran)] if len(ran) < len(schedule) else enabled[0].name
        m = next(m for m in enabled if m.name == want)
        ran.append(m.name)
        return m

    baton.run(decide)
    return ran


def test_a_get_on_an_empty_queue_is_not_enabled_and_a_put_enables_it():
    baton = Baton(roots=("/nowhere/",))
    world = World(baton)
    q = Queue(world, "q")
    got = []
    baton.spawn("C", 0, "consumer", lambda: got.append(q.get(block=True, timeout=1)))
    baton.spawn("P", 0, "producer", lambda: q.put(7))
    ran = drive(baton, ["C"])  # C starts, then parks at its get
    assert got == [7]
    assert ran.index("P") < len(ran) - 1 and ran[-1] == "C"  # the get ran only after the put
    baton.abandon()


def test_two_ranks_meet_in_an_all_reduce_and_both_leave_with_the_min():
    baton = Baton(roots=("/nowhere/",))
    world = World(baton)
    group = Group(world, "g", (0, 1))
    coll = Collectives(world, lambda: baton.current().rank)
    out = {}

    def rank(r, value):
        def body():
            t = tensor(value)
            coll.all_reduce(t, op="MIN", group=group)
            out[r] = t.item()
        return body

    baton.spawn("A0", 0, "sync", rank(0, 5))
    baton.spawn("A1", 1, "sync", rank(1, 3))
    drive(baton, [])
    assert out == {0: 3, 1: 3} and not world.faults
    baton.abandon()


def test_a_rank_alone_in_a_collective_is_left_waiting_and_different_calls_are_a_fault():
    baton = Baton(roots=("/nowhere/",))
    world = World(baton)
    group = Group(world, "g", (0, 1))
    coll = Collectives(world, lambda: baton.current().rank)
    baton.spawn("A0", 0, "sync", lambda: coll.all_reduce(tensor(1), op="MIN", group=group))
    baton.spawn("A1", 1, "sync", lambda: coll.all_reduce(tensor([1, 2]), op="MAX", group=group))
    drive(baton, [])
    assert [f.prop for f in world.faults] == ["tp_agreement"]
    assert "MAX" in world.faults[0].message or "MIN" in world.faults[0].message
    baton.abandon()
    lonely = Baton(roots=("/nowhere/",))
    w2 = World(lonely)
    g2 = Group(w2, "g", (0, 1))
    c2 = Collectives(w2, lambda: lonely.current().rank)
    lonely.spawn("A0", 0, "sync", lambda: c2.all_reduce(tensor(1), op="MIN", group=g2))
    drive(lonely, [])
    (m,) = lonely.threads
    assert m.status == "parked" and m.point.label.startswith("all_reduce(MIN) leave")
    lonely.abandon()


def test_an_unknown_name_of_a_stub_module_is_not_modelled_with_the_callers_site(tmp_path):
    root = str(tmp_path) + "/"
    mod = stubs.StubModule("sglang.srt.environ", {}, (root,))
    caller = tmp_path / "managers" / "cache_controller.py"
    caller.parent.mkdir()
    caller.write_text("def f(envs):\n    return envs.SGLANG_X.get()\n")
    namespace: dict = {}
    exec(compile(caller.read_text(), str(caller), "exec"), namespace)
    with pytest.raises(NotModelled) as err:
        namespace["f"](mod.envs)
    assert str(err.value) == "not modelled: sglang.srt.environ.envs.SGLANG_X.get at managers/cache_controller.py:2"
    assert not issubclass(NotModelled, Exception)  # the path's own `except Exception` cannot swallow it


def test_a_stand_in_module_answers_unknown_names_but_not_pythons_own(tmp_path):
    """torch, threading and time answer an unknown name with a placeholder; a dunder (`__file__`,
    `__path__`) stays missing, as on a stub module, so a tool that walks sys.modules in the
    process that built them (hypothesis's constant scan) never gets a placeholder for a path."""
    from prefetch_check.model.code.stand_ins.clock import make_time
    from prefetch_check.model.code.stand_ins.torch_stub import make_torch

    not_modelled = stubs.not_modelled_factory((str(tmp_path) + "/",))
    ops = types.SimpleNamespace(**dict.fromkeys(
        ("all_reduce", "get_world_size", "get_rank", "barrier", "get_process_group_ranks", "isend", "recv")))
    torch = make_torch(ops, not_modelled)
    time_mod = make_time(not_modelled)
    for module in (torch, torch.distributed, time_mod):
        assert getattr(module, "__file__", None) is None and getattr(module, "__path__", None) is None
    assert torch.cuda.__name__ == "cuda" and isinstance(time_mod.sleep, type)
    with pytest.raises(NotModelled, match="not modelled: torch.cuda"):
        torch.cuda()
    with pytest.raises(NotModelled, match="not modelled: torch.cuda"):  # iterated: not modelled, not a hang
        3 in torch.cuda


def test_the_tensor_and_msgspec_stand_ins_do_what_the_path_asks():
    t = Tensor([4, 5, 6, 7])
    assert [p.tolist() for p in t.split(2)] == [[4, 5], [6, 7]]
    assert cat([t[:1], t[3:]]).tolist() == [4, 7] and len(t[1:3]) == 2 and t.numel() == 4
    assert tensor(3).item() == 3 and tensor([1, 2]).tolist() == [1, 2] and t[2].item() == 6

    class Timer(Struct):
        started_at: int = None

    class Wait(Struct):
        timer: Timer = field(default_factory=Timer)
        timeout_s: float = 0.0

    a, b = Wait(), Wait(timeout_s=2.0)
    assert a.timer is not b.timer and b.timeout_s == 2.0 and a.timer.started_at is None


def test_host_eviction_takes_unlocked_leaves_and_the_pool_and_tree_judge_what_is_freed():
    """The host-pressure stand-ins (host_held.py, host_pool.py, tree.py): eviction stops at a page
    locked outside the run or under the code's own host lock; an evicted slot is the cache's to
    free (never freed: a leak at the end); a slot the tree still holds freed is a fault at once
    and wrong data at the end; a misaligned alloc is the caller's crash."""
    from prefetch_check.model.code.stand_ins.host_held import HostHeldPages
    from prefetch_check.model.code.stand_ins.host_pool import HostPool, NotWholePages
    from prefetch_check.model.code.stand_ins.tree import TreeCore

    world = World(Baton(()))
    pool = HostPool(world, 0, 4, 1)
    held = HostHeldPages(world, 0, pool, 1, pages=3, locked=1, request=1)
    tree = TreeCore(world, 0, pool, 1, held)
    tree.inc_host_lock_ref(held.deepest() - 1)  # the code's own lock on the middle page and the first
    result = tree.drive_host_eviction("FULL", 3)
    assert [v.data for v in result.host_frees["FULL"]] == [[2]] and result.tracker == {"FULL": 1}
    assert pool.evicted() == [2] and held.was_evicted(held.deepest() + 1) and not held.audit()
    tree.dec_host_lock_ref(held.deepest())
    assert tree.drive_host_eviction("FULL", 3).tracker == {"FULL": 1}  # the middle page; the first stays locked
    pool.free(Tensor([2]))
    assert pool.evicted() == [1] and not world.faults
    pool.free(Tensor([0]))  # the first page, which the tree still holds
    assert [f.prop for f in world.faults] == ["host_memory"] and "q1p0" in held.audit()
    with pytest.raises(NotWholePages):  # a WorldFault: the caller's crash, not a stand-in bug
        HostPool(world, 0, 4, 2).alloc(3)
