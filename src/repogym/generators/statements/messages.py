"""Reading pytest's and unittest's failure messages: what a failed check shows.

:func:`read_message` reads a message's first lines as one of

* a fixed form (:func:`_special`): an exception that was not raised, a timeout, a mock
  not called as expected, a regex that did not match, ``x is not true``/``None``, an error
  raised (``Type: text``) -- each already an :class:`~.observed.Observed`;
* pytest's rewritten ``assert``, with its ``where`` lines resolved into the expressions
  that made each value (:func:`_pytest_assert`): a :class:`~.observed.Comparison` whose
  computed side a ``where`` line may tell, or, for ``assert x``, what ``x`` should be;
* unittest's ``first != second`` and ``member not found in container``
  (:func:`_unittest_compare`): a comparison with the sides in the order the test gave them.

:func:`raw_lines` is the message itself, scrubbed, for a check none of these reads.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

from repogym.generators.statements.observed import Comparison, Observed
from repogym.generators.statements.values import OBJECT, is_test_module, scrub
from repogym.toolchains.javascript.failures import VALUES_PREFIX

TIMEOUT = re.compile(r"\bTimeout\b|\btimed out\b", re.IGNORECASE)
"""A message (or an exception) that says a test was stopped for taking too long."""


def read_message(message: str) -> Observed | Comparison | None:
    """What a failure message shows: a behaviour, a failed comparison, or None."""
    lines = [line for line in message.splitlines() if line.strip()]
    if not lines:
        return None
    special = _special(lines)
    if special is not None:
        return special
    pytest_style = _pytest_assert(lines)
    if pytest_style is not None:
        return pytest_style
    return _unittest_compare(re.sub(r"^AssertionError:\s*", "", lines[0].strip()))


# -- pytest: the assert and its where lines ----------------------------------------------


@dataclass(frozen=True)
class _Where:
    """One ``where`` line of pytest's explanation: ``value`` is what ``expr`` gave."""

    level: int
    value: str
    expr: str


_WHERE = re.compile(r"^\+(\s*)(?:where|and)\s+(.+?) = (.+)$")


def _where_lines(lines: Sequence[str]) -> list[_Where]:
    out = []
    for line in lines:
        if m := _WHERE.match(line.rstrip()):
            out.append(_Where(len(m.group(1)), m.group(2).strip(), m.group(3).strip()))
    return out


def _resolve(wheres: list[_Where]) -> list[_Where]:
    """The outermost ``where`` lines with the deeper ones substituted into them, so
    ``distance(<P at 0x1>)`` becomes ``Point(0, 0).distance(Point(3, 4))``."""
    resolved: list[_Where] = []
    for i, w in enumerate(wheres):
        if resolved and w.level > min(r.level for r in resolved):
            continue
        expr = w.expr
        for child in reversed(_children(wheres, i)):
            expr = _substitute(expr, child.value, child.expr)
        resolved.append(replace(w, expr=expr))
    return resolved


def _children(wheres: list[_Where], i: int) -> list[_Where]:
    """The lines below ``wheres[i]`` that explain its parts, each already resolved."""
    out = []
    for j in range(i + 1, len(wheres)):
        if wheres[j].level <= wheres[i].level:
            break
        if wheres[j].level == min(w.level for w in wheres[i + 1:j + 1]):
            expr = wheres[j].expr
            for child in reversed(_children(wheres, j)):
                expr = _substitute(expr, child.value, child.expr)
            out.append(replace(wheres[j], expr=expr))
    return out


def _substitute(expr: str, value: str, by: str) -> str:
    """``value`` in ``expr`` replaced by the expression that made it -- unless it is an
    object of the tests' own (its expression names what only the tests know)."""
    if (m := OBJECT.fullmatch(value)) and is_test_module(m.group(1).rpartition(".")[0]):
        return expr
    if value.isidentifier():
        return re.sub(rf"(?<![\w.]){re.escape(value)}(?![\w])", lambda _: by, expr)
    return expr.replace(value, by)


_SPLIT_OPS = (" not in ", " is not ", " == ", " != ", " in ", " is ", " <= ", " >= ", " < ",
              " > ")


def _split_top(expr: str) -> tuple[str, str, str] | None:
    """``A op B`` at the top level of ``expr`` (outside quotes and brackets)."""
    depth, quote, i = 0, "", 0
    while i < len(expr):
        ch = expr[i]
        if quote:
            quote = "" if ch == quote and expr[i - 1] != "\\" else quote
        elif ch in "'\"":
            quote = ch
        elif ch in "([{<":
            depth += 1
        elif ch in ")]}>" and depth:
            depth -= 1
        elif depth == 0:
            for op in _SPLIT_OPS:
                if expr.startswith(op, i):
                    return expr[:i].strip(), op.strip(), expr[i + len(op):].strip()
        i += 1
    return None


def _pytest_assert(lines: Sequence[str]) -> Comparison | Observed | None:
    """pytest's rewritten ``assert`` (first line ``assert ...``) with its ``where`` lines."""
    first = re.sub(r"^AssertionError:\s*", "", lines[0].strip())
    if not first.startswith("assert "):
        return None
    body = first[len("assert "):]
    wheres = _resolve(_where_lines(lines[1:]))
    split = _split_top(body)
    if split is None:
        return _truth(body, wheres)
    left, op, right = split
    computed, call = _computed_side(left, right, wheres)
    if computed is None:
        return Comparison(op, (_expand(left, wheres), _expand(right, wheres)))
    sides = [left, right]
    sides[1 - computed] = _expand(sides[1 - computed], wheres)
    return Comparison(op, (sides[0], sides[1]), computed, call)


def _computed_side(left: str, right: str, wheres: list[_Where]) -> tuple[int | None, str | None]:
    """Which side a ``where`` line computes (one showing a value as it is built, such as
    ``Rect(3, 6) = Rect(3, 6)``, computes nothing)."""
    found = []
    for w in wheres:
        if w.expr == w.value:
            continue
        for index, side in enumerate((left, right)):
            if side == w.value or side.startswith("(") and w.value in side:
                found.append((index, w.expr))
    sides = {i for i, _ in found}
    if len(sides) == 1:
        index = sides.pop()
        return index, next(e for i, e in found if i == index)
    return None, None


def _expand(side: str, wheres: list[_Where]) -> str:
    """An object repr on a side replaced by the expression that built it (pytest says)."""
    for w in wheres:
        if " at 0x" in w.value and w.value in side:
            side = _substitute(side, w.value, w.expr)
    return side


def _truth(body: str, wheres: list[_Where]) -> Observed | None:
    """``assert X`` / ``assert not X``: the computed value should be true / false."""
    negated = body.startswith("not ")
    value = body[4:].strip() if negated else body.strip()
    call = next((w.expr for w in wheres if w.value == value), None)
    if call is None:
        return None
    return Observed(call=call, returns=value, truthy=not negated)


# -- unittest -----------------------------------------------------------------------------

_DIFFER = re.compile(r"^(?:Lists|Tuples|Sequences|Dicts|Sets) differ: ")
_PLACES = re.compile(r" within [\d.e+-]+ (?:places|delta).*$")
_NOT_FOUND = re.compile(r"^(.+?) not found in (.+)$")


def _unittest_compare(first: str) -> Comparison | None:
    """unittest's ``first != second`` (assertEqual and kin) and ``member not found in
    container`` (assertIn): the sides in the order the test passed them."""
    if m := _NOT_FOUND.match(first):
        return Comparison("in", (m.group(1).strip(), m.group(2).strip()))
    split = _split_top(_PLACES.sub("", _DIFFER.sub("", first)))
    if split is None or split[1] != "!=":
        return None
    return Comparison("==", (split[0], split[2]))


# -- messages of a fixed form -------------------------------------------------------------

_NOT_RAISED = [
    re.compile(r"^Failed: DID NOT RAISE (?:<class '(?:[\w.]+\.)?(\w+)'>|(?:[\w.]+\.)?(\w+))"),
    re.compile(r"^(?:AssertionError: )?(\w+) not raised"),
]
_MOCK = re.compile(r"Expected '([\w.]+)' to (?:be called|have been called)\s*(once|\d+ times)?"
                   r"[^.]*\.(?:\s*Called (\d+) times?)?")
_REGEX = re.compile(r'^(?:AssertionError: )?"(.*)" does not match "(.*)"$')
_COUNTS = re.compile(r"First has (\d+), Second has (\d+):\s+(.+)")
_BOOL = re.compile(r"^(.+) is not (true|false)$")
_NONE = re.compile(r"^(.+) is not None$")
_NO_SUCH_KEYWORD = re.compile(r"^TypeError: (?:[\w.]+\.)?(\w+)\(\) got an unexpected keyword "
                              r"argument '(\w+)'$")
_ERROR = re.compile(r"^((?:[A-Za-z_]\w*\.)*[A-Z]\w*)(?::\s*(.*))?$")  # exconly(): "Type: text"


def _special(lines: Sequence[str]) -> Observed | None:
    """Messages with a fixed form: not raised, hangs, mocks, regexes, truth, None, errors."""
    first = lines[0].strip()
    for pattern in _NOT_RAISED:
        if m := pattern.match(first):
            return Observed(should_raise=next(g for g in m.groups() if g))
    if TIMEOUT.search(first):
        return Observed(hangs=True)
    if m := _MOCK.search(" ".join(lines)):
        times = m.group(2) or "as expected"
        called = f"; `{m.group(1)}` is called {m.group(3)} times" if m.group(3) else ""
        return Observed(note=f"it should call `{m.group(1)}` {times}{called}")
    if counts := _COUNTS.findall("\n".join(lines)):
        first_has, second_has, value = counts[0]
        return Observed(note=f"a check finds `{value.strip()}` {_times(first_has)} on one side "
                             f"and {_times(second_has)} on the other, where both should match")
    if m := _REGEX.match(first):
        return Observed(note=f"it raises an error whose message is `{m.group(2)}`, which does "
                             f"not match the expected pattern `{m.group(1)}`")
    plain = re.sub(r"^AssertionError:\s*", "", first)
    if m := _BOOL.match(plain):
        return Observed(returns=m.group(1), truthy=m.group(2) == "true")
    if m := _NONE.match(plain):
        return Observed(returns=m.group(1), should_return="None")
    if first.startswith(("AssertionError", "Failed")):
        return None
    if m := _NO_SUCH_KEYWORD.match(first):  # the call never ran: the parameter is missing
        return Observed(note=f"`{m.group(1)}()` does not accept the keyword argument "
                             f"`{m.group(2)}`: a call with it raises `TypeError`")
    if m := _ERROR.match(first):
        return Observed(raises=f"{m.group(1).rsplit('.', 1)[-1]}: {m.group(2)}" if m.group(2)
                        else m.group(1).rsplit(".", 1)[-1])
    return None


def _times(count: str) -> str:
    return "once" if count == "1" else f"{count} times"


SCRATCH = re.compile(r"[\\/]rg-[0-9a-f]{16,}[\\/]|[\\/]rg-[\w.-]+\.(?:c|m)?js\b")


def raw_lines(message: str) -> list[str]:
    """The message's informative lines, scrubbed, for a check nothing above could read."""
    lines = []
    for line in message.splitlines():
        line = re.sub(r"\s+", " ", scrub(line)).strip()
        if SCRATCH.search(line) or line.startswith(VALUES_PREFIX):  # repogym's own harness
            continue  # (its frames, the escaped values its reporter adds): not the project's
        if line and not re.fullmatch(r"[-+?^ ]*", line):
            lines.append(line[:200])
    return lines[:6]
