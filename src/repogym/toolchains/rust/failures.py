"""Reading Rust test failures for a problem statement: what was checked, what it gave, what
it should have given.

A failed libtest test's message is what it printed, the panic among it:
``thread 'tests::parses' (123) panicked at src/lib.rs:10:9:`` then the panic's message
(Rust < 1.73: ``thread '...' panicked at '<message>', src/lib.rs:10:9``); the noise line
``note: run with `RUST_BACKTRACE=1` ...`` is dropped. The messages read here:

* ``assertion `left == right` failed`` (``!=``: ``assert_ne!``) with ``left:`` / ``right:``
  lines (Rust < 1.73: ``assertion failed: `(left == right)``` with the values in
  backticks). Which side the code computed is not in the message -- suites write
  ``assert_eq!(actual, expected)`` and ``assert_eq!(expected, actual)`` alike -- so it is
  read from the check's source at the line the panic names: the side the test states (a
  literal, a local bound to one) is the expected one, the other is the call checked. A
  check expanded from a test's own macro points at the macro's call: then the side whose
  value the test's source spells out is the expected one. When nothing tells, both values
  are given without a direction;
* ``assertion failed: <expr>`` (``assert!``): ``<expr>`` should be true (``!<expr>``:
  false); ``<expr> == <literal>`` says what it should be;
* ``called `Option::unwrap()` on a `None` value``, ``called `Result::unwrap()` on an
  `Err` value: E``: the call before ``.unwrap()`` at the panic's column returns ``None`` /
  ``Err(E)``;
* any other panic (``attempt to subtract with overflow``, ``index out of bounds``) is a
  raise; a custom message at an ``assert!`` of the test is that check failing;
* ``should_panic``: ``test did not panic as expected``, ``panic did not contain expected
  string``; a test that returned ``Err``: ``Error: E``; a test killed past its time limit
  hangs.

The expression checked is said only with names a user of the project knows: a local of
the test bound to a short public expression is replaced by it (``let pat =
Pattern::new("a*").unwrap()``), any other local is left out (``matches("a", …)``, or the
receiver dropped), and a call of a helper the tests define is not said at all.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from repogym.schemas.calls import FailureReading
from repogym.toolchains.rust.files import is_test_file, test_spans

_NOTE = re.compile(r"^note: run with `RUST_BACKTRACE=1`.*$\n?", re.M)
_HEADER = re.compile(r"^thread '(?P<thread>[^'\n]*)'(?: \(\d+\))? panicked at "
                     r"(?P<file>[^\s:']+\.rs):(?P<line>\d+):(?P<col>\d+):\n", re.M)
_HEADER_OLD = re.compile(r"^thread '(?P<thread>[^'\n]*)' panicked at '(?P<body>.*?)', "
                         r"(?P<file>[^\s:']+\.rs):(?P<line>\d+)(?::(?P<col>\d+))?\s*$",
                         re.M | re.S)
_EQ = re.compile(r"^assertion `left (?P<op>==|!=) right` failed(?:: (?P<msg>.*?))?\n"
                 r"\s*left: (?P<left>.*)\n\s*right: (?P<right>.*)$", re.S)
_EQ_OLD = re.compile(r"^assertion failed: `\(left (?P<op>==|!=) right\)`\n\s*left: "
                     r"`(?P<left>.*)`,\n\s*right: `(?P<right>.*?)`(?:: (?P<msg>.*))?$", re.S)
_EQ_OLDEST = re.compile(r"^assertion failed: `\(left (?P<op>==|!=) right\)` \(left: "
                        r"`(?P<left>.*)`, right: `(?P<right>.*)`\)(?:: (?P<msg>.*))?$", re.S)
_TRUTH = re.compile(r"^assertion failed: (?P<expr>.+)$", re.S)
_NONE = re.compile(r"^called `Option::unwrap\(\)` on a `None` value$")
_ERR = re.compile(r"^called `Result::unwrap\(\)` on an `Err` value: (?P<value>.*)$", re.S)
_OK = re.compile(r"^called `Result::unwrap_err\(\)` on an `Ok` value: (?P<value>.*)$", re.S)
_NO_PANIC = re.compile(r"^(?:note: )?test did not panic as expected", re.M)
_WRONG_PANIC = re.compile(r"panic did not contain expected string\n\s*panic message: [`\"]"
                          r"(?P<got>.*)[`\"],?\n\s*expected substring: [`\"](?P<want>.*)[`\"]",
                          re.S)
_RETURNED_ERR = re.compile(r"^Error: (?P<value>.+)$", re.M)
_TIME_LIMIT = re.compile(r"killed at its time limit|has been running for over \d+ seconds")
_COMPARE = re.compile(r"^(?P<left>.+?)\s+(?P<op>==|!=|<=|>=|<|>)\s+(?P<right>.+)$", re.S)
_RUNTIME = re.compile(r"attempt to |index out of bounds|range (?:start|end) index|byte index|"
                      r"internal error: entered unreachable code|not (?:yet )?implemented|"
                      r"called `(?:Option|Result)::")


@dataclass(frozen=True)
class Panic:
    """A panic in a test's output: where it happened, and its message."""

    file: str
    line: int
    col: int
    message: str


def read_failure(message: str, test_id: str, sources: Mapping[str, str]) -> FailureReading | None:
    """What a failed libtest test's ``message`` shows (None: nothing readable); ``test_id``
    is ``<file>::<libtest name>`` and ``sources`` the test files' texts."""
    text = _NOTE.sub("", message or "").strip()
    if not text:
        return None
    if _TIME_LIMIT.search(text):
        return FailureReading(hangs=True)
    if _NO_PANIC.search(text):
        return FailureReading(should_raise="a panic")
    wrong = _WRONG_PANIC.search(text)
    if wrong:
        return FailureReading(raises=f"panic: {_unescape(wrong.group('got'))}",
                              should_raise=f"a panic with `{_unescape(wrong.group('want'))}`")
    panic = first_panic(text)
    if panic is not None:
        return _Reader(panic, test_id, sources).read()
    returned = _RETURNED_ERR.search(text)
    if returned:
        return FailureReading(note=f"a call returns the error `{returned.group('value')}`")
    return None


def first_panic(text: str) -> Panic | None:
    """The first panic in ``text``, in either format (its message without the notes)."""
    new, old = _HEADER.search(text), _HEADER_OLD.search(text)
    if new is not None and (old is None or new.start() <= old.start()):
        body = text[new.end():]
        after = re.search(r"^(?:thread '|note: |panic did not contain)", body, re.M)
        return Panic(new.group("file"), int(new.group("line")), int(new.group("col")),
                     (body[:after.start()] if after else body).strip())
    if old is not None:
        return Panic(old.group("file"), int(old.group("line")), int(old.group("col") or 0),
                     old.group("body").strip())
    return None


class _Reader:
    """One panic, read against the test's source."""

    def __init__(self, panic: Panic, test_id: str, sources: Mapping[str, str]) -> None:
        self.panic = panic
        test_file, _, name = test_id.partition("::")
        path, self.source = _source_of(panic.file, test_file, sources)
        self.in_test = self.source is not None and _in_test_code(path, self.source,
                                                                 panic.line)
        self.region = _test_region(self.source, name, panic.line) if self.source else ""
        self.helpers = _test_functions(path, self.source) if self.source else frozenset()

    def read(self) -> FailureReading:
        msg = self.panic.message
        for pattern in (_EQ, _EQ_OLD, _EQ_OLDEST):
            found = pattern.match(msg)
            if found:
                return self._compared(found.group("op"), found.group("left").strip(),
                                      found.group("right").strip())
        found = _TRUTH.match(msg)
        if found:
            return self._truth(" ".join(found.group("expr").split()))
        unwrapped = self._unwrapped(msg)
        if unwrapped is not None:
            return unwrapped
        check = self._check()
        if check is not None and check.kind.endswith("assert") and check.args:
            return self._truth(check.args[0])  # a custom message: the condition is false
        if self.in_test and check is None and not _RUNTIME.match(msg):
            return FailureReading(note=f"the test reports: {_first_line(msg)}")
        return FailureReading(raises=f"panic: {_first_line(msg)}")

    def _check(self) -> Check | None:
        if not self.in_test or self.source is None:
            return None
        return check_at(self.source, self.panic.line, self.panic.col)

    def _public(self, expr: str) -> str | None:
        return public_expression(expr, self.region, self.helpers)

    def _compared(self, op: str, left: str, right: str) -> FailureReading:
        """``assert_eq!`` / ``assert_ne!``: the side the test states is the expected one."""
        check = self._check()
        args = check.args if check is not None and "_" in check.kind else ()
        side = computed_side(args[0], args[1], self.region) if len(args) >= 2 else None
        if side is None:
            side = _side_by_value(self.region, left, right)
        call = self._public(args[side]) if side is not None and len(args) >= 2 else None
        if op == "!=":
            said = f"`{call}` returns" if call else "it returns"
            return FailureReading(note=f"{said} `{left}`, which it should not")
        if side is None:
            return FailureReading(
                note=f"a check compares `{left}` with `{right}`, and they differ")
        got, want = (left, right) if side == 0 else (right, left)
        return FailureReading(call=call, actual=got, expected=want)

    def _truth(self, expr: str) -> FailureReading:
        """``assert!(expr)`` failed: ``expr`` (``!x``: ``x``) is not what it should be."""
        expr = expr.strip()
        negated = expr.startswith("!")
        inner = _unparen(expr[1:] if negated else expr)
        if inner.startswith("matches!(") and (args := _arguments(inner, len("matches!"))):
            return self._pattern(args, negated)
        compared = None if negated else _COMPARE.match(inner)
        if compared and _balanced(compared.group("left")):
            return self._comparison(compared.group("left"), compared.group("op"),
                                    compared.group("right"))
        call = self._public(inner)
        if call is None:
            return FailureReading(note=f"the check `{expr}` fails")
        want, got = ("false", "true") if negated else ("true", "false")
        return FailureReading(call=call, actual=got, expected=want)

    def _pattern(self, args: list[str], negated: bool) -> FailureReading:
        """``assert!(matches!(value, Pattern))`` failed."""
        call = self._public(args[0]) if len(args) >= 2 else None
        if call is None:
            return FailureReading(note=f"the check `{'!' if negated else ''}matches!"
                                       f"({', '.join(args)})` fails")
        should = "should not match" if negated else "should match"
        return FailureReading(note=f"`{call}` {should} `{args[1]}`, but it does"
                                   f"{'' if negated else ' not'}")

    def _comparison(self, left: str, op: str, right: str) -> FailureReading:
        """``assert!(a == b)``: no values shown; what the computed side should be."""
        side = computed_side(left, right, self.region) if op == "==" else None
        if side is not None:
            computed, stated = (left, right) if side == 0 else (right, left)
            call = self._public(computed)
            if call:
                return FailureReading(note=f"`{call}` should be `{stated}`, but it is not")
        return FailureReading(note=f"the check `{left} {op} {right}` fails")

    def _unwrapped(self, msg: str) -> FailureReading | None:
        """``.unwrap()`` / ``.expect(..)`` on ``None`` or ``Err`` (``.unwrap_err()`` on
        ``Ok``): the call before it, at the panic's column, returns that."""
        outcome = self._unwrap_outcome(msg)
        if outcome is None:
            return None
        before = None
        if self.in_test and self.source is not None:
            before = call_before(self.source, self.panic.line, self.panic.col)
        call = self._public(before) if before else None
        if call is None:
            return FailureReading(raises=f"panic: {_first_line(msg)}")
        return FailureReading(call=call, actual=outcome[0], expected=outcome[1])

    def _unwrap_outcome(self, msg: str) -> tuple[str, str] | None:
        """(what the unwrapped call returned, what it should have), or None."""
        if _NONE.match(msg):
            return "None", "Some(…)"
        if err := _ERR.match(msg):
            return f"Err({err.group('value').strip()})", "Ok(…)"
        if ok := _OK.match(msg):
            return f"Ok({ok.group('value').strip()})", "Err(…)"
        said = self._expect_text()
        if said is None:
            return None
        method, text = said
        if method == "expect" and msg == text:
            return "None", "Some(…)"
        if not msg.startswith(text + ": "):
            return None
        value = msg[len(text) + 2:].strip()
        return (f"Err({value})", "Ok(…)") if method == "expect" else (f"Ok({value})", "Err(…)")

    def _expect_text(self) -> tuple[str, str] | None:
        """``("expect", "msg")`` for an ``.expect("msg")`` at the panic's column."""
        if not self.in_test or self.source is None:
            return None
        lines = self.source.splitlines()
        if not 1 <= self.panic.line <= len(lines):
            return None
        at = _offset(self.source, self.panic.line) + max(self.panic.col - 1, 0)
        found = re.compile(r"(expect(?:_err)?)\s*\(").match(self.source, at)
        args = _arguments(self.source, found.end() - 1) if found else None
        if not found or not args or not re.fullmatch(r'"(?:[^"\\]|\\.)*"', args[0]):
            return None
        return found.group(1), args[0][1:-1].replace('\\"', '"').replace("\\\\", "\\")


def _source_of(file: str, test_file: str,
               sources: Mapping[str, str]) -> tuple[str, str | None]:
    """The path and text of the file a panic names: as given, or the test's file when one
    path ends with the other (a workspace member's paths)."""
    if file in sources:
        return file, sources[file]
    if test_file in sources and (test_file.endswith("/" + file) or
                                 file.endswith("/" + test_file)):
        return test_file, sources[test_file]
    return file, None


def _in_test_code(path: str, text: str, line: int) -> bool:
    """Whether ``line`` of ``path`` is test code (a test file, or a test span of a source)."""
    return is_test_file(path) or any(a <= line <= b for a, b in test_spans(text))


def _test_functions(path: str, text: str) -> frozenset[str]:
    """The functions the test code of ``path`` defines (a test's helpers)."""
    whole = is_test_file(path)
    spans = () if whole else test_spans(text)
    return frozenset(m.group(1) for n, line in enumerate(text.splitlines(), 1)
                     for m in re.finditer(r"\bfn\s+([A-Za-z_]\w*)", line)
                     if whole or any(a <= n <= b for a, b in spans))


def _test_region(source: str, name: str, line: int) -> str:
    """The text of the test function ``name`` (a libtest name's last part) up to the end of
    ``line`` when the function holds it (a local then means what it was last bound to
    there); for a test a macro defines, the lines naming it."""
    short = name.rsplit("::", 1)[-1]
    found = re.search(rf"\bfn\s+{re.escape(short)}\s*[(<]", source)
    start = source.find("{", found.end()) if found else -1
    end = _closing(source, start) if found and start >= 0 else None
    if found is None or end is None:
        return "\n".join(ln for ln in source.splitlines()
                         if re.search(rf"\b{re.escape(short)}\b", ln))
    line_end = _offset(source, line + 1) - 1
    return source[found.start():line_end if found.start() <= line_end <= end else end + 1]


def _offset(source: str, line: int) -> int:
    """Where 1-based ``line`` of ``source`` starts (past the end: the text's length + 1)."""
    at = 0
    for _ in range(line - 1):
        nxt = source.find("\n", at)
        if nxt < 0:
            return len(source) + 1
        at = nxt + 1
    return at


def _first_line(msg: str) -> str:
    return msg.strip().splitlines()[0].strip()[:200] if msg.strip() else ""


def _unescape(text: str) -> str:
    return text.replace('\\"', '"')


# -- Rust source, read as text -------------------------------------------------------------

_PLACEHOLDER = "\x01S\x01"  # a literal, in an expression read for its names
_CHAR = re.compile(r"'(?:\\(?:x[0-9a-fA-F]{2}|u\{[0-9a-fA-F]{1,6}\}|.)|[^\\'\n])'")
_RAW = re.compile(r'b?r(#*)"')
_CHECK = re.compile(r"(?:(?:std|core)::)?(?P<kind>(?:debug_)?assert(?:_eq|_ne)?)!\s*[(\[{]")
_LITERAL_WORDS = frozenset({"true", "false", "None", "Some", "Ok", "Err", "vec", "S"})
_PRIMITIVES = frozenset({"u8", "u16", "u32", "u64", "u128", "usize", "i8", "i16", "i32", "i64",
                         "i128", "isize", "f32", "f64", "char", "str", "bool"})
_STD_TYPES = frozenset({"String", "Vec", "Path", "PathBuf", "Box", "HashMap", "HashSet",
                        "BTreeMap", "BTreeSet", "VecDeque", "OsString", "OsStr", "Cow", "Rc",
                        "Arc", "Duration", "char", "std", "core", "alloc"}) | _PRIMITIVES
_STD_METHODS = frozenset({"to_string", "to_owned", "into", "to_vec", "as_str", "as_bytes",
                          "as_slice", "as_ref", "iter", "into_iter", "collect", "cloned",
                          "copied", "as_path", "as_os_str", "to_path_buf", "borrow"})
_KEYWORDS = frozenset({"as", "let", "mut", "ref", "move", "if", "else", "match", "in", "for",
                       "return", "self", "Self", "crate", "super", "dyn", "impl", "where",
                       "true", "false"})
_EXPECTED_NAMES = re.compile(r"^(?:expected?|want(?:ed)?|should|correct|reference)(?:_\w*)?$"
                             r"|_expected$")
_ACTUAL_NAMES = re.compile(r"^(?:actual|got|result|res|output|out|computed)(?:_\w*)?$")


@dataclass(frozen=True)
class Check:
    """An assertion macro in a test's source: ``assert_eq``, ``assert`` ... and its
    arguments as written (whitespace folded)."""

    kind: str
    args: tuple[str, ...]


def check_at(source: str, line: int, col: int) -> Check | None:
    """The assertion macro a panic at ``line``:``col`` (1-based) names, when there is one."""
    lines = source.splitlines()
    if not 1 <= line <= len(lines):
        return None
    start = _offset(source, line)
    found = _CHECK.match(source, start + max(col - 1, 0))
    if found is None:
        found = _CHECK.search(source, start, start + len(lines[line - 1]))
    if found is None:
        return None
    args = _arguments(source, found.end() - 1)
    return Check(found.group("kind"), tuple(args)) if args is not None else None


def _arguments(text: str, open_at: int) -> list[str] | None:
    """The top-level, comma-separated arguments of the bracket at ``open_at``."""
    args, depth, i, start = [], 0, open_at + 1, open_at + 1
    while i < len(text):
        skip = _literal_end(text, i)
        if skip is not None:
            i = skip
            continue
        ch = text[i]
        if text.startswith("//", i):
            i = text.find("\n", i) if "\n" in text[i:] else len(text)
            continue
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


def _literal_end(text: str, i: int) -> int | None:
    """Where a string or char literal starting at ``i`` ends (None: no literal there)."""
    if i > 0 and (text[i - 1].isalnum() or text[i - 1] == "_"):
        return None
    raw = _RAW.match(text, i)
    if raw:
        close = text.find('"' + raw.group(1), raw.end())
        return len(text) if close < 0 else close + 1 + len(raw.group(1))
    at = i + 1 if text.startswith('b"', i) or text.startswith("b'", i) else i
    if at < len(text) and text[at] == '"':
        j = at + 1
        while j < len(text) and text[j] != '"':
            j += 2 if text[j] == "\\" else 1
        return j + 1
    char = _CHAR.match(text, at)
    return char.end() if char else None


def _closing(text: str, open_at: int) -> int | None:
    """The index of the bracket closing the one at ``open_at``."""
    depth, i = 0, open_at
    while i < len(text):
        skip = _literal_end(text, i)
        if skip is not None:
            i = skip
            continue
        depth += (text[i] in "([{") - (text[i] in ")]}")
        if depth == 0:
            return i
        i += 1
    return None


def _without_literals(expr: str) -> str:
    """``expr`` with every string and char literal replaced by ``S``."""
    out, i = [], 0
    while i < len(expr):
        end = _literal_end(expr, i)
        if end is not None:
            out.append(_PLACEHOLDER)
            i = end
        else:
            out.append(expr[i])
            i += 1
    return "".join(out)


def stated_level(expr: str, region: str) -> int:
    """How plainly ``expr`` is a value the test states: 3 a literal (``"a"``, ``[1, 2]``,
    ``Some(3)``), 2 a value built from the standard library or the project's types
    (``PathBuf::from("a")``, ``u64::MAX``, ``Token::Char('a')``), 1 unknown (a constant, a
    macro's argument), 0 computed (a call, a local bound to one)."""
    expr = expr.strip().lstrip("&*").strip()
    if re.fullmatch(r"[a-z_]\w*", expr):
        return _local_level(expr, region)
    text = _without_literals(expr)
    if "$" in text:
        return 1
    return min((_token_level(text, m) for m in re.finditer(r"(?<![\w$])[A-Za-z_]\w*", text)
                if not re.fullmatch(r"\d\w*", m.group())), default=3)


def _local_level(name: str, region: str) -> int:
    bound = _binding(name, region)
    if bound is not None and not re.fullmatch(r"[a-z_]\w*", bound.strip()):
        return stated_level(bound, "")
    if _EXPECTED_NAMES.search(name):
        return 3
    return 0 if _ACTUAL_NAMES.match(name) else 1


def _token_level(text: str, m: re.Match[str]) -> int:
    word, before, after = m.group(), text[:m.start()].rstrip(), text[m.end():].lstrip()
    if word in _LITERAL_WORDS or after.startswith("::"):
        return 3
    if after.startswith("!"):
        return 1
    if before.endswith("."):
        return 2 if word in _STD_METHODS else 0
    if before.endswith("::"):
        owner = re.search(r"(\w+)\s*(?:::\s*<[^<>]*>\s*)?::$", before)
        if word.isupper() and len(word) > 1:
            return 1  # a constant: the project's (``i8::MAX_STR_LEN``) or std's
        if owner and owner.group(1) in _STD_TYPES:
            return 2
        return 2 if word[0].isupper() else 0
    if word[0].isupper():
        return 1 if word.isupper() and len(word) > 1 else 2
    return 0 if after.startswith("(") else 1


def computed_side(left: str, right: str, region: str) -> int | None:
    """Which of two compared expressions the code computes (0 or 1): the one the test does
    not state (:func:`stated_level`), None when they are alike."""
    levels = stated_level(left, region), stated_level(right, region)
    if levels[0] == levels[1] or min(levels) > 1:
        return None
    return 0 if levels[0] < levels[1] else 1


def _side_by_value(region: str, left: str, right: str) -> int | None:
    """The computed side (0: left) when the test's source spells out only the other
    side's value (a table of cases a macro expands into tests)."""
    def spelled(value: str) -> bool:
        if len(value) < 2:
            return False
        return re.search(rf"(?<![\w.]){re.escape(value)}(?![\w.])", region) is not None

    shown = spelled(left), spelled(right)
    return None if shown[0] == shown[1] else (1 if shown[0] else 0)


def _binding(name: str, region: str) -> str | None:
    """The expression the last ``let name = ...;`` of the region binds."""
    found = list(re.finditer(rf"\blet\s+(?:mut\s+)?{re.escape(name)}\s*(?::[^=;]+)?=\s*",
                             region))
    if not found:
        return None
    rest = region[found[-1].end():]
    end = _statement_end(rest)
    return " ".join(rest[:end].split()) if end is not None else None


def _statement_end(text: str) -> int | None:
    depth, i = 0, 0
    while i < len(text):
        skip = _literal_end(text, i)
        if skip is not None:
            i = skip
            continue
        depth += (text[i] in "([{") - (text[i] in ")]}")
        if text[i] == ";" and depth == 0:
            return i
        i += 1
    return None


def public_expression(expr: str, region: str, helpers: frozenset[str]) -> str | None:
    """``expr`` said with names a user of the project knows (see the module doc), or None
    when it makes no call and reads no field, or calls a helper of the tests."""
    expr = " ".join(expr.strip().lstrip("&*").rstrip("?").split())
    if re.fullmatch(r"[a-z_]\w*", expr):
        bound = _binding(expr, region)
        expr = bound.rstrip("?") if bound and "(" in bound else ""
    if not expr or "$" in expr or not re.search(r"[(.]|::", expr):
        return None
    head = re.match(r"([a-z_]\w*)\s*\(", expr)
    if head and head.group(1) in helpers:
        return None
    expr = _receiver(expr, region, helpers)
    text = _without_literals(expr)
    for m in reversed(list(re.finditer(r"(?<![\w$])[a-z_]\w*", text))):
        if _is_variable(text, m) and m.start() > 0:
            value = _binding(m.group(), region)
            use = value if value is not None and stated_level(value, "") == 3 else "…"
            expr = expr[:_at(expr, text, m.start())] + use + expr[_at(expr, text, m.end()):]
    expr = re.sub(r"&?format!\([^()]*…[^()]*\)", "…", expr)
    return expr if len(expr) <= 160 else None


def _receiver(expr: str, region: str, helpers: frozenset[str]) -> str:
    """A local receiver (``pat.matches("a")``) replaced by the short public expression it is
    bound to, or dropped (``matches("a")``)."""
    found = re.match(r"([a-z_]\w*)\s*\.\s*", expr)
    if not found or found.group(1) in _KEYWORDS:
        return expr
    bound = _binding(found.group(1), region)
    rest = expr[found.end():]
    if bound and len(bound) <= 60 and " " not in _without_literals(bound).strip() and \
            re.match(r"[A-Z]|[a-z_]\w*\s*(?:\(|::)", bound):  # not another local's method
        public = public_expression(bound, "", helpers)
        if public and "…" not in public:
            return f"{public}.{rest}"
    return rest


def _is_variable(text: str, m: re.Match[str]) -> bool:
    word, before, after = m.group(), text[:m.start()].rstrip(), text[m.end():].lstrip()
    if word in _KEYWORDS or word in _PRIMITIVES or word in _LITERAL_WORDS:
        return False
    return not (before.endswith((".", "::")) or after.startswith(("(", "!", "::"))
                or re.fullmatch(r"\d\w*", word))


def _at(expr: str, text: str, index: int) -> int:
    """``text`` (``expr`` without literals) index ``index`` as an index of ``expr``."""
    out_i, i = 0, 0
    while i < len(expr) and out_i < index:
        end = _literal_end(expr, i)
        if end is not None:
            out_i += len(_PLACEHOLDER)
            i = end
        else:
            out_i += 1
            i += 1
    return i


def call_before(source: str, line: int, col: int) -> str | None:
    """The expression ``.unwrap()`` (or ``.expect(...)``) at ``line``:``col`` is called on."""
    lines = source.splitlines()
    if not 1 <= line <= len(lines):
        return None
    current = lines[line - 1]
    head = current[:max(col - 1, 0)]
    if not re.match(r"(?:unwrap|expect|unwrap_err|expect_err)\b", current[len(head):]):
        return None
    text = " ".join([*(ln.strip() for ln in lines[max(0, line - 6):line - 1]),
                     head.strip()]).rstrip()
    if not text.endswith("."):
        return None
    return _trailing_expression(text[:-1].rstrip()) or None


def _trailing_expression(text: str) -> str:
    """The expression that ends ``text``, walking back over balanced brackets."""
    depth, i = 0, len(text)
    while i > 0:
        ch = text[i - 1]
        if ch == '"':
            j = text.rfind('"', 0, i - 1)
            while j > 0 and text[j - 1] == "\\":
                j = text.rfind('"', 0, j - 1)
            i = max(j, 0)
            continue
        if ch in ")]}":
            depth += 1
        elif ch in "([{":
            if depth == 0:
                break
            depth -= 1
        elif depth == 0 and (ch.isspace() or ch in "=,;!&*|<>+-"):
            if not (ch in "<>" and text[:i].endswith(("::<", "->"))):
                break
        i -= 1
    return text[i:].strip()


def _unparen(expr: str) -> str:
    expr = expr.strip()
    if expr.startswith("(") and _closing(expr, 0) == len(expr) - 1:
        return expr[1:-1].strip()
    return expr


def _balanced(text: str) -> bool:
    depth = 0
    for ch in _without_literals(text):
        depth += (ch in "([{") - (ch in ")]}")
        if depth < 0:
            return False
    return depth == 0


__all__ = ["Check", "Panic", "call_before", "check_at", "computed_side", "first_panic",
           "public_expression", "read_failure", "stated_level"]
