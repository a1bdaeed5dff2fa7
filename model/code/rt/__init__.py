"""The executor's private engine (as Loom keeps its runtime in rt/): the baton that runs one
managed thread at a time, the child-side executor of one run, the hooks on the tree's operation
class, the loader and stub modules the tree is imported under, the verdicts judged on a run, and
the search loop. It imports no world: a world reaches it through its pack (docs/executor.md)."""
