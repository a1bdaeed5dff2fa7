"""The predicate-poll protocol's SGLang side: its options from a release's source, its executor world."""
