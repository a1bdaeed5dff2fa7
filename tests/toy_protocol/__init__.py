"""A third protocol, a toy, that exists only in the tests: its folder plus one `register` line make
every command work on it (issue 20's done-when). A writer thread writes a request's pages one by
one; the scheduler accepts the request when its predicate says every page is written."""
