"""A protocol's declared properties as explorer properties, on readable or on compiled states.

Each declared property says what it reads (`model/interface.py`): the ranks' views, or the
acting rank before a step. On compiled states that is what makes the search cheap: views
are computed once per distinct rank, each combination of views is judged once (the
explorer's `property_key`), and a step invariant once per (rank state, action).
"""

from __future__ import annotations

from prefetch_check.explorer.interface import ALWAYS, ALWAYS_STEP, EVENTUALLY, Property


def readable_properties(protocol) -> list[Property]:
    view = protocol.rank_view
    out = []
    for p in protocol.properties():
        check = p.check
        if p.kind in (ALWAYS, EVENTUALLY):
            check = lambda state, c=p.check: c([view(rank) for rank in state])  # noqa: E731
        elif p.kind == ALWAYS_STEP:
            check = _concerned(p)
            check = lambda state, action, nxt, c=check: c(state[action.rank], action)  # noqa: E731
        out.append(Property(p.name, p.kind, check, p.description, p.not_applicable, p.concerns))
    return out


def compiled_properties(protocol, model) -> list[Property]:
    """Properties over compact states; `model` offers `views` (code -> view), `view_key(cs)` and
    `rank_of` (code -> rank state)."""
    out = []
    for p in protocol.properties():
        check = p.check
        if p.kind in (ALWAYS, EVENTUALLY):
            check = _over_view_keys(p.check, model)
        elif p.kind == ALWAYS_STEP:
            check = _over_acting_rank(_concerned(p), model.rank_of)
        out.append(Property(p.name, p.kind, check, p.description, p.not_applicable, p.concerns))
    return out


def _concerned(p):
    """A step invariant's check that holds on the steps it does not concern."""
    if p.concerns is None:
        return p.check
    check, concerns = p.check, p.concerns
    return lambda rank, action: check(rank, action) if concerns(action) else None


def _over_view_keys(view_check, model):
    """Many states share their ranks' views: judge each combination of views once."""
    known: dict = {}
    views, key_of = model.views, model.view_key

    def judged(cs):
        key = key_of(cs)
        if key in known:
            return known[key]
        reason = known[key] = view_check([views[c] for c in cs])
        return reason

    return judged


def _over_acting_rank(rank_check, rank_of):
    """It reads the acting rank only: judge each (rank state, action) once."""
    answers: dict = {}

    def judged(cs, action, ct):
        key = (cs[action.rank], action)
        if key in answers:
            return answers[key]
        reason = answers[key] = rank_check(rank_of[key[0]], action)
        return reason

    return judged
