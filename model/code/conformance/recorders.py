"""What a conformance run records for the refinement mapping, over the stand-ins' and the tree's
methods (instance attributes, so the class bodies stay as written): which thread a call is of,
the item a storage thread hands on, the slots the drain takes off the release queue until it
frees them, and the pages written per operation. Each world's conformance run (worlds/<protocol>/
conformance_run.py) puts them where its mapping reads them."""

from __future__ import annotations

from typing import Optional


def role_of(baton) -> Optional[str]:
    """The role of the thread running now (None: not a managed thread)."""
    me = baton.current()
    return me.role if me is not None else None


def handing_on(put, rank, role, baton):
    """The thread of `role` no longer holds what it put (IO: once it put the operation's last ACK)."""
    def handing_on(item, *args, **kwargs):
        put(item, *args, **kwargs)
        if role_of(baton) == role and (role != "io" or item.__dict__.get("completed_req")):
            rank.holding[role] = None
    return handing_on


def releasing(get, rank):
    """Slots the drain took off host_mem_release_queue stay given back until it frees them."""
    def releasing(*args, **kwargs):
        item = get(*args, **kwargs)
        rank.releasing.update(item.data)
        return item
    return releasing


def freeing(free, rank):
    """Slots freed are no longer being given back."""
    def freeing(indices, *args, **kwargs):
        free(indices, *args, **kwargs)
        rank.releasing.difference_update(indices.data)
    return freeing


def writing(write, rank, run, owner):
    """The pages IO wrote, per operation: `owner(run, rank, slot)`, the mapping's owner of a slot."""
    def writing(index, data, *args, **kwargs):
        write(index, data, *args, **kwargs)
        slot = index.item() if hasattr(index, "item") else int(index)
        op = owner(run, rank.index, slot)
        if op is not None:
            page = op.__dict__["host_indices"].data.index(slot) // run.config.page_size
            rank.writes.setdefault(op.__dict__["_pc_label"], set()).add(page)
    return writing
