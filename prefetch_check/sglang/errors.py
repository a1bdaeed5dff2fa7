"""The one error kind of this package: bad input or an unreachable index, said in one paragraph."""

from prefetch_check.scenario.errors import InputError


class SglangSourceError(InputError):
    """A SPEC, path, index or download problem; the CLI prints it and exits with status 2."""
