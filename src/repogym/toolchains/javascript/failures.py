"""Reading JavaScript test failures for a problem statement: what was checked, what it gave,
what it should have given.

The runners' messages say which side is which, unlike a bare ``a == b``:

* jest and vitest's ``expect``: ``Expected: X`` / ``Received: Y`` (received is computed);
  ``Received function did not throw``; ``expect(received).toBeTruthy()``;
* node's ``assert`` (mocha, node's runner, tap): ``Expected values to be strictly equal:``
  then ``actual !== expected``, or the ``+ actual - expected`` diff; ``Missing expected
  exception``;
* chai: ``expected X to equal Y`` (X computed); uvu: ``Expected values to be ... (is)``
  with ``++actual`` / ``--expected`` lines; ava: ``Difference (- actual, + expected)``;
* node-tap (as repogym's reporter writes it): the assertion's message, then tap's diff
  (``--- expected`` / ``+++ actual``, one ``-``/``+`` line each) or ``found:`` and
  ``wanted:``; ``timeout!`` for a test whose time ran out.

The expression checked comes from the test's source, at the line the message's code frame
(``> 159 |``) or stack (``test/x.js:159:14``) points at: the first argument of
``expect(...)``, ``assert.X(...)``, ``t.is(...)``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping

from repogym.schemas.calls import FailureReading

ANSI = re.compile(r"\x1b\[[0-9;]*m")
# the line the uvu reporter adds with both sides, JSON-escaped, of a check whose values differ
# in characters that do not print (the diff it prints strips them); its ``VALUES`` constant
VALUES_PREFIX = "rg-values: "
_VALUES = re.compile(rf"^{re.escape(VALUES_PREFIX)}(\{{.*\}})$", re.M)
INVISIBLE = ("the value differs from the expected one only in characters that do not print "
             "(such as terminal colour codes)")
_EXPECTED = re.compile(r"^\s*Expected(?: value)?:\s*(.+)$", re.M)
_RECEIVED = re.compile(r"^\s*Received(?: value)?:\s*(.+)$", re.M)
_NODE_STRICT = re.compile(r"Expected values to be (?:strictly |loosely )?(?:deep-)?equal:?\s*\n+"
                          r"\s*(.+?)\s+(!==|!=)\s+(.+?)\s*$", re.M)
_NODE_DIFF = re.compile(r"^\+ actual - expected", re.M)
_CHAI = re.compile(r"expected (.+?) to (?:deeply )?(?:equal|be|eql|strictly equal) (.+?)$", re.M)
_TAP_DIFF = re.compile(r"^--- expected\n\+\+\+ actual\n@@[^\n]*@@\n", re.M)
_TAP_FOUND = re.compile(r"^found: (.+)\nwanted: (.+)$", re.M)
# uvu's diff of two one-line values: ``++<expected>  (Expected)`` and ``--<actual>  (Actual)``
_UVU_SIDE = re.compile(r"^\s*(?:\+\+|--)(.*?)\s*\((Expected|Actual)\)\s*$", re.M)
_NOT_THROWN = re.compile(r"Received function did not throw|Missing expected exception|"
                         r"Expected function to throw|did not throw", re.I)
_TIMEOUT = re.compile(r"Exceeded timeout of \d+ ?ms|timed out in \d+ ?ms|Timeout of \d+ ?ms "
                      r"exceeded|^timeout!$", re.I | re.M)
_ERROR = re.compile(r"^\s*(?:Uncaught )?([A-Z]\w*(?:Error|Exception))(?: \[\w+\])?:\s*(.*)$", re.M)
_FRAME = re.compile(r"^\s*>\s*(\d+)\s*\|", re.M)
_CHECKED = re.compile(
    r"(?:expect\s*\(|assert(?:\.\w+)?\s*\(|\bt\.(?:is|deepEqual|true|false|like|not|throws"
    r"|equal|same|strictSame|ok|notOk|match|has|hasStrict|strictEqual)\s*\()")


def read_failure(message: str, file: str, sources: Mapping[str, str]) -> FailureReading | None:
    """What a failed test's ``message`` shows (None: nothing readable); ``file`` is the test's
    file and ``sources`` the test files' texts, for the expression it checked."""
    text = ANSI.sub("", message or "")
    if not text.strip():
        return None
    call = checked_expression(text, file, sources)
    if _TIMEOUT.search(text):
        return FailureReading(call=call, hangs=True)
    if _NOT_THROWN.search(text):
        return FailureReading(call=call, should_raise="an error")
    compared = _escaped(text) or _compared(text)
    if compared is not None:
        actual, expected = compared
        if actual == "a thrown error":  # chai's to.throw(X), as vitest says it
            return FailureReading(call=call, note=f"it raises an error, but not the one "
                                                  f"expected (`{expected}`)")
        if actual == expected:  # the difference was in what the report left out (colours)
            return FailureReading(call=call, note=INVISIBLE)
        return FailureReading(call=call, actual=actual, expected=expected)
    if m := _ERROR.search(text):
        if m.group(1) not in ("AssertionError",):
            return FailureReading(call=call, raises=f"{m.group(1)}: {m.group(2).strip()}"
                                  if m.group(2).strip() else m.group(1))
    return None


def _escaped(text: str) -> tuple[str, str] | None:
    """(actual, expected) as JSON strings (``"\\u001b[31mfoo\\u001b[39m"``) when the
    reporter gave both sides of values that differ only where nothing prints."""
    m = _VALUES.search(text)
    if m is None:
        return None
    try:
        values = json.loads(m.group(1))
    except ValueError:
        return None
    actual, expected = values.get("actual"), values.get("expected")
    if not (isinstance(actual, str) and isinstance(expected, str)) or actual == expected:
        return None
    return json.dumps(actual), json.dumps(expected)


def _compared(text: str) -> tuple[str, str] | None:
    """(actual, expected) as the message gives them, or None."""
    expected, received = _EXPECTED.search(text), _RECEIVED.search(text)
    if expected and received:
        return received.group(1).strip(), expected.group(1).strip()
    if m := _NODE_STRICT.search(text):
        return m.group(1).strip(), m.group(3).strip()
    if _NODE_DIFF.search(text):
        return _plus_minus(text)
    if uvu := _uvu_sides(text):
        return uvu
    if m := _TAP_DIFF.search(text):
        # one value each side, no context lines (an object's diff shows a line, not a value)
        body = text[m.end():].splitlines()[:2]
        if len(body) == 2 and body[0][:1] == "-" and body[1][:1] == "+":
            return body[1][1:].strip(), body[0][1:].strip()
        return None
    if m := _TAP_FOUND.search(text):
        return m.group(1).strip(), m.group(2).strip()
    if m := _CHAI.search(text):
        return m.group(1).strip(), m.group(2).strip()
    return None


def _uvu_sides(text: str) -> tuple[str, str] | None:
    """(actual, expected) from uvu's diff when each side is one line (either order)."""
    sides: dict[str, list[str]] = {"Actual": [], "Expected": []}
    for m in _UVU_SIDE.finditer(text):
        # uvu pads a value before its type ("false    [boolean]") and shows a space as ·
        sides[m.group(2)].append(re.sub(r"\s+", " ", m.group(1)).replace("·", " ").strip())
    if len(sides["Actual"]) == 1 and len(sides["Expected"]) == 1:
        return sides["Actual"][0], sides["Expected"][0]
    return None


def _plus_minus(text: str) -> tuple[str, str] | None:
    """node's ``+ actual - expected`` diff when each side is one line."""
    head = _NODE_DIFF.search(text)
    body = text[head.end():] if head else text
    plus = [ln[2:].strip() for ln in body.splitlines() if ln.startswith("+ ")]
    minus = [ln[2:].strip() for ln in body.splitlines() if ln.startswith("- ")]
    if len(plus) == 1 and len(minus) == 1:
        return plus[0], minus[0]
    return None


def checked_expression(message: str, file: str, sources: Mapping[str, str]) -> str | None:
    """The first argument of the check at the line the message points at, in ``file``."""
    source = sources.get(file)
    if not source:
        return None
    line = _line_of(message, file)
    if line is None:
        return None
    lines = source.splitlines()
    if not 1 <= line <= len(lines):
        return None
    text = " ".join(part.strip() for part in lines[line - 1:line + 2])
    m = _CHECKED.search(text)
    if m is None:
        return None
    found = _first_argument(text[m.end():])
    call = _as_call(found) if found else None
    return _unaliased(call, source) if call else None


_ROOT = re.compile(r"^[A-Za-z_$][\w$]*")
_SUBSCRIPT = re.compile(r"\[\s*([A-Za-z_$][\w$]*)\s*\]")
_ARGUMENT = re.compile(r"([(,]\s*)([A-Za-z_$][\w$]*)(?=\s*[,)])")
_LOOP_VAR = r"for\s*\(\s*(?:(?:const|let|var)\s+)?{n}\s+(?:in|of)\b"
_BINDING = r"(?:\b(?:const|let|var)\s+{n}\b|^\s*{n}\s*=(?!=)|\(\s*{n}\s*\)\s*=>)"
_VALUE = r"(?:\b(?:const|let|var)\s+|^\s*){n}\s*=(?!=)\s*([^;\n]+)"
_ALIAS = re.compile(r"[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*|\(\))*\.[A-Za-z_$][\w$]*")
_IMPORTED = re.compile(r"^(?:require\s*\(|await\s+import\s*\()")


def _unaliased(call: str, source: str) -> str | None:
    """``call`` in the project's names, not the test's (a statement never shows a
    test-local name): a root bound once in the test file to a member of a project name
    (``let r = kleur.red``: ``r('x')`` is ``kleur.red('x')``) is replaced by it; a call
    whose root is any other local of the test (``val``) or whose root or subscript is a
    loop variable (``kleur[k]()``) names nothing a user could call (None); an argument
    that is a local of the test is shown as ``…``."""
    m = _ROOT.match(call)
    if m is None:
        return call
    root = m.group(0)
    if any(re.search(_LOOP_VAR.format(n=re.escape(n)), source)
           for n in [root, *_SUBSCRIPT.findall(call)]):
        return None
    values = [v.strip() for v in re.findall(_VALUE.format(n=re.escape(root)), source, re.M)]
    if len(values) == 1 and _ALIAS.fullmatch(values[0]):
        call = values[0] + call[m.end():]
    elif values:
        if not any(_IMPORTED.match(v) for v in values):  # a value the test computed
            return None
    elif re.search(_BINDING.format(n=re.escape(root)), source, re.M):  # e.g. a parameter
        return None

    def argument(a: re.Match[str]) -> str:
        local = re.search(_BINDING.format(n=re.escape(a.group(2))), source, re.M)
        return a.group(1) + ("…" if local else a.group(2))
    return _ARGUMENT.sub(argument, call)


_ARROW = re.compile(r"^(?:async\s*)?(?:\(\s*\)|_)\s*=>\s*(?:\{\s*(?:return\s+)?)?(?:await\s+)?")


def _as_call(expression: str) -> str | None:
    """The call a checked expression makes: ``() => parse(x)`` is ``parse(x)``; a call
    whose arguments interpolate the test's own names (``parse(`/${char}`)``) is said by
    its name alone (``parse(…)``): a statement never shows a test-local name."""
    call = _ARROW.sub("", expression).rstrip("; }").strip()
    if not call:
        return None
    if "${" in call and "(" in call:
        return call.split("(", 1)[0] + "(…)"
    return call


def _line_of(message: str, file: str) -> int | None:
    if m := _FRAME.search(message):
        return int(m.group(1))
    base = re.escape(file.rsplit("/", 1)[-1])
    if m := re.search(rf"{base}:(\d+):\d+", message):
        return int(m.group(1))
    return None


def _first_argument(rest: str) -> str | None:
    """The text up to the first top-level ``,`` or the closing ``)``."""
    depth, quote, out = 0, "", []
    for ch in rest:
        if quote:
            out.append(ch)
            if ch == quote:
                quote = ""
            continue
        if ch in "'\"`":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            if depth == 0:
                break
            depth -= 1
        elif ch == "," and depth == 0:
            break
        out.append(ch)
    arg = "".join(out).strip()
    return arg if arg and len(arg) <= 200 else None


__all__ = ["checked_expression", "read_failure"]
