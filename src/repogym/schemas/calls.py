"""Records of what a task's failing tests call, and the evidence a statement is written from.

    patch ─changed_functions─▶ Target ─tracer (broken run, gold run)─▶ CallTrace
    CallTrace (broken, gold) + failure messages ─▶ StatementEvidence ─▶ statement

A :class:`Target` is a function a patch changes (on one side of it). The call tracer
(:mod:`repogym.toolchains.python_calls`) runs beside the tests and records, for each test it
is told about, every call the test makes into the project's code that reaches a target
beneath it: a :class:`CallRecord`, named as a user calls it (``inflection.ordinal``, not a
private helper), with short reprs of its arguments and of what it returned or raised.
Comparing the broken state's :class:`CallTrace` with the gold state's tells what the bug
changes, which no side of an ``assert ==`` can: many suites write ``assert expected ==
actual``.

A trace is written by code that runs beside the code under test: it describes, it never
grades.
"""

from __future__ import annotations

from enum import Enum

from pydantic import Field

from repogym.schemas.records import Record


class TargetKind(str, Enum):
    """What a target spans: one function, or a scope whose every function it stands for."""

    function = "function"
    klass = "class"  # a changed class-level line: any method of the class reaches it
    module = "module"  # a changed module-level line: any function of the file reaches it


class Target(Record):
    """A function (or scope) a patch changes, located on one side of the patch.

    ``path`` is repo-relative; ``qualname`` is Python's (``Stack.push``,
    ``outer.<locals>.inner``; ``<module>`` for a module target); the lines are 1-based and
    inclusive, decorators included.
    """

    path: str
    qualname: str
    first_line: int
    last_line: int
    kind: TargetKind = TargetKind.function

    @property
    def key(self) -> str:
        """How a :class:`CallRecord` names it in ``reached``: ``path::qualname``."""
        return f"{self.path}::{self.qualname}"


class CallKind(str, Enum):
    """How a user makes the call, which decides how a statement writes it."""

    function = "function"  # pkg.f(1, 2)
    method = "method"  # pkg.Stack.push(3), on an instance of that class
    constructor = "constructor"  # pkg.Stack(3); its result is the new instance's repr
    property = "property"  # pkg.Rect.area, read on an instance


class CallRecord(Record):
    """One call a test made into the project's code, which reached a target beneath it.

    ``function`` is the public dotted name a user calls (shortest public import path);
    ``args`` are short reprs (``name=repr`` for keywords), without ``self``/``cls``; a
    method's instance is ``receiver``.
    ``result`` is the repr of what it returned, ``raised`` ``"Type: message"`` if it raised;
    neither set means it never returned (the run was killed while it ran: it hangs).
    ``reached`` are the :attr:`Target.key` of the targets it reached; ``index`` its
    position among the test's recorded calls.
    """

    test: str
    index: int
    function: str
    kind: CallKind = CallKind.function
    args: tuple[str, ...] = ()
    receiver: str | None = None  # methods and properties: the instance's short repr
    result: str | None = None
    raised: str | None = None
    reached: tuple[str, ...] = ()

    @property
    def returned(self) -> bool:
        return self.result is not None

    @property
    def finished(self) -> bool:
        """It returned or raised (False: it was still running when the run ended)."""
        return self.result is not None or self.raised is not None

    @property
    def call(self) -> str:
        """The call as a user writes it: ``pkg.f(1, 2)``, ``pkg.Rect(1, 2).scaled(3)``
        (an instance whose repr reads as its constructor), ``pkg.Rect.area``; a function a
        project function returns (a closure) as ``pkg.compose(...)(3)``."""
        function = self.function
        if ".<locals>." in function:
            function = function.split(".<locals>.")[0] + "(...)"
        elif self.receiver and self.kind in (CallKind.method, CallKind.property):
            owner, _, name = function.rpartition(".")
            module, _, klass = owner.rpartition(".")
            if self.receiver.startswith(klass + "(") and self.receiver.endswith(")"):
                function = f"{module}.{self.receiver}.{name}" if module else \
                    f"{self.receiver}.{name}"
        if self.kind is CallKind.property:
            return function
        return f"{function}({', '.join(self.args)})"

    @property
    def shows_receiver(self) -> bool:
        """:attr:`call` already shows the instance (else a writer may add it)."""
        return self.receiver is not None and self.receiver in self.call

    def same_call(self, other: CallRecord) -> bool:
        """The same function, instance and arguments (what it did may differ)."""
        return ((self.function, self.kind, self.args, self.receiver)
                == (other.function, other.kind, other.args, other.receiver))

    def same_outcome(self, other: CallRecord) -> bool:
        return (self.result, self.raised) == (other.result, other.raised)


class CallTrace(Record):
    """What one run recorded: test node id -> its calls, in the order they were made."""

    calls: dict[str, tuple[CallRecord, ...]] = Field(default_factory=dict)

    def of(self, test: str) -> tuple[CallRecord, ...]:
        return self.calls.get(test, ())


class StatementEvidence(Record):
    """Everything a statement writer may know about a task's failing tests.

    ``messages``: each F2P test's failure message in the broken state. ``broken`` /
    ``gold``: the call traces of the F2P tests in each state (None: not traced). ``hung``:
    the F2P tests that timed out in the broken state. ``test_sources``: test file (as in the
    node ids) -> its text, to tell which side of a comparison a test computes; optional.
    """

    fail_to_pass: tuple[str, ...]
    messages: dict[str, str] = Field(default_factory=dict)
    broken: CallTrace | None = None
    gold: CallTrace | None = None
    hung: tuple[str, ...] = ()
    test_sources: dict[str, str] = Field(default_factory=dict)
