"""The executor's worlds, one folder per protocol: what a tree of that protocol runs as written,
its harness (ranks, threads, the scheduler loop, the gate), its probes and own stand-ins, and its
conformance run and configurations (docs/executor.md)."""
