"""Reading SGLang releases: which trees a SPEC names, fetching them, locating the protocol files.

Nothing here imports or installs sglang: releases are fetched with `pip download` and
unpacked to a cache of the protocol files only; a path or `installed` is read in place.
"""
