"""The executor: a tree's own prefetch functions run as the steps, under our scheduler, with
stand-ins for the world, in a sandboxed child process (docs/executor.md)."""
