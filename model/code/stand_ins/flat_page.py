"""A host page's flat bytes (`get_dummy_flat_data_page`, `get_data_page`), as a storage backend
that keeps raw bytes reads and writes them (`CodeConfig(storage="file")`: HiCacheFile's
`target.view(torch.uint8).contiguous().numpy()` into which a file is read, and
`value.contiguous().view(dtype=torch.uint8).numpy().tofile(path)`). A page's bytes hold the name
of the page it is (the stand-ins' data: stand_ins/radix.py), so what the real backend wrote and
read back can be judged; an empty page (all zeros) holds nothing."""

from __future__ import annotations

from typing import Optional

PAGE_BYTES = 32  # every page's size on disk: room for a page's name


class _Bytes(bytearray):
    """The numpy array a page's bytes are viewed as: a writable buffer that can write itself."""

    def tofile(self, path: str) -> None:
        with open(path, "wb") as f:
            f.write(self)


class FlatPage:
    def __init__(self, name: Optional[str] = None):
        self.buf = _Bytes(PAGE_BYTES)
        if name:
            raw = str(name).encode()
            if len(raw) > PAGE_BYTES:
                raise ValueError(f"page name {name!r} longer than a page's {PAGE_BYTES} bytes")
            self.buf[: len(raw)] = raw

    def numel(self) -> int:
        return PAGE_BYTES

    def element_size(self) -> int:
        return 1

    def view(self, dtype=None) -> "FlatPage":
        return self

    def contiguous(self) -> "FlatPage":
        return self

    def numpy(self) -> _Bytes:
        return self.buf

    def name(self) -> Optional[str]:
        """The page these bytes are, or None for an empty page."""
        raw = bytes(self.buf).rstrip(b"\0")
        return raw.decode() if raw else None

    def __repr__(self) -> str:
        return f"FlatPage({self.name()!r})"


def page_name(data) -> Optional[str]:
    """What a page value holds: a FlatPage's name, or the stand-ins' plain value."""
    return data.name() if isinstance(data, FlatPage) else data
