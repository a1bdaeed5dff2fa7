"""The ack-drain protocol: SGLang 0.5.19 and later (UnifiedRadixCache, HiRadixCache 0.5.19-0.5.20)."""
