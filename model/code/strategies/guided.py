"""The conformance check's strategy: a model schedule guides the code (conformance/check.py).
For the model step k by thread T of rank r, the code's T of rank r runs until the refinement
mapping's view of the code equals the model's state after the step; a model step that changes
nothing the mapping sees needs no code step, and the model's clock firing fires the rank's clock
in the code. It stops at the end of the schedule, or at the first divergence: the code changed
what the model step leaves alone, reached the model's place with other fields not as the model
has them and went on, or cannot get there (blocked, dead, or STEP_CAP steps). One execution."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from prefetch_check.model.code.pack import Unsupported
from prefetch_check.model.code.rt.decision import TERMINAL, Stop

STEP_CAP = 400  # code steps one model step may take
END = Stop(TERMINAL)


@dataclass
class Divergence:
    step: int  # 1-based model step
    action: str
    description: str
    site: str  # the code's file:line where it showed
    stack: list[str]
    fields: dict  # field -> {"model": ..., "code": ...}
    schedule: list[str]
    why: str

    def to_json(self) -> dict:
        return {k: _plain(v) for k, v in self.__dict__.items()}


@dataclass
class Replayed:
    matched: int  # model steps matched
    code_steps: int
    divergence: Optional[Divergence] = None
    not_modelled: str = ""


class ModelGuided:
    """Replays the model's `states`/`actions` (a path of `model`) on `run`, a conformance run of
    the world, comparing views through `kit` (the world's ConformanceKit); `out` is the answer."""

    exhaustive = False
    states = 0

    def __init__(self, model, states: list, actions: list, kit, run, roots: tuple[str, ...]):
        self.model, self.path, self.actions, self.kit, self.run, self.roots = model, states, actions, kit, run, roots
        self.protocol = model.protocol
        self.views = [kit.refinement.model_view(self.protocol, s) for s in states]
        self.threads = {m.name: m for m in run.baton.threads}
        self.out = Replayed(0, 0)
        self.k, self.running, self.count, self.stack, self.site = 0, None, 0, [], ""
        self.started, self.placed = False, None
        self.code_thread = kit.code_threads  # the model's thread letter -> the code's thread

    def describe(self) -> str:
        return f"a model schedule of {len(self.actions)} steps"

    def _diverge(self, why: str, cur: dict, target: dict, fields=None) -> Stop:
        k, actions, states = self.k, self.actions, self.path
        keys = fields if fields is not None else sorted(f for f in set(cur) | set(target) if cur.get(f) != target.get(f))
        self.out.divergence = Divergence(
            k + 1, actions[k].id, self.model.describe(states[k], actions[k], states[k + 1]), self.site, self.stack,
            {f: {"model": target.get(f, "-"), "code": cur.get(f, "-")} for f in keys},
            [a.id for a in actions[: k + 1]], why)
        return END

    def choose(self, decision):
        views, actions, out = self.views, self.actions, self.out
        cur = self.kit.refinement.code_view(self.protocol, self.run)
        if not self.started:
            self.started = True
            if cur != views[0]:
                self.k = -1
                out.divergence = Divergence(0, "", "the initial state", "", [], {
                    f: {"model": views[0].get(f, "-"), "code": cur.get(f, "-")}
                    for f in sorted(set(cur) | set(views[0])) if cur.get(f) != views[0].get(f)}, [], "initial states differ")
                return END
        if self.running is not None:
            stop = self._after_code_step(cur)
            if stop is not None:
                return stop
        while self.running is None:
            k = self.k
            if k == len(actions):
                return END
            a = actions[k]
            if views[k] == views[k + 1] and a.thread != "C":  # the model step changes nothing the mapping sees
                self.k += 1
                out.matched += 1
                continue
            if a.thread == "C":  # the model's timeout clock fires: so does the rank's clock in the code
                self.run.clock.fire(a.rank)
                if views[k] != views[k + 1]:  # the mapping leaves timed_out out: a clock step is the world's
                    out.not_modelled = (f"not modelled: model step {a.id} changes what the mapping sees "
                                        f"({', '.join(_changed(views[k], views[k + 1]))}) at conformance.replay")
                    return END
                self.k += 1
                out.matched += 1
                continue
            if a.thread not in self.code_thread:
                raise Unsupported(f"model step {a.id}: the executor has no thread {a.thread}")
            self.running, self.count, self.placed = self.threads[f"{self.code_thread[a.thread]}{a.rank}"], 0, None
        return self._code_step(cur)

    def _after_code_step(self, cur: dict) -> Optional[Stop]:
        """After a code step of the running thread: the model step done, or a divergence, or on."""
        k, views, actions = self.k, self.views, self.actions
        pre, target = views[k], views[k + 1]
        place = f"r{actions[k].rank}.{self.code_thread[actions[k].thread]}"
        if cur == target:
            self.running = None
            self.k += 1
            self.out.matched += 1
        elif self.placed is not None and cur.get(place) != target.get(place):
            # the thread reached the model's place after the step with other fields not as the
            # model has them, and went on: the divergence is what it left behind there
            cur, self.site, self.stack = self.placed
            return self._diverge("the code's step ends with fields the model's step does not leave", cur, target)
        else:
            if cur.get(place) == target.get(place) != pre.get(place) and self.placed is None:
                self.placed = (cur, self.site, self.stack)
            bad = sorted(f for f in set(pre) | set(target) | set(cur)
                         if pre.get(f) == target.get(f) and cur.get(f) != pre.get(f)
                         and not self.kit.in_transit(actions[k], f))
            if bad:
                return self._diverge("the code changed what this model step leaves alone", cur, target, bad)
        return None

    def _code_step(self, cur: dict):
        """The running thread's next step, or why it cannot take one."""
        m, out = self.running, self.out
        if m.status == "dead" and m.error and m.error[0].startswith("not modelled"):
            out.not_modelled = m.error[0]
            return END
        if m.status != "parked" or not m.point.enabled():
            where = f"{m.point.label} at {m.point.site}" if m.status == "parked" else m.status
            if m.status == "dead" and m.error:
                self.site, where = m.error[1], f"dead: {m.error[0]}"
            return self._diverge(f"the code's {m.name} cannot go on ({where}) before it reaches the model's step", cur,
                                 self.views[self.k + 1])
        self.count += 1
        if self.count > STEP_CAP:
            return self._diverge(f"the code's {m.name} took {STEP_CAP} steps without reaching the model's step", cur,
                                 self.views[self.k + 1])
        self.site, self.stack = m.point.site, _stack(m, self.roots)
        out.code_steps += 1
        return m.name

    # one execution: the search loop's side of the strategy
    def more(self) -> bool:
        return not self.started

    def start(self) -> None:
        pass

    def finish(self, outcome) -> None:
        pass


def _changed(a: dict, b: dict) -> list[str]:
    return sorted(f for f in set(a) | set(b) if a.get(f) != b.get(f))


def _stack(m, roots) -> list[str]:
    """The tree's frames of a parked thread, innermost first: file:line (function)."""
    out, frame = [], m.thread.gr_frame if m.thread is not None else None
    while frame is not None:
        name = frame.f_code.co_filename
        for root in roots:
            if name.startswith(root):
                out.append(f"{name[len(root):].lstrip('/')}:{frame.f_lineno} ({frame.f_code.co_name})")
        frame = frame.f_back
    return out


def _plain(v):
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    if isinstance(v, dict):
        return {k: _plain(x) for k, x in v.items()}
    return v
