"""A completion predicate as written in a codebase, read with `ast` and run by a sandboxed interpreter on
model states: never imported, never executed as a module. (Reading SGLang trees is prefetch_check/sglang/'s.)"""
