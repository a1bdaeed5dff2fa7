"""The predicate-poll world: HiRadixCache and HiCacheController (0.5.1-0.5.18)."""
