"""Offline problem statements: an issue written from what the failing tests observed.

The statement names each broken behaviour as a user meets it -- the public call, what it
returns (or raises, or that it never returns) and what it should return -- from the best
evidence there is (:class:`~repogym.schemas.calls.StatementEvidence`):

1. **call traces** of the F2P tests in the broken and the gold state: per test, the first
   call whose outcome differs (one whose broken result the failure message shows first);
2. the **failure message**, read for which side of a comparison the test computes: pytest's
   ``where`` lines, the test's source (a literal on one side), or a traced call's result;
   when nothing tells, both values are given *without* saying which is which -- many suites
   write ``assert expected == actual``, so the side of ``==`` proves nothing;
3. the message itself, scrubbed, when it reads as nothing above.

Every broken function gets its own sentences (a combined bug breaks several). The wording
(title, opening, sentence forms, closing) is one of several, chosen from the candidate's
instance id, so the same candidate always reads the same and no one template dominates.
A statement never shows an object address, a test's name or a name only the tests know,
and never quotes a line of the patch (:func:`leaks`; such a sentence is dropped).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, replace
from typing import Iterable, Mapping, Sequence

from repogym.generators.diffs import diff_text_lines
from repogym.schemas.calls import CallKind, CallRecord, StatementEvidence
from repogym.schemas.records import Candidate, short_hash

MAX_FUNCTIONS = 6  # broken functions described
MAX_EXAMPLES = 2  # calls shown per function
MAX_VALUE = 120  # characters of a value shown
MIN_LEAK_CHARS = 8


def leaks(text: str, patch: str) -> list[str]:
    """The patch lines (added or removed, stripped) that the text quotes."""
    norm = re.sub(r"\s+", " ", text)
    out = []
    for line in diff_text_lines(patch):
        probe = re.sub(r"\s+", " ", line).strip()
        if len(probe) >= MIN_LEAK_CHARS and probe in norm:
            out.append(probe)
    return out


def evidence_from_messages(f2p: Sequence[str], messages: Mapping[str, str]) -> StatementEvidence:
    """Evidence without call traces: the F2P tests and their failure messages (other keys of
    ``messages``, such as a verdict's ``"oracle"``, are ignored)."""
    return StatementEvidence(fail_to_pass=tuple(f2p),
                             messages={t: messages[t] for t in f2p if t in messages})


# -- what a statement says --------------------------------------------------------------


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


# -- evidence 1: call traces -------------------------------------------------------------

_TIMEOUT = re.compile(r"\bTimeout\b|\btimed out\b", re.I)


def _display(value: str) -> str:
    value = scrub(value)
    return value if len(value) <= MAX_VALUE else value[:MAX_VALUE - 1] + "…"


def _from_record(record: CallRecord) -> Observed:
    """What the broken call did (its counterpart's outcome is added by the caller)."""
    call = _display(record.call)
    if record.receiver and not record.shows_receiver and record.kind is not CallKind.property \
            and not re.fullmatch(r"<\w+ object>", record.receiver):
        call = f"{call}` on `{_display(record.receiver)}"
    hung = not record.finished or bool(record.raised and _TIMEOUT.search(record.raised))
    return Observed(function=record.function.split(".<locals>.")[0], call=call,
                    returns=None if record.result is None else _display(record.result),
                    raises=None if hung or record.raised is None else _display(record.raised),
                    hangs=hung)


def _with_expected(observed: Observed, gold: CallRecord | None) -> Observed:
    """``observed`` with what the gold run's call did as what it should do."""
    if gold is None or not gold.finished:
        return observed
    if gold.raised is not None:
        return replace(observed, should_raise=_display(gold.raised))
    return replace(observed, should_return=_display(gold.result or ""))


def _pairs(broken: Sequence[CallRecord],
           gold: Sequence[CallRecord]) -> list[tuple[CallRecord, CallRecord | None]]:
    """Each broken call with the same call in the gold run (in order; None: no match)."""
    used: set[int] = set()
    out: list[tuple[CallRecord, CallRecord | None]] = []
    for rec in broken:
        match = next((i for i, g in enumerate(gold) if i not in used and rec.same_call(g)), None)
        if match is None:  # the instance's state may differ: the same call on it
            match = next((i for i, g in enumerate(gold) if i not in used
                          and (g.function, g.kind, g.args) == (rec.function, rec.kind, rec.args)),
                         None)
        if match is not None:
            used.add(match)
        out.append((rec, None if match is None else gold[match]))
    return out


def _shows(message: str, value: str) -> bool:
    """The message shows ``value`` as a whole token (``7`` in ``assert 7 == 9``)."""
    return re.search(rf"(?<![\w.]){re.escape(value)}(?![\w.])", message) is not None


def _traced(test: str, ev: StatementEvidence) -> Observed | None:
    """The first traced call of ``test`` that the bug changes, with what it should do.

    A call whose broken result the failure message shows is preferred; a call still
    running when the run was stopped, in a test that hung, is that test's behaviour.
    """
    if ev.broken is None or ev.gold is None:
        return None
    message = ev.messages.get(test, "")
    hung = test in ev.hung or bool(_TIMEOUT.search(message))  # else a stop says nothing
    changed = [(b, g) for b, g in _pairs(ev.broken.of(test), ev.gold.of(test))
               if (b.finished and g is not None and not b.same_outcome(g))
               or (not b.finished and hung)]
    if not changed:
        return None
    shown = [(b, g) for b, g in changed if b.result and _shows(message, b.result)]
    broken, gold = (shown or changed)[0]
    return _with_expected(_from_record(broken), gold)


# -- evidence 2: failure messages ---------------------------------------------------------

_OBJECT = re.compile(r"<([\w.]+) object at 0x[0-9a-fA-F]+>")
_FUNCTION = re.compile(r"<(?:function|bound method|built-in method) ([\w.<>]+)(?: of <[^<>]*>)?"
                       r"(?: at 0x[0-9a-fA-F]+)?>")
# ``at 0x..`` (default reprs), ``id='..'`` (mocks), a bare 64-bit heap pointer; a hex *value*
# such as ``'0xff'`` stays
_ADDRESS = re.compile(r"\s*\bat 0x[0-9a-fA-F]+| id='\d+'|\b0x(?:7f|55|56)[0-9a-fA-F]{10}\b")


def _object_text(match: re.Match[str]) -> str:
    module, _, name = match.group(1).rpartition(".")
    return "<object>" if _test_module(module) else f"<{name} object>"


def _function_text(match: re.Match[str]) -> str:
    """A closure a project function returns reads as ``outer(...)``; any other function
    as ``<function>`` (a message cannot tell the project's from the tests' own)."""
    name = match.group(1).strip()
    outer, local, _ = name.partition(".<locals>.")
    if local and "<" not in outer and not outer.split(".")[-1].startswith("test"):
        return f"{outer}(...)"
    return "<function>"


def _test_module(module: str) -> bool:
    parts = module.split(".")
    return any(p.startswith("test_") or p.endswith("_test") or p in ("tests", "test", "conftest")
               for p in parts if p)


def scrub(text: str) -> str:
    """``text`` without object addresses, and without the names of the tests' own objects:
    ``<pkg.X object at 0x..>`` -> ``<X object>``, a lambda or a test's local function ->
    ``<function>``, a test module's object -> ``<object>``."""
    text = _OBJECT.sub(_object_text, text)
    text = _FUNCTION.sub(_function_text, text)
    return _ADDRESS.sub("", text)


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
    if (m := _OBJECT.fullmatch(value)) and _test_module(m.group(1).rpartition(".")[0]):
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


@dataclass(frozen=True)
class _Comparison:
    """A failed comparison: its two sides as the message shows them, and, when known,
    which side the code computed (0 or 1) and by which call."""

    op: str
    sides: tuple[str, str]
    computed: int | None = None
    call: str | None = None


def _pytest_assert(lines: Sequence[str]) -> _Comparison | Observed | None:
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
        return _Comparison(op, (_expand(left, wheres), _expand(right, wheres)))
    sides = [left, right]
    sides[1 - computed] = _expand(sides[1 - computed], wheres)
    return _Comparison(op, (sides[0], sides[1]), computed, call)


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


_DIFFER = re.compile(r"^(?:Lists|Tuples|Sequences|Dicts|Sets) differ: ")
_PLACES = re.compile(r" within [\d.e+-]+ (?:places|delta).*$")
_NOT_FOUND = re.compile(r"^(.+?) not found in (.+)$")


def _unittest_compare(first: str) -> _Comparison | None:
    """unittest's ``first != second`` (assertEqual and kin) and ``member not found in
    container`` (assertIn): the sides in the order the test passed them."""
    if m := _NOT_FOUND.match(first):
        return _Comparison("in", (m.group(1).strip(), m.group(2).strip()))
    split = _split_top(_PLACES.sub("", _DIFFER.sub("", first)))
    if split is None or split[1] != "!=":
        return None
    return _Comparison("==", (split[0], split[2]))


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
_ERROR = re.compile(r"^((?:[A-Za-z_]\w*\.)*[A-Z]\w*)(?::\s*(.*))?$")  # exconly(): "Type: text"


def _special(lines: Sequence[str]) -> Observed | None:
    """Messages with a fixed form: not raised, hangs, mocks, regexes, truth, None, errors."""
    first = lines[0].strip()
    for pattern in _NOT_RAISED:
        if m := pattern.match(first):
            return Observed(should_raise=next(g for g in m.groups() if g))
    if _TIMEOUT.search(first):
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
    if m := _ERROR.match(first):
        return Observed(raises=f"{m.group(1).rsplit('.', 1)[-1]}: {m.group(2)}" if m.group(2)
                        else m.group(1).rsplit(".", 1)[-1])
    return None


def _times(count: str) -> str:
    return "once" if count == "1" else f"{count} times"


def _read_message(message: str) -> Observed | _Comparison | None:
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


# -- evidence 2b: the test's source, for which side of a comparison is computed ------------

_EQ_METHODS = {"assertEqual", "assertEquals", "assertListEqual", "assertTupleEqual",
               "assertDictEqual", "assertSetEqual", "assertSequenceEqual",
               "assertMultiLineEqual", "assertAlmostEqual", "assertCountEqual", "assertIn"}


@dataclass(frozen=True)
class _SourceCheck:
    """A comparison in a test's source (``assert a == b``, ``assertEqual(a, b)``...)."""

    op: str
    left: ast.expr
    right: ast.expr


def _test_function(source: str, nodeid: str) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    parts = nodeid.split("::")[1:]
    if not parts:
        return None
    try:
        body: list[ast.stmt] = ast.parse(source).body
    except (SyntaxError, ValueError):
        return None
    *classes, name = [p.split("[")[0] for p in parts]
    for klass in classes:
        found = next((n for n in body if isinstance(n, ast.ClassDef) and n.name == klass), None)
        if found is None:
            return None
        body = found.body
    return next((n for n in body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
                 and n.name == name), None)


def _checks(func: ast.AST) -> list[_SourceCheck]:
    out = []
    for node in ast.walk(func):
        if isinstance(node, ast.Assert) and isinstance(node.test, ast.Compare) and \
                len(node.test.ops) == 1:
            op = {ast.Eq: "==", ast.NotEq: "!=", ast.In: "in"}.get(type(node.test.ops[0]))
            if op:
                out.append(_SourceCheck(op, node.test.left, node.test.comparators[0]))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                node.func.attr in _EQ_METHODS and len(node.args) >= 2:
            op = "in" if node.func.attr == "assertIn" else "=="
            out.append(_SourceCheck(op, node.args[0], node.args[1]))
    return out


def _assignments(func: ast.AST) -> dict[str, ast.expr]:
    """Simple local assignments ``name = value`` in the test (the last one wins)."""
    out: dict[str, ast.expr] = {}
    for node in ast.walk(func):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and \
                isinstance(node.targets[0], ast.Name):
            out[node.targets[0].id] = node.value
    return out


def _literal(node: ast.expr, assigned: Mapping[str, ast.expr]) -> bool:
    if isinstance(node, ast.Name) and node.id in assigned:
        node = assigned[node.id]
    try:
        ast.literal_eval(node)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return False
    return True


def _computes(node: ast.expr, assigned: Mapping[str, ast.expr], params: set[str]) -> bool | None:
    """True: the side runs code (a call, an attribute, a name bound to one); False: a value
    the test states (a literal, or a parameter of a parametrized test); None: unknown."""
    if _literal(node, assigned) or isinstance(node, ast.Name) and node.id in params:
        return False
    if isinstance(node, ast.Name) and node.id in assigned:
        return _computes(assigned[node.id], {}, params)
    if any(isinstance(n, (ast.Call, ast.Attribute, ast.BinOp, ast.Subscript))
           for n in ast.walk(node)):
        return True
    return None


def _source_side(comparison: _Comparison, test: str,
                 sources: Mapping[str, str]) -> tuple[int | None, str | None]:
    """Which side of ``comparison`` the test computes, from its source, and the call."""
    source = sources.get(test.split("::")[0])
    func = _test_function(source, test) if source else None
    if func is None:
        return None, None
    assigned = _assignments(func)
    params = {a.arg for a in func.args.args} - {"self"}
    checks = [c for c in _checks(func) if (c.op == "in") == (comparison.op == "in")]
    checks = [c for c in checks if _states(c, comparison, assigned)] or checks
    sides: set[int | None] = set()
    calls = []
    for check in checks:
        left, right = (_computes(n, assigned, params) for n in (check.left, check.right))
        if left is True and right is False:
            sides.add(0)
            calls.append(_call_text(check.left, assigned, func))
        elif right is True and left is False:
            sides.add(1)
            calls.append(_call_text(check.right, assigned, func))
        else:
            sides.add(None)
    if len(sides) != 1 or None in sides:
        return None, None
    known = {c for c in calls if c}
    return sides.pop(), known.pop() if len(known) == 1 else None


def _states(check: _SourceCheck, comparison: _Comparison,
            assigned: Mapping[str, ast.expr]) -> bool:
    """The check states, as a literal on one side, the value the message shows there."""
    for node, shown in ((check.left, comparison.sides[0]), (check.right, comparison.sides[1])):
        if isinstance(node, ast.Name) and node.id in assigned:
            node = assigned[node.id]
        try:
            if _same_value(repr(ast.literal_eval(node)), shown):
                return True
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue
    return False


def _call_text(node: ast.expr, assigned: Mapping[str, ast.expr], func: ast.AST) -> str | None:
    """The call a side makes, when it shows only the project's name and literal arguments
    (never a name only the test knows)."""
    if isinstance(node, ast.Name) and node.id in assigned:
        node = assigned[node.id]
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Call):
        inner = _call_text(node.value, assigned, func)
        return f"{inner}.{node.attr}" if inner else None
    if not isinstance(node, ast.Call) or any(k.arg is None for k in node.keywords):
        return None
    name = _callee_text(node.func, assigned, func)
    if name is None:
        return None
    try:
        args = [repr(ast.literal_eval(a)) for a in node.args]
        args += [f"{k.arg}={ast.literal_eval(k.value)!r}" for k in node.keywords]
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return name.rsplit(").", 1)[-1].rsplit(".", 1)[-1]
    return f"{name}({', '.join(args)})"


def _callee_text(node: ast.expr, assigned: Mapping[str, ast.expr], func: ast.AST) -> str | None:
    """``f``, ``module.f``, ``Stack().pop``; an attribute of a test's own object: ``pop``."""
    local = _local_names(func)
    if isinstance(node, ast.Name):
        return None if node.id in local else node.id
    if not isinstance(node, ast.Attribute):
        return None
    if isinstance(node.value, ast.Name) and node.value.id not in local | {"self"}:
        return f"{node.value.id}.{node.attr}"
    if isinstance(node.value, ast.Call):
        inner = _call_text(node.value, assigned, func)
        if inner and "(" in inner:
            return f"{inner}.{node.attr}"
    return node.attr


_TRUTH_CHECKS = {"assertTrue", "assertFalse", "assertIsNone", "assertIsNotNone"}
_RAISES_CHECKS = {"assertRaises", "assertRaisesRegex", "raises"}


def _source_call(test: str, sources: Mapping[str, str], kind: str) -> str | None:
    """The call the test checks, when it has one check of this kind (``truth``:
    ``assertTrue(x)`` and kin, ``assert x``; ``raises``: ``with assertRaises(...)`` /
    ``pytest.raises``), written as in :func:`_call_text`."""
    source = sources.get(test.split("::")[0])
    func = _test_function(source, test) if source else None
    if func is None:
        return None
    nodes = _truth_nodes(func) if kind == "truth" else _raising_nodes(func)
    if len(nodes) != 1:
        return None
    return _call_text(nodes[0], _assignments(func), func)


def _truth_nodes(func: ast.AST) -> list[ast.expr]:
    out = []
    for node in ast.walk(func):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                node.func.attr in _TRUTH_CHECKS and node.args:
            out.append(node.args[0])
        elif isinstance(node, ast.Assert) and not isinstance(node.test, ast.Compare):
            test = node.test
            out.append(test.operand if isinstance(test, ast.UnaryOp) else test)
    return out


def _raising_nodes(func: ast.AST) -> list[ast.expr]:
    out: list[ast.expr] = []
    for node in ast.walk(func):
        if not isinstance(node, ast.With):
            continue
        calls = [i.context_expr for i in node.items if isinstance(i.context_expr, ast.Call)]
        if any(isinstance(c.func, ast.Attribute) and c.func.attr in _RAISES_CHECKS
               for c in calls):
            out += [st.value for st in node.body if isinstance(st, (ast.Expr, ast.Assign))]
    return out


def _local_names(func: ast.AST) -> set[str]:
    names = {n.id for n in ast.walk(func)
             if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    names |= {n.name for n in ast.walk(func) if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    return names


# -- from a comparison to a behaviour -------------------------------------------------------


def _traced_side(comparison: _Comparison, test: str,
                 ev: StatementEvidence) -> tuple[int | None, str | None]:
    """Which side a traced call's result is: the broken run's (computed) or the gold's."""
    for trace, is_broken in ((ev.broken, True), (ev.gold, False)):
        for rec in trace.of(test) if trace is not None else ():
            if rec.result is None:
                continue
            hits = [i for i, side in enumerate(comparison.sides) if _same_value(side, rec.result)]
            if len(hits) == 1 and not _same_value(*comparison.sides):
                return (hits[0] if is_broken else 1 - hits[0]), _from_record(rec).call
    return None, None


def _same_value(a: str, b: str) -> bool:
    a, b = scrub(a), scrub(b)
    try:
        return bool(ast.literal_eval(a) == ast.literal_eval(b))
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return a.strip() == b.strip()


def _oriented(comparison: _Comparison, test: str, ev: StatementEvidence) -> Observed:
    """The comparison as a behaviour: what the code gives and what it should, or, when no
    evidence tells the sides apart, both values without a direction."""
    index, call = comparison.computed, comparison.call
    if index is None:
        index, call = _traced_side(comparison, test, ev)
    if index is None:
        index, call = _source_side(comparison, test, ev.test_sources)
    a, b = (_display(s) for s in comparison.sides)
    if index is None:
        return Observed(compared=(a, b), op=comparison.op, call=_display(call) if call else None)
    got, other = (a, b) if index == 0 else (b, a)
    call = _display(call) if call else None
    if comparison.op in ("==", "is"):
        return Observed(call=call, returns=got, should_return=other)
    if comparison.op == "in" and index == 1:
        return Observed(call=call, returns=got, member=other)
    return Observed(call=call, compared=(a, b), op=comparison.op)  # <, not in...: no "should"


def _from_message(test: str, ev: StatementEvidence) -> Observed | None:
    read = _read_message(ev.messages.get(test, ""))
    if read is None:
        return Observed(hangs=True) if test in ev.hung else None
    observed = _oriented(read, test, ev) if isinstance(read, _Comparison) else read
    traced = _traced_call(test, ev)
    if observed.call is None and traced is not None:
        observed = replace(observed, call=_from_record(traced).call,
                           function=traced.function.split(".<locals>.")[0])
    elif observed.call is None:
        observed = replace(observed, call=_checked_call(observed, test, ev))
    if test in ev.hung:
        observed = replace(observed, hangs=True, raises=None)
    return observed


def _checked_call(observed: Observed, test: str, ev: StatementEvidence) -> str | None:
    """The call a truth or raising check of the test's source makes."""
    if observed.truthy is not None or observed.should_return == "None":
        return _source_call(test, ev.test_sources, "truth")
    if observed.should_raise or observed.note and "pattern" in observed.note:
        return _source_call(test, ev.test_sources, "raises")
    return None


def _traced_call(test: str, ev: StatementEvidence) -> CallRecord | None:
    """The one call the broken run traced for ``test``, to say what the test did."""
    calls = ev.broken.of(test) if ev.broken is not None else ()
    return calls[0] if len(calls) == 1 else None


def _raw(test: str, ev: StatementEvidence) -> list[str]:
    """The message's informative lines, scrubbed, for a check nothing above could read."""
    lines = []
    for line in ev.messages.get(test, "").splitlines():
        line = re.sub(r"\s+", " ", scrub(line)).strip()
        if line and not re.fullmatch(r"[-+?^ ]*", line):
            lines.append(line[:200])
    return lines[:6]


def observe(test: str, ev: StatementEvidence) -> Observed | None:
    """The broken behaviour ``test`` shows, from the best evidence (see the module doc)."""
    found = _traced(test, ev) or _from_message(test, ev)
    if found is not None and found.function is None and found.call and \
            not found.call.startswith("<"):
        found = replace(found, function=_callee(found.call))
    return found


def _callee(call: str) -> str:
    """``pkg.Rect(1, 2).scaled(3)`` -> ``scaled``: the name a call text is grouped by."""
    text = call.split("`")[0]
    head = re.sub(r"\([^()]*\)", "", text)
    while "(" in head:
        head = re.sub(r"\([^()]*\)", "", head)
    return head.rstrip(".").rsplit(".", 1)[-1] or call


# -- writing it --------------------------------------------------------------------------


def _pick(cand: Candidate | None, slot: str, options: Sequence[str]) -> str:
    """One of ``options``, always the same for this candidate and slot (no candidate: the
    first, plainest one)."""
    if cand is None:
        return options[0]
    return options[int(short_hash(cand.instance_id, slot), 16) % len(options)]


RETURNS = ("{c} returns `{got}`; it should return `{exp}`.",
           "{c} returns `{got}`, but it should return `{exp}`.",
           "Calling {c} gives `{got}`; it should give `{exp}`.",
           "{c} now returns `{got}` instead of `{exp}`.",
           "I expected {c} to return `{exp}`, but it returns `{got}`.")
RAISES_NOT_RETURNS = ("{c} raises `{exc}`; it should return `{exp}`.",
                      "Calling {c} fails with `{exc}`; it should return `{exp}`.",
                      "I expected {c} to return `{exp}`, but it raises `{exc}`.")
RETURNS_NOT_RAISES = ("{c} returns `{got}`; it should raise `{should}`.",
                      "{c} returns `{got}`, but it should raise `{should}`.",
                      "I expected {c} to raise `{should}`, but it returns `{got}`.")
RAISES_OTHER = ("{c} raises `{exc}`; it should raise `{should}`.",
                "I expected {c} to raise `{should}`, but it raises `{exc}`.")
IS = ("{c} is `{got}`; it should be `{exp}`.", "{c} is `{got}`, but it should be `{exp}`.",
      "I expected {c} to be `{exp}`, but it is `{got}`.")
HANGS = ("{c} never returns (it hangs){then}.", "{c} hangs: it never returns{then}.")
NOT_RAISED = ("{c} does not raise; it should raise `{should}`.",
              "I expected {c} to raise `{should}`, but it does not.")
TITLES = ("`{f}` returns wrong results", "Wrong results from `{f}`",
          "`{f}` no longer gives the right answer", "Unexpected results from `{f}`",
          "Bug in `{f}`")
TITLES_HANG = ("`{f}` hangs", "`{f}` never returns", "`{f}` gets stuck")
TITLES_MANY = ("Wrong results from {fs}", "{fs} misbehave",
               "Several functions give wrong results: {fs}", "Bugs in {fs}")
OPENINGS = ("With the current code, I get wrong results from {s}.",
            "I ran into a problem with {s}.", "Something is off with {s}.",
            "Using {s}, I get results I did not expect.",
            "Here is what I see when I use {s}.")
HEADINGS = ("## Expected behaviour", "## What I expected", "## Expected",
            "### Expected result")
CLOSINGS = ("I expect the behaviour described above; what works today should keep working.",
            "Please make {s} give the results described above again.",
            "I would expect the results given above, with no other change in behaviour.",
            "For these inputs {s} should give the values I expected; other inputs should not "
            "change.")


def _sentence(o: Observed, cand: Candidate | None) -> str | None:
    """One behaviour in words (a template chosen per candidate), None if it says nothing."""
    text = _template(o, cand)
    return text[:1].upper() + text[1:] if text else None


def _template(o: Observed, cand: Candidate | None) -> str | None:
    c = f"`{o.call}`" if o.call else "it"
    fill = {"c": c, "got": o.returns, "exp": o.should_return, "exc": o.raises,
            "should": o.should_raise}
    if o.hangs:
        then = f", where it should return `{o.should_return}`" if o.should_return else \
            (f", where it should raise `{o.should_raise}`" if o.should_raise else "")
        return _pick(cand, "hangs", HANGS).format(then=then, **fill)
    if o.raises and o.should_return:
        return _pick(cand, "raises", RAISES_NOT_RETURNS).format(**fill)
    if o.raises and o.should_raise:
        return _pick(cand, "raises_other", RAISES_OTHER).format(**fill)
    if o.returns is not None and o.should_raise:
        return _pick(cand, "not_raise", RETURNS_NOT_RAISES).format(**fill)
    if o.should_raise:
        return _pick(cand, "not_raised", NOT_RAISED).format(**fill)
    if o.returns is not None and o.should_return is not None:
        forms = IS if o.call and _attribute(o.call) else RETURNS
        return _pick(cand, "returns", forms).format(**fill)
    return _other_sentence(o, c)


def _attribute(call: str) -> bool:
    """``Rect(2, 3).area``, ``<Point object>.x``: a value read, not a call made."""
    return bool(re.search(r"[\w)>\]]\.\w+$", call.split("` on `")[0]))


def _other_sentence(o: Observed, c: str) -> str | None:
    if o.returns is not None and o.truthy is not None:
        kind = "true" if o.truthy else "false"
        return f"{c} returns `{o.returns}`; it should return a {kind} value."
    if o.returns is not None and o.member is not None:
        return f"{c} returns `{o.returns}`, which does not contain `{o.member}`."
    if o.raises:
        return f"{c} raises `{o.raises}`."
    if o.compared:
        a, b = o.compared
        lead = f"with {c}, a" if o.call else "a"
        if o.op == "in":
            return f"{lead} check looks for `{a}` in `{b}` and does not find it."
        if o.op in ("==", "is"):
            return f"{lead} check compares `{a}` with `{b}`, and they differ."
        return f"{lead} check `{a} {o.op} {b}` fails."
    if o.note:
        return f"after {c}, {o.note}." if o.call else f"{o.note}."
    if o.returns is not None:
        return f"{c} returns `{o.returns}`, which is not what it should return."
    return None


def _subject(cand: Candidate) -> str:
    func = cand.provenance.get("function")
    path = cand.files[0] if cand.files else ""
    module = path.removesuffix(".py").removesuffix("/__init__").replace("/", ".")
    module = module.removeprefix("src.").removeprefix("lib.")
    if func and module:
        return f"{module}.{func}"
    return module or "the library"


def _group(observed: Iterable[Observed]) -> dict[str, list[Observed]]:
    groups: dict[str, list[Observed]] = {}
    for o in observed:
        key = o.function or ""
        if o.key not in {x.key for x in groups.get(key, [])}:
            groups.setdefault(key, []).append(o)
    return dict(list(groups.items())[:MAX_FUNCTIONS])


def _clean(line: str, cand: Candidate, f2p: Sequence[str]) -> bool:
    """A line a statement may carry: it quotes no patch line and names no test."""
    if leaks(line, cand.bug_patch) or leaks(line, cand.gold_patch):
        return False
    return not any(name and re.search(rf"(?<![\w.]){re.escape(name)}(?![\w])", line)
                   for name in _test_names(f2p))


def _test_names(f2p: Sequence[str]) -> set[str]:
    names = set()
    for nodeid in f2p:
        parts = nodeid.split("::")
        names.add(parts[-1].split("[")[0])
        if len(parts) > 1:
            names.update({parts[0], parts[0].rsplit("/", 1)[-1]})
    return names


def _body(groups: dict[str, list[Observed]], cand: Candidate, f2p: Sequence[str]) -> list[str]:
    """The behaviours, grouped by function (a heading each when there are several); what
    no call names comes last."""
    lines: list[str] = []
    many = len([k for k in groups if k]) > 1
    for function in sorted(groups, key=lambda f: f == ""):
        cap = MAX_EXAMPLES if function else MAX_EXAMPLES + 2
        sentences = [s for o in groups[function][:cap] if (s := _sentence(o, cand))]
        sentences = [s for s in sentences if _clean(s, cand, f2p)]
        if not sentences:
            continue
        if many:
            lines += [f"### `{function}`" if function else "### Also", ""]
        lines += [f"- {s}" for s in sentences] + [""]
    return lines


def _raw_blocks(tests: Sequence[str], ev: StatementEvidence, cand: Candidate) -> list[str]:
    out: list[str] = []
    seen: list[list[str]] = []
    for test in tests[:2]:
        block = [line for line in _raw(test, ev) if _clean(line, cand, ev.fail_to_pass)]
        if block and block not in seen:
            seen.append(block)
            out += ["A failing check reports:", "", "```", *block, "```", ""]
    return out


def _read_all(evidence: StatementEvidence) -> tuple[list[Observed], list[str]]:
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


def _head(cand: Candidate, observed: list[Observed], named: list[str]) -> tuple[str, list[str]]:
    """The subject (the functions named, else the changed one), and the title and opening."""
    subject = _names(named) if named else f"`{_subject(cand)}`"
    module = _subject(cand).rpartition(".")[0] if cand.provenance.get("function") else ""
    about = f"{subject} (in `{module}`)" if named and module and not any(
        "." in f for f in named) else subject
    if len(named) > 1:
        title = _pick(cand, "title", TITLES_MANY).format(fs=subject)
    else:
        hangs = bool(observed) and all(o.hangs for o in observed)
        title = _pick(cand, "title", TITLES_HANG if hangs else TITLES).format(
            f=subject.strip("`"))
    opening = _pick(cand, "opening", OPENINGS).format(s=about, S=_capital(about))
    return subject, [f"# {title}", "", opening, ""]


def offline_statement(cand: Candidate, evidence: StatementEvidence) -> str:
    """An issue-style statement of ``cand``'s bug, from ``evidence`` (see the module doc):
    every broken behaviour, what it does and what it should do, in a user's words; never
    an address, a test's name or a line of the patch. The same input gives the same text."""
    observed, unread = _read_all(evidence)
    groups = _group(observed)
    subject, parts = _head(cand, observed, [f for f in groups if f])
    said = _body(groups, cand, evidence.fail_to_pass)
    said += _raw_blocks(unread[:1] if observed else unread, evidence, cand)
    parts += said or ["It returns a different value, or raises, where it used to succeed.", ""]
    closing = _pick(cand, "closing", CLOSINGS).format(s=subject, S=_capital(subject))
    parts += [_pick(cand, "heading", HEADINGS), "", closing]
    return "\n".join(line for line in parts if not line
                     or _clean(line, cand, evidence.fail_to_pass)).strip() + "\n"


def _names(functions: Sequence[str]) -> str:
    quoted = [f"`{f}`" for f in functions]
    return quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " and " + quoted[-1]


def _capital(text: str) -> str:
    return text[:1].upper() + text[1:] if not text.startswith("`") else text


def observations(evidence: StatementEvidence) -> list[str]:
    """What the failing tests show, one plain sentence per behaviour (for a model's prompt;
    the same reading as :func:`offline_statement`, in its plainest wording)."""
    out = []
    for test in evidence.fail_to_pass:
        found = observe(test, evidence)
        text = _sentence(found, None) if found is not None else None
        if text and text not in out:
            out.append(text)
    return out
