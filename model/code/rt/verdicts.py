"""The properties, judged on one run's stand-ins, under the ack-drain model's names. Each finding
carries what it means for a serving system. Faults the stand-ins saw while the run went on
(double free, unwritten page, mixed collectives) come first; a run that ended (no thread enabled)
is then judged for deadlock, progress, leaks, rank agreement and delivery."""

from __future__ import annotations

from dataclasses import dataclass

PROPERTIES = ("no_early_acceptance", "wait_complete_delivers", "tp_agreement", "host_memory", "data_integrity",
              "no_crash", "operation_identity", "progress", "deadlock_freedom")
NOT_JUDGED = {"operation_identity": "needs a re-issued request: CodeConfig(reissue=True)"}

CRASH = "a thread of the serving process died: the scheduler crashes or the rank stops prefetching"
HANG = "the request hangs: it is never admitted"
DEADLOCK = "the ranks wait for each other forever: every request on them hangs"
LEAK = "host memory leaked: the pool shrinks with every such request"
LOCKED = ("host pages locked for good: what they hold (a prefetch's anchor, a node stored or loaded back) can "
          "never be evicted from host")
UNLOCKED = ("host pages unlocked under their reader: evictable while a fetch anchored there, a backup's storage "
            "write or a load-back's copy still reads them")
LOST = "a prefetch lost: slower but correct output"
SPLIT = "ranks serve different prefixes of one request: divergent batches, a hang or wrong output"
SERVED_REUSED = "wrong KV data served: the tree serves a page whose host memory was reused"


@dataclass
class Finding:
    prop: str
    message: str
    consequence: str
    site: str
    step: int


def not_judged(config, world: dict[str, str]) -> dict[str, str]:
    """The properties a configuration cannot judge, with the reason: what no world judges there,
    and `world`, what its world cannot (its pack's `not_judged(config)`)."""
    out = {**NOT_JUDGED, **world}
    if config.reissue:
        out.pop("operation_identity")
    judged = config.judged_deliveries()
    if not judged:
        out["wait_complete_delivers"] = ("judged only under wait_complete with nothing disturbing the request "
                                         "(no short read, no storage exception, room in the host pool)")
    return out


def judge(run, terminal: bool) -> list[Finding]:
    out = [Finding(f.prop, f.message, f.consequence, f.site, f.step) for f in run.world.faults]
    steps = len(run.baton.steps)
    for m in run.baton.threads:
        if m.status == "dead":
            message, site, _ = m.error
            if message.startswith("not modelled:"):
                out.append(Finding("not_modelled", message, "the executor cannot judge this path", site, steps))
            else:
                out.append(Finding("no_crash", f"{m.name} (rank {m.rank} {m.role} thread) died: {message}", CRASH, site,
                                   m.died_at or steps))
    if terminal and not any(f.prop == "not_modelled" for f in out):  # a thread stopped by us proves nothing
        out.extend(_terminal(run, steps))
    return out


def _terminal(run, steps: int) -> list[Finding]:
    out = []
    cfg = run.config
    # deadlock_freedom as the model has it: no rank can step again. A scheduler blocked forever (in a
    # collective, a drain's get, a lock) or dead cannot; one parked at its round gate can always loop
    # on (SGLang's event loop does: the gate only skips rounds with nothing to drain). A storage
    # thread blocked forever hangs what it serves, which progress judges (issue 22: 0.5.20-0.5.21's
    # peer of a dead prefetch thread waits in its collective while both schedulers go on).
    for m in run.baton.threads:
        if m.status != "parked":
            continue
        label = m.point.label
        if label.startswith("all_reduce"):
            what = f"{m.name} waits forever in {label} at {m.point.site}: a peer never joins"
        elif label.startswith("get ") and m.role == "scheduler":
            what = f"{m.name} blocks forever in {label} at {m.point.site}"
        elif label.startswith("p2p "):
            what = f"{m.name} waits forever in {label} at {m.point.site}: the other stage never sends or receives"
        elif label.startswith("acquire"):
            what = f"{m.name} waits forever for a lock at {m.point.site}"
        elif label.startswith("join "):  # a join without a timeout (one with a timeout returns: threads.py)
            what = f"{m.name} waits forever in {label} at {m.point.site}: the thread never ends"
        else:
            continue
        if m.role == "scheduler":
            out.append(Finding("deadlock_freedom", what, DEADLOCK, m.point.site, steps))
        else:
            out.append(Finding("progress", f"{what}; every prefetch its {m.role} thread would serve after it waits too",
                               HANG, m.point.site, steps))
    schedulers = [m for m in run.baton.threads if m.role == "scheduler"]
    if all(m.status == "dead" for m in schedulers):
        out.append(Finding("deadlock_freedom", "every scheduler thread is dead: no rank can step again", DEADLOCK,
                           schedulers[0].error[1] if schedulers and schedulers[0].error else "", steps))
    for r in run.ranks:
        for q in r.waiting:
            out.append(Finding("progress", f"rank {r.index}: req{q} is never admitted", HANG, "", steps))
    if any(f.prop in ("deadlock_freedom", "progress") for f in out):
        return out
    for r in run.ranks:
        held = r.pool.held()
        if held:
            out.append(Finding("host_memory", f"rank {r.index}: host slots {held} still held by no one when every "
                               "thread is idle", LEAK, "", steps))
        # the anchor's host lock (inc_host_lock_ref / protect_host), or a storage backup's, never given
        # back, or given back more often than taken
        what = "the prefetch's anchor" + (" or a node backed up to storage" if getattr(cfg, "backup", False) else "") + (
            " or loaded back" if getattr(cfg, "load_back", False) else "")
        if r.tree.locks > 0:
            out.append(Finding("host_memory", f"rank {r.index}: {r.tree.locks} host lock(s) on {what} still held when "
                               "every thread is idle", LOCKED, "", steps))
        elif r.tree.locks < 0:
            out.append(Finding("host_memory", f"rank {r.index}: host locks on {what} given back {-r.tree.locks} more "
                               "time(s) than taken", UNLOCKED, "", steps))
        evicted = r.pool.evicted()
        if evicted:
            out.append(Finding("host_memory", f"rank {r.index}: host slots {evicted} evicted from the host tree and "
                               "never freed", LEAK, "", steps))
        if r.tree.host_only is not None:
            wrong = r.tree.host_only.audit()
            if wrong:
                out.append(Finding("data_integrity", f"rank {r.index}: {wrong}", SERVED_REUSED, "", steps))
        queued = r.cc.host_mem_release_queue.peek_size()
        if queued:
            out.append(Finding("host_memory", f"rank {r.index}: {queued} release-queue entries no drain will free "
                               "(a drain pops the MIN over the ranks)", LEAK, "", steps))
    judged = cfg.judged_deliveries()
    for q in range(cfg.requests):
        rounds = [r.admitted_round.get(q) for r in run.ranks]
        if len(set(rounds)) > 1:
            out.append(Finding("tp_agreement", f"req{q}: check_prefetch_progress admits it in rounds {rounds} on the "
                               "ranks (its rank_consensus wants the same result on every rank)", SPLIT, "", steps))
        got = [r.resolved.get(q) for r in run.ranks]
        if len(set(got)) > 1:
            out.append(Finding("tp_agreement", f"req{q}: the ranks' host trees hold {got} tokens at admission",
                               SPLIT, "", steps))
        agreed = min(cfg.agreed_pages_of(i) for i in range(cfg.ranks)) * cfg.page_size
        want = cfg.delivered_tokens(agreed)
        if q in judged:
            short = [(r.index, g) for r, g in zip(run.ranks, got) if g is not None and g < want]
            if short:
                room = f" (the host pool has room for {want})" if want < agreed else ""
                where = getattr(run, "HELD_WHERE", "in the host tree")  # buffer_only: on the device
                # with the tree's own file backend what the ranks agree on is its answer: judged against
                # what the storage held before the run
                held = "the storage held" if getattr(cfg, "storage", "") == "file" else "the ranks agreed on"
                out.append(Finding("wait_complete_delivers", f"req{q}: admitted with {short} (rank, tokens) {where}, "
                                   f"{held} {agreed}{room}", LOST, "", steps))
    return out
