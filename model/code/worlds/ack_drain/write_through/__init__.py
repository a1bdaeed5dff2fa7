"""Cache mode's write path (`CodeConfig(backup=True)`, host_memory_mode cache: SGLang's default
server under hicache write_through): a request the scheduler computed is inserted into the device
tree, and the cache's own code backs its node up to host and on to storage beside the prefetches.
What it reaches beyond the path (the device side of the tree, the D2H copy) is a stand-in here or
in the buffer world's folder, one concept a file."""
