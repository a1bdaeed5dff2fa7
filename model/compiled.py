"""The protocol compiled for the search's hot path: a state is a tuple of R small ints.

`PrefetchProtocol` stays the readable specification. This wrapper interns every
rank's tuple to an int code and caches each rank's own steps per (rank class, code):
a rank's steps read only its own tuple (collectives complete in a separate half, see
`model/collectives.py`), so a global successor costs a cache hit, one tuple rebuild
and, after an arrival, a completion check. Properties, descriptions and fields decode
the state and ask the specification, so every answer is the specification's.

A code is `nonS_id << 20 | S_id` (the rank's fields other than the scheduler's, then the
scheduler's): two tables of distinct parts instead of one of whole ranks. Symmetry sorts
ranks by their contents, where the scheduler's fields come last, as the fairness
argument of `model/symmetry.py` needs.

Memory: a stored state is a tuple of R ints (56 + 8 R bytes; the small ints are
shared) plus its visited-set entry; the per-rank tuples live once in the intern tables.
"""

from __future__ import annotations

from bisect import bisect_left

from prefetch_check.explorer.interface import ALWAYS, ALWAYS_STEP, EVENTUALLY, Property
from prefetch_check.model.actions import THREADS, Action
from prefetch_check.model.collectives import PREFETCH, SCHEDULER, completion
from prefetch_check.model.protocol import PrefetchProtocol
from prefetch_check.model.properties import summarize
from prefetch_check.model.reduction import closure_ranks, solo_priority, waits_of
from prefetch_check.model.state import S_DRAIN, WAITING, Rank
from prefetch_check.model.symmetry import rank_classes

_S_BITS = 20
_S_MASK = (1 << _S_BITS) - 1
_SPLIT = Rank._fields.index("s_coll")  # scheduler fields come last in Rank

_SENTINEL = Rank(
    p_pc=-1, i_pc=(), prefetch_queue=(), prefetch_buffer=(), revoke_queue=(), release_queue=0,
    p_coll=(), ops=(), s_coll=(), s_pc=(S_DRAIN, 0),
)


class CompiledProtocol:
    """The explorer model over compact states, equivalent step for step to `spec`."""

    def __init__(self, spec: PrefetchProtocol):
        self.spec = spec
        self.config = spec.config
        self.ranks = spec.config.ranks
        cls_of = {}
        for c, members in enumerate(rank_classes(spec.config)):
            for r in members:
                cls_of[r] = c
        self._cls = tuple(cls_of[r] for r in range(self.ranks))
        self._front: dict = {}
        self._back: dict = {}
        self.rank_of: dict = {}  # code -> Rank
        self._code_of: dict = {}  # Rank -> code
        self._by_class: dict = {}  # (rank class, code) -> [(thread, step, q, new code, arrival group)]
        # rank -> code -> (steps [(Action, new code, arrival group)], bitmask of the actors with a step
        #                  (bit i: actors()[i]), the rank's solo step or None, reduction signature)
        self._local: list = [{} for _ in range(self.ranks)]
        self._signatures: dict = {}  # (number of steps, collectives waited in) -> small int
        self._closures: dict = {}  # ranks' signatures -> the ranks `closure_ranks` chooses
        self._actions: dict = {}
        self._regs: dict = {}  # code -> (s_coll, p_coll)
        self._with_done: dict = {}  # (code, group, DONE register) -> code of the rank after completion
        self._completions: dict = {}  # registers of every rank, all arrived -> the DONE register
        self._waits: dict = {}  # code -> collectives the rank waits in (for the reduction)
        self._views: dict = {}  # code -> RankView (what the state properties read of a rank)
        self._view_id: dict = {}  # code -> small int naming its RankView (equal views, equal ids)
        self._view_ids: dict = {}  # RankView -> small int
        self._order: dict = {}  # code -> int that sorts like the Rank contents (see _place_in_content_order)
        self._ordered_ranks: list = []  # every Rank, in content order
        self._ordered_codes: list = []  # their codes, in the same order
        self._fakes = [tuple(_SENTINEL for _ in range(self.ranks))] * self.ranks
        self._last_state, self._last_key = None, None
        self._properties = [self._wrap(p) for p in spec.properties()]
        self._commutes: dict = {}  # (code, request) -> whether that increment commutes (see below)
        self._steady = self._requests_without_interrupts()
        if all(p.kind not in (ALWAYS, EVENTUALLY) or p.name in getattr(spec, "view_checks", {}) for p in spec.properties()):
            # every state property reads the ranks' views only: their ids decide every answer
            view_of = self._view_id.__getitem__
            self.property_key = lambda cs: tuple(map(view_of, cs))

    # ---- encoding ----

    def encode_rank(self, rank: Rank) -> int:
        code = self._code_of.get(rank)
        if code is None:
            front, back = rank[:_SPLIT], rank[_SPLIT:]
            f = self._front.setdefault(front, len(self._front))
            b = self._back.setdefault(back, len(self._back))
            assert b <= _S_MASK, "too many scheduler states for the code layout"
            code = (f << _S_BITS) | b
            self._code_of[rank] = code
            self.rank_of[code] = rank
            self._regs[code] = (rank.s_coll, rank.p_coll)
            self._waits[code] = waits_of(rank.s_coll, rank.p_coll)
            view = self._views[code] = summarize(rank)
            self._view_id[code] = self._view_ids.setdefault(view, len(self._view_ids))
            self._place_in_content_order(code, rank)
        return code

    _ORDER_GAP = 1 << 32

    def _place_in_content_order(self, code: int, rank: Rank) -> None:
        """Give the new code an int in `_order` that sorts like the Rank contents (what the
        symmetry reduction sorts ranks by): comparing ints is cheaper than comparing nested
        tuples. Ints are spread with gaps; when a gap is used up, every code is renumbered in
        the same order (so no representative ever changes)."""
        ranks, codes = self._ordered_ranks, self._ordered_codes
        i = bisect_left(ranks, rank)
        order = self._order
        low = order[codes[i - 1]] if i else 0
        high = order[codes[i]] if i < len(codes) else low + 2 * self._ORDER_GAP
        ranks.insert(i, rank)
        codes.insert(i, code)
        if high - low >= 2:
            order[code] = (low + high) // 2
        else:
            for j, c in enumerate(codes):
                order[c] = (j + 1) * self._ORDER_GAP

    def encode(self, state) -> tuple:
        return tuple(self.encode_rank(rank) for rank in state)

    def decode(self, cstate) -> tuple:
        rank_of = self.rank_of
        return tuple(rank_of[c] for c in cstate)

    # ---- explorer interface ----

    def initial_states(self):
        return [self.encode(s) for s in self.spec.initial_states()]

    def successors(self, cstate) -> list:
        out = []
        local = self._local
        for r in range(self.ranks):
            code = cstate[r]
            entry = local[r].get(code)
            if entry is None:
                entry = self._compile(r, code)
            head, tail = cstate[:r], cstate[r + 1 :]
            for action, new_code, group in entry[0]:
                nxt = head + (new_code,) + tail
                out.append((action, nxt if group is None else self._complete(nxt, group)))
        return out

    def _apply(self, cstate: tuple, r: int, new_code: int, group) -> tuple:
        nxt = cstate[:r] + (new_code,) + cstate[r + 1 :]
        return nxt if group is None else self._complete(nxt, group)

    def reduced_successors(self, cstate) -> tuple[list, int]:
        """The partial-order reduction (`model/reduction.py`) without building the successors
        it drops: the chosen (action, next state) pairs and the bitmask of every enabled actor
        (for fairness and deadlocks). The lowest rank with a solo step takes it alone;
        otherwise the steps of the cheapest rank closure."""
        local = self._local
        enabled = 0
        entries = []
        solo = None
        for r in range(self.ranks):
            code = cstate[r]
            entry = local[r].get(code)
            if entry is None:
                entry = self._compile(r, code)
            enabled |= entry[1]
            if solo is None and entry[2] is not None:
                solo = (r, entry[2])
            entries.append(entry)
        if solo is not None:
            r, (action, new_code, group) = solo
            return [(action, self._apply(cstate, r, new_code, group))], enabled
        signature = tuple([e[3] for e in entries])
        chosen = self._closures.get(signature, False)
        if chosen is False:
            chosen = self._closures[signature] = closure_ranks(
                [len(e[0]) for e in entries], [self._waits[c] for c in cstate]
            )
        out = []
        for r in range(self.ranks):
            if chosen is None or r in chosen:
                for action, new_code, group in entries[r][0]:
                    out.append((action, self._apply(cstate, r, new_code, group)))
        return out, enabled

    def actors(self) -> list:
        """Every actor in the order of the enabled bitmasks: (rank, thread) by rank, then thread."""
        return [(r, t) for r in range(self.ranks) for t in THREADS]

    def _compile(self, r: int, code: int) -> tuple:
        """Rank r's own steps from this code: run the specification's steps once (per rank
        class, on a state where only r is real), then cache them with r's Action objects,
        the actors that have a step, the rank's solo step (the one of lowest
        `solo_priority`, if any) and what the closure choice reads of the rank."""
        by_class = self._by_class.get((self._cls[r], code))
        if by_class is None:
            by_class = self._by_class[(self._cls[r], code)] = self._run_spec(r, code)
        steps = []
        mask = 0
        solo, best = None, None
        for thread, step, q, new_code, group in by_class:
            key = (r, thread, step, q)
            action = self._actions.get(key)
            if action is None:
                action = self._actions[key] = Action(r, thread, step, q)
            steps.append((action, new_code, group))
            mask |= 1 << (r * len(THREADS) + THREADS.index(thread))
            priority = solo_priority(action, self.increment_commutes(code, action))
            if priority is not None and (best is None or priority < best):
                solo, best = steps[-1], priority
        signature = self._signatures.setdefault((len(steps), self._waits[code]), len(self._signatures))
        entry = self._local[r][code] = (steps, mask, solo, signature)
        return entry

    def _run_spec(self, r: int, code: int) -> list:
        rank = self.rank_of[code]
        fake = self._fakes[r][:r] + (rank,) + self._fakes[r][r + 1 :]
        spec = self.spec
        found = spec.scheduler_steps(fake, r) + spec.prefetch_steps(fake, r) + spec.io_steps(fake, r) + spec.clock_steps(fake, r)
        steps = []
        for action, t in found:
            assert all(t[x] is _SENTINEL for x in range(self.ranks) if x != r), f"{action.id} reads or writes another rank"
            new = t[r]
            group = None
            for g in (SCHEDULER, PREFETCH):
                reg = getattr(new, g)
                if reg and reg[1] == WAITING and reg != getattr(rank, g) and self.ranks > 1:
                    group = g
            steps.append((action.thread, action.step, action.q, self.encode_rank(new), group))
        return steps

    def _complete(self, cstate: tuple, group: str) -> tuple:
        g = 0 if group == SCHEDULER else 1
        regs = self._regs
        first = regs[cstate[0]][g]
        if not first or first[1] != WAITING:
            return cstate
        key = first[:2]
        for c in cstate:
            if regs[c][g][:2] != key:
                return cstate  # somebody has not arrived yet: the common case
        arrived = tuple([regs[c][g] for c in cstate])
        done = self._completions.get(arrived)
        if done is None:
            done = self._completions[arrived] = completion(arrived)
        cache = self._with_done
        out = []
        for c in cstate:
            k = (c, g, done)
            new = cache.get(k)
            if new is None:
                new = cache[k] = self.encode_rank(self.rank_of[c]._replace(**{group: done}))
            out.append(new)
        return tuple(out)

    def properties(self):
        return self._properties

    def _wrap(self, prop: Property) -> Property:
        """Judge on compact states: state properties over cached per-rank views, step
        properties only on the steps they concern, anything else on the decoded state."""
        check, decode, views = prop.check, self.decode, self._views
        if prop.check is None:
            return prop
        view_check = getattr(self.spec, "view_checks", {}).get(prop.name)
        if prop.kind in (ALWAYS, EVENTUALLY) and view_check is not None:
            # many states share their ranks' views: judge each combination of views once
            known: dict = {}
            key_of = self._view_key

            def wrapped(cs):
                key = key_of(cs)
                if key in known:
                    return known[key]
                reason = known[key] = view_check([views[c] for c in cs])
                return reason
        elif prop.kind in (ALWAYS, EVENTUALLY):
            wrapped = lambda cs: check(decode(cs))  # noqa: E731
        elif prop.kind == ALWAYS_STEP and prop.name in getattr(self.spec, "rank_step_checks", {}):
            # it reads the acting rank only: judge each (rank tuple, action) once
            rank_check, rank_of, answers = self.spec.rank_step_checks[prop.name], self.rank_of, {}

            def wrapped(cs, a, ct):
                key = (cs[a.rank], a)
                if key in answers:
                    return answers[key]
                reason = answers[key] = rank_check(rank_of[key[0]], a)
                return reason
        elif prop.kind == ALWAYS_STEP:
            wrapped = lambda cs, a, ct: check(decode(cs), a, decode(ct))  # noqa: E731
        else:
            return prop
        return Property(prop.name, prop.kind, wrapped, prop.description, prop.not_applicable, prop.concerns)

    def _view_key(self, cs) -> tuple:
        """The ranks' view ids of a state (kept for the last state: every property asks)."""
        if cs is not self._last_state:
            self._last_key = tuple(map(self._view_id.__getitem__, cs))
            self._last_state = cs
        return self._last_key

    def actor(self, action):
        return action.actor

    def action_id(self, action) -> str:
        return action.id

    def action_kind(self, action) -> str:
        return action.kind

    def action_kinds(self):
        return self.spec.action_kinds()

    def describe(self, cstate, action, cnext) -> str:
        return self.spec.describe(self.decode(cstate), action, self.decode(cnext))

    def fields(self, cstate) -> dict:
        return self.spec.fields(self.decode(cstate))

    def _requests_without_interrupts(self) -> frozenset:
        """Requests whose wait can only end by completion: policy wait_complete (no clock) and no
        page of theirs fails to load on any rank (nobody marks them terminated before insert)."""
        if self.config.policy != "wait_complete":
            return frozenset()
        return frozenset(q for q, spec in enumerate(self.config.requests) if not any(spec.failing))

    def increment_commutes(self, code: int, action) -> bool:
        """Whether this I.increment is a persistent set on its own: it commutes with every step
        any thread can take before it. Only the scheduler of its rank reads `completed_tokens`:
        - `check` reads it through the predicate: here the predicate says "wait" both before
          and after the increment, so the vote, and the state after both steps, are the same;
        - `terminate` (and `insert` after it) read it, but cannot come first: this rank votes
          "wait", no clock can fire (wait_complete), and no load of this request fails on any
          rank, so no rank can be terminated and the MAX collective cannot say "accept".
        The counter is read by no property. Steps of other ranks touch nothing of this rank.
        `code` is the rank's code in the state."""
        if action.thread != "I" or action.step != "increment" or action.q not in self._steady:
            return False
        key = (code, action.q)
        known = self._commutes.get(key)
        if known is None:
            op = self.rank_of[key[0]].ops[action.q]
            decide = self.spec.decide_op
            known = not op.terminated and not decide(op) and not decide(op._replace(completed=op.completed + 1))
            self._commutes[key] = known
        return known

    def canonicalizer(self):
        """Symmetry on codes: sort each class of interchangeable ranks by the ranks' contents.

        Sorting by content (not by code, which numbers ranks in discovery order) keeps the
        representative, and so every count, independent of the order steps are listed in.
        The sort key is an int kept in content order (`_place_in_content_order`).
        """
        classes = [c for c in rank_classes(self.config) if len(c) > 1]
        if not classes:
            return None
        key = self._order.__getitem__
        if len(classes) == 1 and len(classes[0]) == self.ranks:
            return lambda cs: tuple(sorted(cs, key=key))

        def canonical(cs):
            out = list(cs)
            for positions in classes:
                for pos, code in zip(positions, sorted((cs[p] for p in positions), key=key)):
                    out[pos] = code
            return tuple(out)

        return canonical
