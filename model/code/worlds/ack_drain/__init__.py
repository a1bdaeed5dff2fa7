"""The ack-drain world: UnifiedRadixCache and its controller with the sync thread (0.5.19 on)."""
