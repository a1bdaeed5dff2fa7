"""Counterexample minimization (explorer/minimize.py): a reduced counterexample whose search for a
shortest one was cut is shrunk to a 1-minimal schedule that still fails, on tiny generic models."""

from __future__ import annotations

from prefetch_check.explorer.minimize import first_failure as _first_failure
from prefetch_check.explorer.interface import always, always_step, deadlock_free
from prefetch_check.explorer.minimize import minimize
from prefetch_check.explorer.replay import replay


class Counters:
    """Two counters x and y (0..3), stepped by actors "x" and "y"; y can also jam at 2 (a deadlock)."""

    def initial_states(self):
        return [(0, 0)]

    def successors(self, state):
        x, y = state
        if y == 9:
            return []  # jammed
        out = []
        if x < 3:
            out.append(("x", (x + 1, y)))
        if y < 3:
            out.append(("y", (x, y + 1)))
        if y == 2:
            out.append(("jam", (x, 9)))
        return out

    def properties(self):
        return []

    def actor(self, action):
        return action

    def action_id(self, action):
        return action

    def describe(self, state, action, next_state):
        return f"{action}: {state} -> {next_state}"


def test_steps_that_do_not_matter_are_left_out():
    model = Counters()
    x_reaches_2 = always("x_small", lambda s: "x is 2" if s[0] == 2 else None)
    trace = replay(model, "y x y x")
    small = minimize(model, trace, _first_failure(x_reaches_2))
    assert small.schedule == "x x"
    assert x_reaches_2.check(small.final_state)


def test_the_path_is_cut_at_the_first_failure():
    model = Counters()
    x_reaches_1 = always("x_zero", lambda s: "x is 1" if s[0] >= 1 else None)
    small = minimize(model, replay(model, "y y x x"), _first_failure(x_reaches_1))
    assert small.schedule == "x"


def test_a_step_invariant_keeps_its_violating_step_last():
    model = Counters()
    no_y_after_x = always_step("order", lambda s, a, t: "y after x" if a == "y" and s[0] > 0 else None)
    small = minimize(model, replay(model, "y x x y"), _first_failure(no_y_after_x))
    assert small.schedule == "x y"


def test_a_deadlock_stays_a_deadlock_and_needed_steps_stay():
    model = Counters()
    small = minimize(model, replay(model, "x y x y jam"), _first_failure(deadlock_free("stuck"), model))
    assert small.schedule == "y y jam"  # jam needs y == 2
    assert not model.successors(small.final_state)


def test_a_trace_that_cannot_shrink_is_returned_as_it_is():
    model = Counters()
    x_reaches_2 = always("x_small", lambda s: "x is 2" if s[0] == 2 else None)
    trace = replay(model, "x x")
    assert minimize(model, trace, _first_failure(x_reaches_2)) is trace
