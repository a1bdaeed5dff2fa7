"""What every protocol mutant carries: the change in a developer's words, where upstream it would
be made, the property expected to catch it, and the steps it touches (marked in its traces)."""

from __future__ import annotations

from typing import Optional


class MutantInfo:
    """Mixed in before a protocol class: `class Mutant(MutantInfo, PollProtocol)`."""

    name: str = ""
    description: str = ""  # what the developer changed, in their words
    upstream: str = ""  # where the change would be made upstream
    touches: tuple[str, ...] = ()  # step kinds the change affects (marked in traces)
    expected: str = ""  # the property that should catch it
    equivalent: Optional[str] = None  # why no property can catch it, for an equivalent mutant

    def describe(self, before, after, action) -> str:
        text = super().describe(before, after, action)
        if action.kind in self.touches:
            text += f"   <- mutated ({self.name})"
        return text
