"""A protocol compiled for the search's hot path: a state is a tuple of R small ints.

Every rank state is interned to an int code, and each rank's own steps are cached per
(rank class, code): a rank's steps read only its own state (collectives complete here, in
a separate half), so a global successor costs a cache hit, one tuple rebuild and, after an
arrival, a completion check. Properties are judged over cached per-rank views; traces and
viewers decode the codes and ask the protocol, so every answer is the protocol's own.
`readable.py` is the same model without any of this, and the tests hold the two equal.

Memory: a stored state is a tuple of R ints (56 + 8 R bytes; the small ints are shared)
plus its visited-set entry; each distinct rank state lives once in the intern table.
"""

from __future__ import annotations

from prefetch_check.model.engine.base import ProtocolModel
from prefetch_check.model.engine.codec import CodeCodec
from prefetch_check.model.engine.collectives import arrived, completion, groups_of, waits_of
from prefetch_check.model.engine.properties import compiled_properties
from prefetch_check.model.engine.reduction import closure_ranks
from prefetch_check.model.engine.symmetry import ContentOrder, canonicalizer
from prefetch_check.model.interface import WAITING, Action


class CompiledModel(ProtocolModel):
    """The explorer model over compact states, equivalent step for step to `ReadableModel`."""

    def __init__(self, protocol):
        self.ranks = protocol.ranks
        self.groups = groups_of(protocol)
        self._threads = tuple(t.letter for t in protocol.threads)
        self._classes = protocol.rank_classes()
        cls_of = {r: c for c, members in enumerate(self._classes) for r in members}
        self._cls = tuple(cls_of[r] for r in range(self.ranks))
        self.rank_of: list = []  # code -> rank state
        self._code_of: dict = {}  # rank state -> code
        self._regs: list = []  # code -> the registers of every group
        self._waits: list = []  # code -> collectives the rank waits in (for the reduction)
        self.views: list = []  # code -> the rank's view (what the properties read)
        self._view_id: list = []  # code -> small int naming its view (equal views, equal ids)
        self._view_ids: dict = {}  # view -> small int
        self._order = ContentOrder()
        self._by_class: dict = {}  # (rank class, code) -> [(thread, step, q, new code, group index)]
        # rank -> code -> (steps [(Action, new code, group index of an arrival or None)], bitmask of
        #                  the actors with a step (bit i: actors()[i]), the rank's solo step or None,
        #                  reduction signature, the steps the reduction explores: all but those the
        #                  protocol may postpone, `RankProtocol.postponable`)
        self._local: list = [{} for _ in range(self.ranks)]
        self._signatures: dict = {}  # (number of steps, collectives waited in) -> small int
        self._closures: dict = {}  # ranks' signatures -> the ranks `closure_ranks` chooses
        self._actions: dict = {}
        self._with_done: dict = {}  # (code, group index, DONE register) -> code after completion
        self._completions: dict = {}  # registers of every rank, all arrived -> the DONE register
        self._settled: dict = {}  # code -> protocol.rank_settled
        self._last_state, self._last_key = None, None
        super().__init__(protocol, compiled_properties(protocol, self))

    # ---- encoding ----

    def encode_rank(self, rank: tuple) -> int:
        code = self._code_of.get(rank)
        if code is None:
            code = self._code_of[rank] = len(self.rank_of)
            self.rank_of.append(rank)
            regs = tuple(getattr(rank, g) for g in self.groups)
            self._regs.append(regs)
            self._waits.append(waits_of(regs))
            view = self.protocol.rank_view(rank)
            self.views.append(view)
            self._view_id.append(self._view_ids.setdefault(view, len(self._view_ids)))
            self._order.place(code, rank)
        return code

    def encode(self, state) -> tuple:
        return tuple(self.encode_rank(rank) for rank in state)

    def decode(self, cstate) -> tuple:
        rank_of = self.rank_of
        return tuple(rank_of[c] for c in cstate)

    # ---- explorer interface ----

    def initial_states(self):
        p = self.protocol
        return [self.encode(tuple(p.initial_rank(r) for r in range(self.ranks)))]

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
        """The partial-order reduction (`reduction.py`) without building the successors it
        drops: the chosen (action, next state) pairs and the bitmask of every enabled actor
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
            waits = self._waits
            chosen = self._closures[signature] = closure_ranks([len(e[4]) for e in entries], [waits[c] for c in cstate])
        out = []
        for r in range(self.ranks):
            if chosen is None or r in chosen:
                for action, new_code, group in entries[r][4]:
                    out.append((action, self._apply(cstate, r, new_code, group)))
        if not out and enabled:  # only postponed steps are left: they are explored, never dropped
            for r in range(self.ranks):
                for action, new_code, group in entries[r][0]:
                    out.append((action, self._apply(cstate, r, new_code, group)))
        return out, enabled

    def actors(self) -> list:
        """Every actor in the order of the enabled bitmasks: (rank, thread) by rank, then thread."""
        return [(r, t) for r in range(self.ranks) for t in self._threads]

    def _compile(self, r: int, code: int) -> tuple:
        """Rank r's own steps from this code: ask the protocol once per rank class, then cache
        them with r's Action objects, the actors that have a step, the rank's solo step (the one
        of lowest `solo_priority`, if any) and what the closure choice reads of the rank."""
        by_class = self._by_class.get((self._cls[r], code))
        if by_class is None:
            by_class = self._by_class[(self._cls[r], code)] = self._rank_steps(r, code)
        rank = self.rank_of[code]
        threads = self._threads
        steps = []
        explored = []
        mask = 0
        solo, best = None, None
        for thread, step, q, new_code, group in by_class:
            key = (r, thread, step, q)
            action = self._actions.get(key)
            if action is None:
                action = self._actions[key] = Action(r, thread, step, q)
            steps.append((action, new_code, group))
            mask |= 1 << (r * len(threads) + threads.index(thread))
            priority = self.protocol.solo_priority(rank, action)
            if priority is not None and (best is None or priority < best):
                solo, best = steps[-1], priority
            if not self.protocol.postponable(rank, action):
                explored.append(steps[-1])
        signature = self._signatures.setdefault((len(explored), self._waits[code]), len(self._signatures))
        entry = self._local[r][code] = (steps, mask, solo, signature, explored)
        return entry

    def _rank_steps(self, r: int, code: int) -> list:
        p = self.protocol
        out = []
        for step in p.rank_steps(r, self.rank_of[code]):
            group = None
            new = step.rank
            if step.arrive is not None:
                tag, value = step.arrive
                new = arrived(p, new, tag, value)
                if self.ranks > 1:
                    group = self.groups.index(p.collectives[tag[0]].group)
            out.append((step.thread, step.name, step.q, self.encode_rank(new), group))
        return out

    def _complete(self, cstate: tuple, g: int) -> tuple:
        regs = self._regs
        first = regs[cstate[0]][g]
        if not first or first[1] != WAITING:
            return cstate
        key = first[:2]
        for c in cstate:
            if regs[c][g][:2] != key:
                return cstate  # somebody has not arrived yet: the common case
        arrived_regs = tuple([regs[c][g] for c in cstate])
        done = self._completions.get(arrived_regs)
        if done is None:
            done = self._completions[arrived_regs] = completion(self.protocol, arrived_regs)
        cache = self._with_done
        group = self.groups[g]
        out = []
        for c in cstate:
            k = (c, g, done)
            new = cache.get(k)
            if new is None:
                new = cache[k] = self.encode_rank(self.rank_of[c]._replace(**{group: done}))
            out.append(new)
        return tuple(out)

    def property_key(self, cs) -> tuple:
        """The ranks' view ids: every state property reads the views only, so equal keys, equal answers."""
        return self.view_key(cs)

    def view_key(self, cs) -> tuple:
        """The ranks' view ids of a state (kept for the last state: every property asks)."""
        if cs is not self._last_state:
            self._last_key = tuple(map(self._view_id.__getitem__, cs))
            self._last_state = cs
        return self._last_key

    def describe(self, cstate, action, cnext) -> str:
        return self.protocol.describe(self.rank_of[cstate[action.rank]], self.rank_of[cnext[action.rank]], action)

    def fields(self, cstate) -> dict:
        return self.protocol.fields(self.decode(cstate))

    def settled(self, cstate) -> bool:
        known = self._settled
        for code in cstate:
            answer = known.get(code)
            if answer is None:
                answer = known[code] = self.protocol.rank_settled(self.rank_of[code])
            if not answer:
                return False
        return True

    def state_codec(self):
        """How states cross between the processes of a parallel search (`codec.py`)."""
        return CodeCodec(self)

    def canonicalizer(self):
        """Rank symmetry on codes (`symmetry.py`), or None when no two ranks are alike."""
        return canonicalizer(self._classes, self.ranks, self._order)
