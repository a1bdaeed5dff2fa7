"""What a violated property costs a serving system, in one line a maintainer acts on.

Read from the property and, where the property covers harms of different weight, from the
counterexample's reason (its last state): a slot given back twice or leaked, a scheduler or a
storage thread that died, ranks in different collectives or holding different pages. The
kinds, worst first: wrong KV data served, host memory freed twice or leaked, scheduler crash,
request hangs, a prefetch lost (slower, output correct).
"""

from __future__ import annotations

WRONG_DATA = "wrong KV data served"
HANGS = "request hangs"
LOST = "a prefetch lost (slower, output correct)"


def consequence(prop: str, reason: str = "") -> str:
    """The consequence of a violation of `prop` whose counterexample ends with `reason`."""
    why = reason.lower()
    if prop == "data_integrity":
        return f"{WRONG_DATA}: a page goes into the cache before its data is written"
    if prop == "host_memory":
        if "twice" in why or "after it went to the tree" in why:
            return ("host memory freed twice: one slot can be handed to two requests, which then read each "
                    f"other's pages ({WRONG_DATA})")
        return "host memory leaked: host slots are never given back, the host cache shrinks for good"
    if prop == "no_crash":
        if "scheduler" in why:
            return "scheduler crash: the server stops serving"
        return "a storage thread dies: that rank stops prefetching and the requests waiting on it hang"
    if prop == "tp_agreement":
        if "collective" in why:
            return f"{HANGS}: the ranks wait in different collectives and the TP group stops serving"
        return f"{WRONG_DATA}: the ranks hold different pages of one request (or agree on another operation's ACKs)"
    if prop == "deadlock_freedom":
        return f"{HANGS}: every thread of every rank is blocked and the TP group stops serving"
    if prop == "progress":
        return f"{HANGS}: a prefetch is never resolved, so its request never runs"
    if prop == "no_early_acceptance":
        return f"{LOST}: the request goes on before its pages are published and loaded, and recomputes them"
    if prop == "wait_complete_delivers":
        return f"{LOST}: under wait_complete the request gets fewer of the agreed pages than it waited for"
    if prop == "operation_identity":
        return (f"{LOST}: a stale operation of a readmitted request revokes or resolves the newer prefetch "
                "(wrong data only where data_integrity fails too)")
    return f"{prop} does not hold"
