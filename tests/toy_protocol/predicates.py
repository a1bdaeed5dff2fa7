"""The toy's completion predicates: (pages written, pages of the request) -> accept."""


def fixed(written: int, pages: int) -> bool:
    return written == pages


def buggy(written: int, pages: int) -> bool:
    return written >= pages - 1  # accepts one page early


BUILTIN = {"buggy": buggy, "fixed": fixed}
