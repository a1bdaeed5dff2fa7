"""The operation_identity probe: a step of a stale operation must not act on a newer operation of
the same request. The cache methods that act on a request's ongoing entry are wrapped (they still
run as written); the operation acting is the one passed, or else the one the scheduler's drain last
took from the hit or ACK queue. Acting on an entry that holds another operation is the violation."""

from __future__ import annotations

from prefetch_check.model.code.stand_ins.errors import caller_site

ACTING = ("_handle_prefetch_result", "revoke_pending_prefetch", "_retire_ongoing_prefetch",
          "_revoke_pending_prefetch")  # HiRadixCache's (0.5.19-0.5.20)
DRAINED = (".prefetch_hit_queue", ".ack_prefetch_queue")
CONSEQUENCE = ("a late step of an old prefetch acts on the request's new one: a prefetch lost (slower "
               "but correct), or its host slots freed or inserted under the wrong operation")


def request_of(op):
    d = op.__dict__
    return d.get("handle", d.get("request_id"))


def operation_of(entry, op_cls):
    found = getattr(entry, "operation", None)
    if found is None and isinstance(entry, tuple):
        found = next((x for x in entry if isinstance(x, op_cls)), None)
    return found


def install(cache_cls, op_cls, holder) -> None:
    """Wrap the acting methods of `cache_cls` once (the probe reads `holder.world`)."""
    if getattr(cache_cls, "_pc_identity", False):
        return
    for name in ACTING:
        real = cache_cls.__dict__.get(name)
        if real is not None:
            setattr(cache_cls, name, _probe(real, name, op_cls, holder))
    cache_cls._pc_identity = True


def _probe(real, name, op_cls, holder):
    def probed(self, first, *args, **kwargs):
        world = holder.world
        if isinstance(first, op_cls):
            acting, request = first, request_of(first)
        else:
            request = first
            me = world.baton.current()
            drained = world.draining.get(me.rank) if me is not None else None
            acting = drained if drained is not None and request_of(drained) == request else None
        entry = self.ongoing_prefetch.get(request)
        current = operation_of(entry, op_cls) if entry is not None else None
        if acting is not None and current is not None and current is not acting:
            site = caller_site(world.baton.roots)
            world.fault("operation_identity", f"{name} for {world.label(acting)} acts on {world.label(current)}, "
                        f"a newer operation of the same request", CONSEQUENCE, site)
        return real(self, first, *args, **kwargs)

    probed.__wrapped__ = real
    probed.__name__ = name
    return probed
