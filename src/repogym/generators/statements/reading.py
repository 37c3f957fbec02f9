"""Reading the evidence for one test: the best of traces, messages and sources.

:func:`observe` takes the call traces first (:mod:`~.traces`); without them, the failure
message (:mod:`~.messages`), whose comparison is turned the right way round by a traced
call's result or the test's source (:mod:`~.sources`) -- or, when nothing tells, kept
as two values without a direction. A behaviour is then grouped under the function its
call names.
"""

from __future__ import annotations

import re
from dataclasses import replace

from repogym.generators.statements.messages import read_message
from repogym.generators.statements.observed import Comparison, Observed
from repogym.generators.statements.sources import source_call, source_side
from repogym.generators.statements.traces import from_record, traced, traced_call, traced_side
from repogym.generators.statements.values import display, display_pair
from repogym.schemas.calls import StatementEvidence
from repogym.toolchains.base import toolchain_for


def observe(test: str, ev: StatementEvidence) -> Observed | None:
    """The broken behaviour ``test`` shows, from the best evidence (see the module doc)."""
    found = traced(test, ev) or _from_message(test, ev)
    if found is not None and found.function is None and found.call and \
            not found.call.startswith("<"):
        found = replace(found, function=_callee(found.call, _modules(ev)))
    return found


def read_all(evidence: StatementEvidence) -> tuple[list[Observed], list[str]]:
    """Each F2P test's behaviour, and the tests nothing could be read from."""
    observed: list[Observed] = []
    unread: list[str] = []
    for test in evidence.fail_to_pass:
        found = observe(test, evidence)
        if found is not None and found.says_something:
            observed.append(found)
        else:
            unread.append(test)
    return observed, unread


def _oriented(comparison: Comparison, test: str, ev: StatementEvidence) -> Observed:
    """The comparison as a behaviour: what the code gives and what it should, or, when no
    evidence tells the sides apart, both values without a direction."""
    index, call = comparison.computed, comparison.call
    if index is None:
        index, call = traced_side(comparison, test, ev)
    if index is None:
        index, call = source_side(comparison, test, ev.test_sources)
    a, b = display_pair(*comparison.sides)
    if index is None:
        return Observed(compared=(a, b), op=comparison.op, call=display(call) if call else None)
    got, other = (a, b) if index == 0 else (b, a)
    call = display(call) if call else None
    if comparison.op in ("==", "is"):
        return Observed(call=call, returns=got, should_return=other)
    if comparison.op == "in" and index == 1:
        return Observed(call=call, returns=got, member=other)
    return Observed(call=call, compared=(a, b), op=comparison.op)  # <, not in...: no "should"


def _from_message(test: str, ev: StatementEvidence) -> Observed | None:
    """The behaviour the failure message shows, with the call that made it when known."""
    if ev.language != "python":
        return _from_toolchain(test, ev)
    read = read_message(ev.messages.get(test, ""))
    if read is None:
        return Observed(hangs=True) if test in ev.hung else None
    observed = _oriented(read, test, ev) if isinstance(read, Comparison) else read
    record = traced_call(test, ev)
    if observed.call is None and record is not None:
        observed = replace(observed, call=from_record(record).call,
                           function=record.api)
    elif observed.call is None:
        observed = replace(observed, call=_checked_call(observed, test, ev))
    if test in ev.hung:
        observed = replace(observed, hangs=True, raises=None)
    return observed


def _from_toolchain(test: str, ev: StatementEvidence) -> Observed | None:
    """The behaviour the message shows, as the task's toolchain reads its runner's words."""
    read = toolchain_for(ev.language).read_failure(ev.messages.get(test, ""), test,
                                                   ev.test_sources)
    if read is None:
        return Observed(hangs=True) if test in ev.hung else None
    call = display(read.call) if read.call else None
    if read.hangs or test in ev.hung:
        return Observed(call=call, hangs=True, function=read.function)
    if read.actual is not None and read.expected is not None:
        got, want = display_pair(read.actual, read.expected)
        return Observed(call=call, returns=got, should_return=want, function=read.function)
    return Observed(call=call, raises=read.raises, should_raise=read.should_raise,
                    note=read.note, function=read.function)


def _checked_call(observed: Observed, test: str, ev: StatementEvidence) -> str | None:
    """The call a truth or raising check of the test's source makes."""
    if observed.truthy is not None or observed.should_return == "None":
        return source_call(test, ev.test_sources, "truth")
    if observed.should_raise or observed.note and "pattern" in observed.note:
        return source_call(test, ev.test_sources, "raises")
    return None


def _modules(ev: StatementEvidence) -> frozenset[str]:
    """Names that are modules where the F2P tests run: what their files ``import``, and
    the packages of the functions the broken run traced (never a test's local variable)."""
    names = {m.group(2) or m.group(1).split(".")[0]
             for text in ev.test_sources.values()
             for m in re.finditer(r"^\s*import\s+([\w.]+)(?:\s+as\s+(\w+))?\s*$", text, re.M)}
    if ev.broken is not None:
        names |= {c.function.split(".")[0] for calls in ev.broken.calls.values() for c in calls}
    return frozenset(names)


def _callee(call: str, modules: frozenset[str] = frozenset()) -> str:
    """The name a call text is grouped by: ``pkg.Rect(1, 2).scaled(3)`` -> ``scaled`` (a
    method); ``inflection.ordinal(3)`` -> ``inflection.ordinal`` when ``inflection`` is one
    of ``modules`` (the name a user calls, as a traced call gives it)."""
    text = call.split("`")[0]
    single = re.fullmatch(r"([A-Za-z_]\w*)((?:\.[A-Za-z_]\w*)+)\((.*)\)", text.strip(), re.S)
    if single and single.group(1) in modules and not re.search(r"\)\s*[.(\[]",
                                                                single.group(3)):
        return single.group(1) + single.group(2)
    head = re.sub(r"\([^()]*\)", "", text)
    while "(" in head:  # innermost parentheses first, until none is left (or one is lone)
        shorter = re.sub(r"\([^()]*\)", "", head)
        if shorter == head:  # an unbalanced "(" in a string or regex argument: '/(' ...
            head = head.split("(", 1)[0]
            break
        head = shorter
    return head.rstrip(".").rsplit(".", 1)[-1] or call
