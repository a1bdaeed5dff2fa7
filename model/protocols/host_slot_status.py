"""The status of a host slot, one entry per page of an operation, in both SGLang prefetch
protocols: what host_memory and data_integrity are judged on."""

from __future__ import annotations

HELD = 0  # allocated (at issue or at the hit drain), not yet given back
RELEASED = 1  # freed directly, or put on host_mem_release_queue, exactly once
IN_TREE = 2  # handed to the host radix tree
DOUBLE = 3  # given back twice (or handed to the tree and given back): a host-memory violation


def give_back(slots: tuple, first: int, last: int, status: int, times: int = 1) -> tuple:
    """Pages [first, last) freed / queued (RELEASED) or handed to the tree (IN_TREE), `times`
    times; twice is DOUBLE. Pages beyond the slots (no host memory for them) are skipped."""
    if first >= last:
        return slots
    out = list(slots)
    for _ in range(times):
        for p in range(first, min(last, len(out))):
            out[p] = status if out[p] == HELD else DOUBLE
    return tuple(out)


def slot_faults(ops) -> tuple:
    """(double, held, unwritten) over a rank's operations: the first (operation index, page)
    given back twice, still held, and in the tree before its data was written; None for each
    that there is none."""
    double = held = unwritten = None
    for i, op in enumerate(ops):
        for p, status in enumerate(op.slots):
            if status == DOUBLE and double is None:
                double = (i, p)
            elif status == HELD and held is None:
                held = (i, p)
            elif status == IN_TREE and p >= op.written and unwritten is None:
                unwritten = (i, p)
    return double, held, unwritten
