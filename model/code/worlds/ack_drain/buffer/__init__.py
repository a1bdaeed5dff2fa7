"""The buffer_only configuration of the ack-drain world (`CodeConfig(host_memory_mode="buffer_only")`):
the tree's BufferModePipeline runs as written; what it reaches beyond the prefetch path (the device
radix tree, the device KV pool and its H2D copy, the FULL component, the scheduler's request) is a
stand-in here, one concept a file."""
