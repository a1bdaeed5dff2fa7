"""What the predicate-poll world watches on the tree's own classes, installed after import so the
class bodies stay as written:

- the acceptance probe (no_early_acceptance, the poll model's property): `can_terminate_prefetch`
  runs as written; when its final answer (after the ranks' vote) accepts under wait_complete an
  operation whose page list is still empty, that the prefetch thread has not revoked and whose
  request no other rank has terminated (then the vote ended it, not this rank's predicate), the
  scheduler terminates a prefetch that has not started: a prefetch lost. Under timeout the same,
  before the deadline fires: while the rank's clock has not fired since the operation's issue.
(A field of the cache or the controller the world did not set: rt/unset_fields.py.)
"""

from __future__ import annotations

from prefetch_check.model.code.stand_ins.errors import caller_site

BEFORE = {"timeout": ", its deadline not yet fired"}
EARLY = "a prefetch lost: the scheduler accepts it before any page was listed, so nothing is loaded (slower, correct output)"


def install_acceptance(cache_cls, holder, revoked, expired, peer_terminated) -> None:
    """Wrap `cache_cls.can_terminate_prefetch`; `revoked(rank, request_id)` says whether the
    rank's prefetch thread has already revoked that request (its id waits on the revoke queue),
    `expired(rank, request_id)` whether the timeout policy's deadline for it may have passed,
    `peer_terminated(rank, request_id)` whether another rank's operation of it is terminated (the
    vote ends this rank's too: the model judges the rank's own predicate, before the vote)."""
    real = cache_cls.__dict__.get("can_terminate_prefetch")
    if real is None or getattr(cache_cls, "_pc_acceptance", False):
        return

    def probed(self, operation, *args, **kwargs):
        accepted = real(self, operation, *args, **kwargs)
        d = operation.__dict__
        policy = self.__dict__.get("prefetch_stop_policy")
        if accepted and policy in ("wait_complete", "timeout") and not d.get("hash_value"):
            world = holder.world
            me = world.baton.current()
            rank = me.rank if me is not None else 0
            rid = d.get("request_id")
            if not revoked(rank, rid) and not (policy == "timeout" and expired(rank, rid)) and not peer_terminated(rank, rid):
                world.fault("no_early_acceptance",
                            f"rank {rank} accepted {world.label(operation)} ({rid}) as complete while its hash_value "
                            f"was still empty (not yet published, not revoked{BEFORE.get(policy, '')})",
                            EARLY, caller_site(world.baton.roots))
        return accepted

    probed.__wrapped__ = real
    probed.__name__ = "can_terminate_prefetch"
    cache_cls.can_terminate_prefetch = probed
    cache_cls._pc_acceptance = True
