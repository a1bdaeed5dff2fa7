"""RadixKey and the storage page hash, as far as the prefetch path uses them: a key is a list of
token ids (request q has tokens q*1000, q*1000+1, ...), a page's hash names its first token."""

from __future__ import annotations


class RadixKey:
    def __init__(self, token_ids, extra_key=None, is_bigram=False, cache_salt=None, limit=None):
        self.token_ids = list(token_ids)
        self.extra_key, self.is_bigram, self.cache_salt = extra_key, is_bigram, cache_salt or None

    def __len__(self) -> int:
        return len(self.token_ids)

    def __iter__(self):
        return iter(self.token_ids)

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return RadixKey(self.token_ids[idx], self.extra_key, self.is_bigram, self.cache_salt)
        return self.token_ids[idx]

    def page_aligned(self, page_size: int) -> "RadixKey":
        return self[: len(self) // page_size * page_size]

    def raw_token_ids(self):
        return list(self.token_ids)

    @classmethod
    def _pc_describe(cls, obj, world) -> str:
        return f"key{obj.token_ids[:1]}x{len(obj)}"


def storage_hashes(key, prior_hash=None, page_size: int = 1) -> list[str]:
    """One hash per whole page: 'q<request>p<page>' (request q's tokens are q*1000 + position)."""
    tokens = key.token_ids if isinstance(key, RadixKey) else list(key)
    return [f"q{tokens[i] // 1000}p{(tokens[i] % 1000) // page_size}"
            for i in range(0, len(tokens) - len(tokens) % page_size, page_size)]


def page_of(hash_str: str) -> int:
    """The page number a hash stands for within its request."""
    return int(hash_str.rsplit("p", 1)[1])
