"""What the reproductions stand in for, beside SGLang's own classes: storage backends (only their
existence query), the host KV pool's slot accounting, and page keys. Kept next to the scripts:
`python SCRIPT.py` finds it in the script's folder."""

import torch

PAGE = 1  # tokens a page


class Storage:
    """A storage backend that holds `stored` pages of every prefix asked for (all: None)."""

    def __init__(self, stored=None):
        self.stored = stored

    def batch_exists(self, keys, extra_info=None):
        return len(keys) if self.stored is None else min(self.stored, len(keys))


class UnreachableStorage:
    """A storage backend whose existence query fails, as a remote store does when it is unreachable."""

    def batch_exists(self, keys, extra_info=None):
        raise ConnectionError("storage backend unreachable")


class HostPool:
    """The host KV pool's slot accounting (alloc, free, available_size), without the tensors."""

    page_size = PAGE
    entry_map: dict = {}  # no sidecar pools

    def __init__(self, slots: int):
        self.free_slots = list(range(slots))

    def alloc(self, n: int):
        if n > len(self.free_slots):
            return None
        taken, self.free_slots = self.free_slots[:n], self.free_slots[n:]
        return torch.tensor(taken, dtype=torch.int64)

    def free(self, indices) -> None:
        self.free_slots.extend(int(x) for x in indices)

    def available_size(self) -> int:
        return len(self.free_slots)


def page_hashes(tokens, prior_hash=None, page_size=PAGE):
    """Each page's storage key (the releases that bind `get_hash_str` at attach time call this)."""
    return [f"page{i}" for i in range(len(tokens) // page_size)]


def built(cls, **attributes):
    """An object of `cls` made as SGLang's unit tests make one: `__new__`, then the attributes the
    path reads, in the order given (a property may forward to one set before it)."""
    obj = cls.__new__(cls)
    for name, value in attributes.items():
        setattr(obj, name, value)
    return obj
