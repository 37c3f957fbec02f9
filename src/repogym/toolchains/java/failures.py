"""Reading Java test failures for a problem statement: what was checked, what it gave, what
it should have given.

A failed test's message is what Surefire's report holds: the failure's stack trace, trimmed
to the test class's frames (``trimStackTrace``), or ``<type>: <message>`` when it has none.
The assertion libraries say which side is which:

* JUnit 5 ``assertEquals(expected, actual)``: ``expected: <X> but was: <Y>`` (after
  ``message ==>`` when the test gave one); ``assertArrayEquals``: ``array contents differ
  at index [i], expected: <X> but was: <Y>``; ``assertThrows``: ``Expected E to be thrown,
  but nothing was thrown.`` / ``Unexpected exception type thrown, expected: <E> but was:
  <F>``; ``expected: not <null>``;
* JUnit 4: ``expected:<X> but was:<Y>`` (strings compacted, their difference in ``[...]``);
* AssertJ: ``expected: X`` / `` but was: Y`` lines, or ``Expecting actual:`` X ``to
  contain:`` Y; Truth: ``expected: X`` / ``but was : Y``; Hamcrest: ``Expected: is X`` /
  ``but: was Y``;
* any other exception (``java.lang.NullPointerException: ...``) is a raise; a JUnit 5
  ``TimeoutException`` (``timed out after``), or repogym's watchdog stopping the JVM, hangs.

The expression checked comes from the test's source at the line of the first stack frame in
the test's file (``at org.x.FooTest.testBar(FooTest.java:123)``): the actual argument of
the assertion there (``assertEquals``' second, ``assertThat``'s first, ``assertThrows``'
lambda), or the call the line makes. It is said only with names a user of the project
knows: a local of the test bound to a short public expression is replaced by it, any other
local is left out (``getOption("a")``, ``parse(…)``), and a helper of the test class is not
said at all. A call into a library (a class the test imports from a package unrelated to its
own, or ``java.lang``'s) is said whole, since the values are its result, but it names no
function of the project: the reading's ``function`` is the project call inside its arguments
(``Arrays.asList(Util.strip(x))``: ``strip``), or ``""`` when there is none
(``IOUtils.readLines(new StringReader(sb.toString()))``), so no statement says the project's
``readLines`` misbehaves.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from repogym.schemas.calls import FailureReading

_FRAME = re.compile(r"^\s*at (?P<where>[\w$.<>]+)\((?P<file>[\w$]+\.java):(?P<line>\d+)\)",
                    re.M)
_HEAD = re.compile(r"^(?P<type>[a-zA-Z_$][\w$]*(?:\.[\w$]+)+(?:Error|Exception|Failure|"
                   r"FailureWithFacts|Throwable)\w*)(?::\s?(?P<message>.*?))?(?=^\s*at |\Z)",
                   re.S | re.M)
_ASSERTION_TYPES = re.compile(r"AssertionFailedError|AssertionError|ComparisonFailure|"
                              r"AssertionFailedException|MultipleFailuresError|"
                              r"ComparisonFailureWithFacts|AssertionErrorWithFacts")
_TIMEOUT = re.compile(r"\(\) timed out after \d|TestTimedOutException|its JVM was stopped after")
_JUPITER = re.compile(r"expected: <(?P<want>.*)> but was: <(?P<got>.*)>\s*$", re.S)
_JUPITER_ARRAY = re.compile(r"(?:array|iterable) contents differ at index \[(?P<index>\d+)\], "
                            r"expected: <(?P<want>.*)> but was: <(?P<got>.*)>\s*$", re.S)
_JUNIT4 = re.compile(r"expected:<(?P<want>.*)> but was:<(?P<got>.*)>\s*$", re.S)
_TWO_LINES = re.compile(r"^\s*expected\s*: (?P<want>.*?)\n\s*but was\s*: (?P<got>.*?)\s*$",
                        re.S | re.M)
_HAMCREST = re.compile(r"^\s*Expected: (?P<want>.*?)\n\s*but: (?P<got>.*?)\s*$", re.S | re.M)
_ASSERTJ = re.compile(r"^Expecting (?:actual|value):\n\s*(?P<got>.*?)\n(?P<verb>(?:not )?to "
                      r"[\w ,()]+?):?\n\s*(?P<want>.*?)\s*(?:\n(?:but|when|and)\b.*)?$",
                      re.S | re.M)
_NOT_THROWN = re.compile(r"Expected (?P<type>[\w$.]+) to be thrown, but nothing was thrown|"
                         r"^Expected exception: (?P<type2>[\w$.]+)", re.I | re.M)
_OTHER_THROWN = re.compile(r"Unexpected exception type thrown,? ?expected: <(?P<want>[\w$.]+)>"
                           r" but was: <(?P<got>[\w$.]+)>")
_NOT_NULL = re.compile(r"expected: not <null>")
_ASSERTJ_VALUE = re.compile(r"Expecting value to be (?P<want>\w+) but was (?P<got>\w+)")
_IDENTITY = re.compile(r"\b(?:[a-z]\w*\.)+(?P<cls>[A-Z][\w$]*)@[0-9a-f]+")


@dataclass(frozen=True)
class Thrown:
    """The throwable a failed test's report names, and the test's line it points at."""

    type: str
    message: str
    line: int | None


def read_failure(message: str, test_id: str, sources: Mapping[str, str]) -> FailureReading | None:
    """What a failed test's Surefire ``message`` shows (None: nothing readable);
    ``test_id`` is ``<file>::<Class>#<test>`` and ``sources`` the test files' texts."""
    text = (message or "").strip()
    if not text:
        return None
    if _TIMEOUT.search(text):
        return FailureReading(hangs=True)
    file, _, rest = test_id.partition("::")
    thrown = thrown_of(text, file)
    method = re.split(r"[(\[]", rest.partition("#")[2], maxsplit=1)[0]
    checked = _Checked.at(sources.get(file), method, thrown.line)
    if _ASSERTION_TYPES.search(thrown.type) or not thrown.type:
        reading = _assertion(thrown.message, thrown.type, checked)
    else:
        said = f"{thrown.type}: {thrown.message}" if thrown.message else thrown.type
        reading = FailureReading(call=checked.call() if checked else None,
                                 raises=_first_line(said))
    function = checked.function() if checked else None
    return reading if function is None or reading.call is None else \
        reading.model_copy(update={"function": function})


def thrown_of(text: str, test_file: str) -> Thrown:
    """The throwable at the head of ``text`` and the line of the first frame in the test's
    file (by its name: a nested class's frames name the same file)."""
    head = _HEAD.match(text)
    name = test_file.rsplit("/", 1)[-1]
    line = next((int(f.group("line")) for f in _FRAME.finditer(text) if f.group("file") == name),
                None)
    if head is None:
        body = _FRAME.split(text, maxsplit=1)[0] if _FRAME.search(text) else text
        return Thrown("", body.strip(), line)
    return Thrown(head.group("type"), (head.group("message") or "").strip(), line)


def _assertion(message: str, kind: str, checked: _Checked | None) -> FailureReading:
    """An assertion library's failure (``kind``: its type), read for its two sides."""
    call = checked.call() if checked else None
    body = message.split("==>", 1)[1].strip() if "==>" in message else message
    if found := _NOT_THROWN.search(body):
        return FailureReading(call=call, should_raise=found.group("type") or found.group("type2"))
    if found := _OTHER_THROWN.search(body):
        return FailureReading(call=call, raises=found.group("got"),
                              should_raise=found.group("want"))
    if _NOT_NULL.search(body):
        return FailureReading(note=f"{_quoted(call)} returns `null`, where it should return "
                                   "a value")
    if found := _JUPITER_ARRAY.search(body):
        return FailureReading(note=f"element [{found.group('index')}] of "
                                   f"{_quoted(call, 'the result')} is "
                                   f"`{_value(found.group('got'))}`; it should be "
                                   f"`{_value(found.group('want'))}`")
    if found := _ASSERTJ_VALUE.search(body):
        return FailureReading(call=call, actual=found.group("got"), expected=found.group("want"))
    if found := _ASSERTJ.search(body):
        return _assertj(found, call)
    if found := _HAMCREST.search(body):
        got, want = _matcher(_value(found.group("got")), "was "), _value(found.group("want"))
        if want.startswith("is ") and not want.startswith("is not "):
            return FailureReading(call=call, actual=got, expected=_matcher(want, "is "))
        return FailureReading(note=f"{_quoted(call)} returns `{got}`; it should be {want}")
    for pattern in (_JUPITER, _JUNIT4, _TWO_LINES):
        if found := pattern.search(body):
            got, want = _value(found.group("got")), _value(found.group("want"))
            if pattern is _JUNIT4 and "ComparisonFailure" in kind:
                got, want = _uncompact(got, want)
            return FailureReading(call=call, actual=got, expected=want)
    if checked is not None and checked.kind in ("assertTrue", "assertFalse") and call:
        want = "true" if checked.kind == "assertTrue" else "false"
        return FailureReading(call=call, actual="false" if want == "true" else "true",
                              expected=want)
    first = _first_line(body)
    if first:
        return FailureReading(note=f"the test reports: {first}")
    return FailureReading(note=f"a check of {_quoted(call, 'a result')} fails")


def _assertj(found: re.Match[str], call: str | None) -> FailureReading:
    got, want = _value(found.group("got")), _value(found.group("want"))
    verb = " ".join(found.group("verb").split())
    if verb == "to be equal to":
        return FailureReading(call=call, actual=got, expected=want)
    said = f"{_quoted(call)} returns" if call else "it returns"
    return FailureReading(note=f"{said} `{got}`, which is expected {verb} `{want}`")


def _value(text: str) -> str:
    """A value as a message shows it, on one line, without identity hashes (``a.B@1f2e``
    -> ``B``)."""
    one_line = " ".join(text.split()) if "\n" in text else text.strip()
    return _IDENTITY.sub(lambda m: m.group("cls"), one_line)


def _uncompact(got: str, want: str) -> tuple[str, str]:
    """JUnit 4's compacted strings (``[-f]f`` / ``[]f``: the common prefix and suffix kept,
    the difference in brackets) back to their texts (``-ff`` / ``f``)."""
    start = next((i for i, ch in enumerate(want) if ch == "[" and got.startswith(want[:i + 1])),
                 None)
    if start is None:
        return got, want
    for j in range(len(want) - 1, start, -1):
        suffix = want[j + 1:]
        k = len(got) - len(suffix) - 1
        if want[j] == "]" and k > start and got[k] == "]" and got.endswith(suffix):
            prefix = want[:start]
            return prefix + got[start + 1:k] + suffix, prefix + want[start + 1:j] + suffix
    return got, want


def _matcher(text: str, word: str) -> str:
    return text[len(word):] if text.startswith(word) else text


def _quoted(call: str | None, otherwise: str = "it") -> str:
    return f"`{call}`" if call else otherwise


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0].strip()[:200] if text.strip() else ""


# -- Java source, read as text ---------------------------------------------------------------

_ASSERT_CALL = re.compile(r"(?:\b[\w.]+\.)?(?P<kind>assert\w*|assertThat|verify)\s*\(")
_LOCAL = re.compile(r"(?:final\s+)?(?:[\w.<>\[\], ?]+\s+)(?P<name>[a-z_$][\w$]*)\s*=\s*")
_JAVA_LITERAL = re.compile(r'"(?:[^"\\\n]|\\.)*"|\'(?:[^\'\\\n]|\\.)*\'')
_KEYWORDS = frozenset({"new", "null", "true", "false", "this", "super", "class", "return",
                       "final", "var", "instanceof"})


@dataclass(frozen=True)
class _Checked:
    """The check (or statement) at the test's failing line, and the test's text up to it."""

    kind: str  # the assertion's name; "" for a statement that is no assertion
    args: tuple[str, ...]
    region: str
    helpers: frozenset[str]
    library: frozenset[str] = frozenset()  # classes and static methods of other projects

    @classmethod
    def at(cls, source: str | None, method: str, line: int | None) -> _Checked | None:
        if not source or line is None:
            return None
        lines = source.splitlines()
        if not 1 <= line <= len(lines):
            return None
        start = sum(len(ln) + 1 for ln in lines[:line - 1])
        region = _method_region(source, method, start + len(lines[line - 1]))
        helpers = frozenset(re.findall(r"\b(?:void|[A-Z][\w<>\[\]]*|int|long|boolean|double)\s+"
                                       r"([a-z]\w*)\s*\([^;{]*\)\s*(?:throws [\w., ]+)?\{",
                                       source))
        library = library_names(source)
        found = _ASSERT_CALL.search(source, start, start + len(lines[line - 1]))
        if found is not None:
            args = _arguments(source, found.end() - 1)
            return cls(found.group("kind"), tuple(args or ()), region, helpers, library)
        end = source.find(";", start)
        statement = " ".join(source[start:end if end >= 0 else None].split())
        value = re.sub(r"^(?:return\s+|(?:final\s+)?[\w.<>\[\], ?]+\s+[a-z_$][\w$]*\s*=\s*)",
                       "", statement)
        return cls("", (value,), region, helpers, library)

    def actual(self) -> str | None:
        """The argument the check computes (the statement itself when no assertion)."""
        args, kind = self.args, self.kind
        if not args:
            return None
        if kind == "assertThrows" and len(args) >= 2:
            return re.sub(r"^\(\s*\)\s*->\s*\{?\s*|;?\s*\}?$", "", args[1])
        if kind == "assertThat":  # AssertJ, Truth: the only argument; Hamcrest: (reason,)
            return args[1] if len(args) == 3 else args[0]
        if kind in ("assertEquals", "assertArrayEquals", "assertNotEquals", "assertSame",
                    "assertIterableEquals", "assertLinesMatch"):
            if len(args) >= 3 and _is_literal_string(args[0]) and not _is_literal_string(
                    args[2]):
                return args[2]  # JUnit 4: (message, expected, actual)
            return args[1] if len(args) >= 2 else None
        if len(args) >= 2 and _is_literal_string(args[0]):
            return args[1]  # JUnit 4: assertTrue(message, condition)
        return args[0]

    def call(self) -> str | None:
        expr = self.actual()
        return public_expression(expr, self.region, self.helpers, self.library) if expr \
            else None

    def function(self) -> str | None:
        """The project's function the checked call exercises when that call is a library's
        (``""``: none), else None (the call's own name says it)."""
        expr = self.actual()
        return project_function(" ".join(expr.split()), self.library) if expr else None


def project_function(expr: str, library: frozenset[str]) -> str | None:
    """For a library call (``Arrays.asList(Util.strip(x))``), the first call of the
    project's in its arguments (``strip``), or ``""``; None when ``expr`` is no library
    call."""
    args = _library_call(expr, library)
    if args is None:
        return None
    for arg in args:
        inner = project_function(arg, library)
        if inner:
            return inner
        if inner is None and (m := re.search(r"([A-Za-z_$][\w$]*)\s*\((?![^()]*->)", arg)) \
                and m.group(1) not in library and m.group(1) not in _KEYWORDS \
                and m.group(1) not in _OBJECT_METHODS:
            return _outer_callee(arg)
    return ""


def _outer_callee(expr: str) -> str:
    """``Util.strip(x)`` -> ``strip``; ``a.b(c).d()`` -> ``d``: the last call of a chain."""
    head = expr
    while (shorter := re.sub(r"\([^()]*\)", "", head)) != head:
        head = shorter
    return head.rstrip(".").rsplit(".", 1)[-1].strip()


_JAVA_LANG = frozenset({"String", "Integer", "Long", "Short", "Byte", "Math", "StrictMath",
                        "Objects", "Boolean", "Character", "Double", "Float", "System",
                        "Thread", "StringBuilder", "StringBuffer", "Object", "Enum", "Class"})
_OBJECT_METHODS = frozenset({"toString", "hashCode", "equals", "getClass"})
_IMPORT = re.compile(r"^\s*import\s+(?P<static>static\s+)?(?P<name>[\w.]+?)(?:\.\*)?\s*;",
                     re.M)


def library_names(source: str) -> frozenset[str]:
    """The simple names of the classes (and statically imported methods) the test file
    imports from packages unrelated to its own (neither a prefix of the other:
    ``org.apache.commons.io`` for a test in ``org.apache.commons.cli.help``), and
    ``java.lang``'s."""
    own = re.search(r"^\s*package\s+([\w.]+)\s*;", source, re.M)
    mine = own.group(1).split(".") if own else []
    names = set(_JAVA_LANG)
    for m in _IMPORT.finditer(source):
        parts = m.group("name").split(".")
        package = [p for p in parts if p[:1].islower()]  # a.b.C.m -> a.b
        n = min(len(package), len(mine))
        if mine and package[:n] == mine[:n]:
            continue  # the project's own (or unknown: no package line)
        if not m.group(0).rstrip(";").rstrip().endswith("*"):
            names.add(parts[-1])
    return frozenset(names)


def _method_region(source: str, method: str, upto: int) -> str:
    """The test method's text up to ``upto`` (its header, when it holds that offset)."""
    found = None
    for m in re.finditer(rf"\b{re.escape(method)}\s*\([^;{{]*\)\s*(?:throws [\w., ]+)?\{{",
                         source):
        if m.start() <= upto:
            found = m
    return source[found.start():upto] if found else ""


def _arguments(text: str, open_at: int) -> list[str] | None:
    """The top-level, comma-separated arguments of the parenthesis at ``open_at``."""
    args, depth, i, start = [], 0, open_at + 1, open_at + 1
    while i < len(text):
        lit = _JAVA_LITERAL.match(text, i)
        if lit:
            i = lit.end()
            continue
        ch = text[i]
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            if depth == 0:
                args.append(text[start:i])
                return [" ".join(a.split()) for a in args if a.strip()]
            depth -= 1
        elif ch == "," and depth == 0:
            args.append(text[start:i])
            start = i + 1
        i += 1
    return None


def _is_literal_string(expr: str) -> bool:
    return _JAVA_LITERAL.fullmatch(expr.strip()) is not None and expr.strip().startswith('"')


def _without_literals(expr: str) -> str:
    return _JAVA_LITERAL.sub(lambda m: "\x01" * len(m.group()), expr)


def _binding(name: str, region: str) -> str | None:
    """The expression the last ``Type name = ...;`` of the region binds."""
    found = [m for m in _LOCAL.finditer(region) if m.group("name") == name]
    if not found:
        return None
    rest = region[found[-1].end():]
    end = _without_literals(rest).find(";")
    return " ".join(rest[:end].split()) if end >= 0 else None


def public_expression(expr: str, region: str, helpers: frozenset[str],
                      library: frozenset[str] = frozenset()) -> str | None:
    """``expr`` said with names a user of the project knows (see the module doc), or None
    when it makes no call, or calls a helper of the test class; ``library``: the names of
    other projects' classes and static methods (a local bound to one is no receiver worth
    saying)."""
    expr = " ".join(expr.split())
    if re.fullmatch(r"[a-z_$][\w$]*", expr):
        bound = _binding(expr, region)
        expr = bound if bound and "(" in bound else ""
    if not expr or "(" not in expr or "->" in expr:
        return None
    head = re.match(r"([a-z_$][\w$]*)\s*\(", expr)
    if head and (head.group(1) in helpers or head.group(1) in _KEYWORDS):
        return None
    expr = _receiver(expr, region, helpers, library)
    if re.match(r"(\w+)\s*\(", expr) and expr.split("(", 1)[0].strip() in _OBJECT_METHODS:
        return None  # a local's toString(): nothing of the project's is named
    plain = _without_literals(expr)
    for m in reversed(list(re.finditer(r"(?<![\w$.])[a-z_$][\w$]*", plain))):
        after = plain[m.end():].lstrip()
        if m.group() in _KEYWORDS or after.startswith("(") or m.start() == 0:
            continue
        value = _binding(m.group(), region)
        use = value if value is not None and _JAVA_LITERAL.fullmatch(value) or \
            value is not None and re.fullmatch(r"-?\d[\w.]*", value) else "…"
        expr = expr[:m.start()] + (use or "…") + expr[m.end():]
        plain = _without_literals(expr)
    return expr if len(expr) <= 160 else None


def _library_call(expr: str, library: frozenset[str]) -> list[str] | None:
    """The arguments of ``expr`` when it is one call into a library (``IOUtils.readLines(x)``,
    ``new StringReader(x)``, a statically imported ``asList(x)``), else None."""
    found = re.match(r"(?:new\s+)?(?:[a-z][\w]*\.)*(?P<cls>[A-Z][\w$]*)(?:\s*\.\s*"
                     r"(?P<method>[a-z_$][\w$]*))?\s*(?:<[^()]*>)?\s*\(|(?P<fn>[a-z_$][\w$]*)\s*\(",
                     expr)
    if found is None:
        return None
    name = found.group("fn") or found.group("cls")
    if name not in library:
        return None
    end = _close_of(expr, found.end() - 1)
    if end is None or expr[end + 1:].strip():
        return None  # more follows the call (``Foo.of(x).bar()``): the chain is the project's
    return _arguments(expr, found.end() - 1)


def _close_of(text: str, open_at: int) -> int | None:
    """Where the parenthesis at ``open_at`` closes (string and char literals skipped)."""
    depth, i = 0, open_at
    while i < len(text):
        if lit := _JAVA_LITERAL.match(text, i):
            i = lit.end()
            continue
        if text[i] in "([{":
            depth += 1
        elif text[i] in ")]}":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return None


def _receiver(expr: str, region: str, helpers: frozenset[str],
              library: frozenset[str] = frozenset()) -> str:
    """A local receiver (``options.getOption("a")``) replaced by the short public expression
    it is bound to, or dropped (``getOption("a")``)."""
    found = re.match(r"([a-z_$][\w$]*)\s*\.\s*(?=[a-zA-Z_$])", expr)
    if not found or found.group(1) in _KEYWORDS or "." in found.group(1):
        return expr
    if re.match(r"[a-z][\w]*\.[a-z][\w.]*\.[A-Z]", expr):  # a package-qualified class
        return expr
    bound = _binding(found.group(1), region)
    rest = expr[found.end():]
    if bound and len(bound) <= 60 and re.match(r"new [A-Z]|[A-Z][\w$]*\.[a-z]", bound):
        public = public_expression(bound, "", helpers, library)
        if public and "…" not in public:
            return f"{public}.{rest}"
    return rest


__all__ = ["Thrown", "library_names", "public_expression", "read_failure", "thrown_of"]
