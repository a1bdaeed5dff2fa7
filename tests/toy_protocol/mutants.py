"""The toy's mutant catalogue: a write that counts a page twice."""

from __future__ import annotations

from prefetch_check.model.protocols.mutant import MutantInfo

from toy_protocol.config import ToyConfig
from toy_protocol.protocol import ToyProtocol


class Mutant(MutantInfo, ToyProtocol):
    """A toy protocol with one deliberate change."""


class AcceptAfterFirstPage(Mutant, name="accept_after_first_page", touches=("S.accept",), expected="complete_on_accept"):
    """the scheduler accepts once the first page is written"""

    upstream = "nowhere: a toy"

    def accepts(self, rank):
        return rank.written > 0


CATALOGUE = (AcceptAfterFirstPage,)
CONFIGS = (("toy-three-pages", ToyConfig(1, 3)),)
