"""The conformance check: model schedules replayed on a tree's code, compared step by step
through the protocol's refinement mapping (docs/conformance.md)."""
