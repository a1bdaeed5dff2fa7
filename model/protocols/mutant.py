"""What every protocol mutant carries: the change in a developer's words, where upstream it would
be made, the property expected to catch it, and the steps it touches (marked in its traces).

A catalogue mutant is declared in its class line and docstring:

    class RevokeKeepsSlots(Mutant, name="revoke_keeps_slots", touches=("P.revoke",), expected="host_memory"):
        \"\"\"revoke puts the request on the revoke queue but forgets to release its host slots\"\"\"

        upstream = "cache_controller.py, prefetch_thread_func, revoke branch: ... removed"
        revoke_releases = answers_no

the docstring is its description (wrapped lines read as one line of text).
"""

from __future__ import annotations

from typing import Optional


def answers_no(self, *args) -> bool:
    """A yes/no hook of a step that the mutant turns off (`revoke_releases = answers_no`)."""
    return False


class MutantInfo:
    """Mixed in before a protocol class: `class Mutant(MutantInfo, PollProtocol)`."""

    name: str = ""
    description: str = ""  # what the developer changed, in their words
    upstream: str = ""  # where the change would be made upstream
    touches: tuple[str, ...] = ()  # step kinds the change affects (marked in traces)
    expected: str = ""  # the property that should catch it
    equivalent: Optional[str] = None  # why no property can catch it, for an equivalent mutant

    def __init_subclass__(cls, name: str = "", touches: tuple[str, ...] = (), expected: str = "", **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        if name:  # declared in the class line: the docstring says what changed
            cls.name, cls.touches, cls.expected = name, tuple(touches), expected
            if "description" not in vars(cls) and cls.__doc__:
                cls.description = " ".join(cls.__doc__.split())

    def describe(self, before, after, action) -> str:
        text = super().describe(before, after, action)
        if action.kind in self.touches:
            text += f"   <- mutated ({self.name})"
        return text
