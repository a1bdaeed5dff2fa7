"""The predicate-poll protocol: SGLang 0.5.1 to 0.5.18, the scheduler polls a completion predicate."""
