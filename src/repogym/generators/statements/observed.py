"""What the readers of the evidence produce: a broken behaviour, and a failed comparison.

:class:`Observed` is what a statement says of one failing test; every reader
(:mod:`~repogym.generators.statements.traces`,
:mod:`~repogym.generators.statements.messages`) ends in one, and
:mod:`~repogym.generators.statements.wording` puts it into words. :class:`Comparison` is a
failed check read from a message before anyone knows which side the code computed.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Observed:
    """One broken behaviour: a call (None: unknown), what it does now, what it should do.

    ``compared`` holds two values a check found different when nothing tells which one
    the code computed; ``note`` a finished sentence (a mock's complaint).
    """

    function: str | None = None
    call: str | None = None
    returns: str | None = None
    raises: str | None = None
    hangs: bool = False
    should_return: str | None = None
    should_raise: str | None = None
    truthy: bool | None = None  # it should return a true (True) or a false (False) value
    member: str | None = None  # what the returned value should contain
    compared: tuple[str, str] | None = None
    op: str = "=="  # how ``compared`` was compared
    note: str | None = None

    @property
    def says_something(self) -> bool:
        return bool(self.returns or self.raises or self.hangs or self.should_return
                    or self.should_raise or self.compared or self.note)

    @property
    def key(self) -> tuple[object, ...]:
        return (self.call, self.returns, self.raises, self.hangs, self.should_return,
                self.should_raise, self.compared, self.note)


@dataclass(frozen=True)
class Comparison:
    """A failed comparison: its two sides as the message shows them, and, when known,
    which side the code computed (0 or 1) and by which call."""

    op: str
    sides: tuple[str, str]
    computed: int | None = None
    call: str | None = None
