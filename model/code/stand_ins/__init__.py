"""Stand-ins for the world the prefetch path runs in, one concept a file:
queues, collectives, tensors, host pool, radix tree, storage, clock, locks.

They are used only inside the executor's child process, where the real SGLang files import
them in place of torch, queue, threading, msgspec and the modules outside the prefetch path.
Every call another thread can observe is a scheduling point of `rt.baton.Baton`.
"""
