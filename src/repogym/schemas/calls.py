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

import re
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


PROTOCOL: dict[str, str] = {
    "__reduce__": "pickle.dumps({x})", "__reduce_ex__": "pickle.dumps({x})",
    "__getstate__": "pickle.dumps({x})", "__setstate__": "pickle.loads(pickle.dumps({x}))",
    "__copy__": "copy.copy({x})", "__deepcopy__": "copy.deepcopy({x})",
    "__repr__": "repr({x})", "__str__": "str({x})", "__format__": "format({x}, {a})",
    "__len__": "len({x})", "__hash__": "hash({x})", "__bool__": "bool({x})",
    "__iter__": "iter({x})", "__next__": "next({x})", "__reversed__": "reversed({x})",
    "__eq__": "{x} == {a}", "__ne__": "{x} != {a}", "__lt__": "{x} < {a}",
    "__le__": "{x} <= {a}", "__gt__": "{x} > {a}", "__ge__": "{x} >= {a}",
    "__add__": "{x} + {a}", "__sub__": "{x} - {a}", "__mul__": "{x} * {a}",
    "__truediv__": "{x} / {a}", "__floordiv__": "{x} // {a}", "__mod__": "{x} % {a}",
    "__and__": "{x} & {a}", "__or__": "{x} | {a}", "__xor__": "{x} ^ {a}",
    "__getitem__": "{x}[{a}]", "__setitem__": "{x}[{a}] = {b}", "__delitem__": "del {x}[{a}]",
    "__contains__": "{a} in {x}", "__call__": "{x}({args})",
}
"""A method Python calls for an operation, as a user writes that operation (``{x}``: the
instance; ``{a}``, ``{b}``: the arguments)."""


_SHOWS_ITSELF = frozenset({"__repr__", "__str__", "__format__"})
# operations whose value is not what the method returns: pickle.dumps gives bytes, not
# __reduce__'s tuple; pickle.loads the object, not __setstate__'s None; x[a] = b no value
_NOT_ITS_VALUE = frozenset({"__reduce__", "__reduce_ex__", "__getstate__", "__setstate__",
                            "__setitem__", "__delitem__"})


def _private_nesting(owner: str) -> int | None:
    """Where a private class nested in a public one starts in a dotted owner name
    (``cachetools.LFUCache._Link``: 2), or None."""
    parts = owner.split(".")
    return next((i for i in range(1, len(parts))
                 if parts[i][:1] == "_" and parts[i][1:2].isupper() and parts[i - 1][:1].isupper()),
                None)


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
    def api(self) -> str:
        """The public name of what the user calls: :attr:`function`, without a closure's
        inner name; for an operation (:data:`PROTOCOL`) or a method of a private class
        nested in a public one (``cachetools.LFUCache._Link.__reduce__``), the public class
        the user holds (``cachetools.LFUCache``)."""
        function = self.function.split(".<locals>.")[0]
        if self.kind is not CallKind.method:
            return function
        owner, _, name = function.rpartition(".")
        nested = _private_nesting(owner)
        if nested is not None and name in PROTOCOL:
            return ".".join(owner.split(".")[:nested])
        return owner if name in PROTOCOL and owner else function

    @property
    def operation(self) -> str | None:
        """An operation as a user writes it (``pickle.dumps(<LFUCache object>)``,
        ``Point(1, 2) == Point(1, 3)``), for a method Python calls for it; else None."""
        owner, _, name = self.function.rpartition(".")
        form = PROTOCOL.get(name) if self.kind is CallKind.method and owner else None
        if form is None:
            return None
        nested = _private_nesting(owner)
        if nested is not None:
            x = f"<{owner.split('.')[nested - 1]} object>"
        elif self.receiver and name not in _SHOWS_ITSELF:
            x = self.receiver
        else:  # its repr is what the broken method makes
            x = f"<{owner.rpartition('.')[2]} object>"
        args = list(self.args)
        return form.format(x=x, a=args[0] if args else "...",
                           b=args[1] if len(args) > 1 else "...", args=", ".join(args))

    @property
    def call(self) -> str:
        """The call as a user writes it: ``pkg.f(1, 2)``, ``pkg.Rect(1, 2).scaled(3)``
        (an instance whose repr reads as its constructor), ``pkg.Rect.area``; a function a
        project function returns (a closure) as ``pkg.compose(...)(3)``; an operation
        Python makes a method call for, as the operation (:attr:`operation`)."""
        if (operation := self.operation) is not None:
            return operation
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
    def gives_result(self) -> bool:
        """What the method returned is what the user's :attr:`call` gives (False for an
        operation whose value is another: ``pickle.dumps`` gives bytes, not the tuple
        ``__reduce__`` returned); what it raised or that it hung is the call's either way."""
        return self.operation is None or self.function.rpartition(".")[2] not in _NOT_ITS_VALUE

    @property
    def shows_receiver(self) -> bool:
        """:attr:`call` already shows the instance (else a writer may add it)."""
        return self.receiver is not None and (self.operation is not None
                                              or self.receiver in self.call)

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


class FailureReading(Record):
    """What one failed check says, as the toolchain reads its runner's message: the
    expression the test checked (as written), what it gave and what it should have given,
    or that it raised, did not raise, or never finished."""

    call: str | None = None
    actual: str | None = None
    expected: str | None = None
    raises: str | None = None
    should_raise: str | None = None
    hangs: bool = False
    note: str | None = None  # a finished clause when none of the above says it
    # the project's function the check exercises when ``call`` is a library's call around
    # it ("": none of the project's); None: the call's own name says it
    function: str | None = None


class StatementEvidence(Record):
    """Everything a statement writer may know about a task's failing tests.

    ``messages``: each F2P test's failure message in the broken state. ``broken`` /
    ``gold``: the call traces of the F2P tests in each state (None: not traced). ``hung``:
    the F2P tests that timed out in the broken state. ``test_sources``: test file (as in the
    node ids) -> its text, to tell which side of a comparison a test computes; optional.
    """

    fail_to_pass: tuple[str, ...]
    language: str = "python"  # whose toolchain reads the messages
    messages: dict[str, str] = Field(default_factory=dict)
    broken: CallTrace | None = None
    gold: CallTrace | None = None
    hung: tuple[str, ...] = ()
    test_sources: dict[str, str] = Field(default_factory=dict)

    def called_names(self) -> frozenset[str]:
        """Every part of the dotted names of the functions the F2P tests called in the
        broken state: they exist before the fix, so naming them gives none of it away."""
        if self.broken is None:
            return frozenset()
        return frozenset(part for calls in self.broken.calls.values() for call in calls
                         for part in re.split(r"[.:]+", call.function) if part)
