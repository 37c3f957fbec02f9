"""Reading a test's source (with :mod:`ast`): which side of a comparison the code computes.

A failure message shows two values but not always which one the code gave: many suites
write ``assert expected == actual``. The test's source tells when one side of the check
is a value the test states (a literal, a name bound to one, a parameter of a parametrized
test) and the other runs code (:func:`source_side`). The source also gives the call a
truth or raising check makes, when it shows only the project's names and literal
arguments (:func:`source_call`) -- never a name only the test knows.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from dataclasses import dataclass

from repogym import pyast
from repogym.generators.statements.observed import Comparison
from repogym.generators.statements.values import same_value

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
        body: list[ast.stmt] = pyast.parse(source).body
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


def source_side(comparison: Comparison, test: str,
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


def _states(check: _SourceCheck, comparison: Comparison,
            assigned: Mapping[str, ast.expr]) -> bool:
    """The check states, as a literal on one side, the value the message shows there."""
    for node, shown in ((check.left, comparison.sides[0]), (check.right, comparison.sides[1])):
        if isinstance(node, ast.Name) and node.id in assigned:
            node = assigned[node.id]
        try:
            if same_value(repr(ast.literal_eval(node)), shown):
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


def source_call(test: str, sources: Mapping[str, str], kind: str) -> str | None:
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
