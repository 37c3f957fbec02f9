"""Each mutator: exact before/after fixtures, what it must leave alone, and one
conformance suite every registered mutator passes."""

from __future__ import annotations

import ast
from textwrap import dedent

import pytest

from repogym.errors import UnknownPluginError
from repogym.generators.mutators import MUTATORS, Mutator, Site
from repogym.generators.mutators.runtime import enclosing_function, in_runtime_code
from repogym.generators.procedural import parse_python, parses_cleanly

EXPECTED_KINDS = {"arithmetic_swap", "boolean_swap", "comparison_flip", "constant_swap",
                  "invert_if_else", "negate_condition", "off_by_one", "remove_statement",
                  "return_value"}


def sites(kind: str, source: str) -> list[Site]:
    data = source.encode()
    mutator: Mutator = MUTATORS.get(kind)()
    return list(mutator.sites(parse_python(data), data))


def mutants(kind: str, source: str) -> list[str]:
    """Every mutated version of ``source`` the mutator proposes, in site order."""
    source = dedent(source)
    return [s.apply(source.encode()).decode() for s in sites(kind, source)]


def assert_mutates(kind: str, before: str, after: str) -> None:
    got = mutants(kind, before)
    assert dedent(after) in got, "\n---\n".join(got)


# --- the registry ----------------------------------------------------------------------

def test_all_kinds_registered() -> None:
    assert EXPECTED_KINDS <= set(MUTATORS.names())


def test_unknown_kind_lists_valid_names() -> None:
    with pytest.raises(UnknownPluginError, match="comparison_flip"):
        MUTATORS.get("no_such_mutator")


# --- comparison_flip -------------------------------------------------------------------

@pytest.mark.parametrize(("op", "flipped"), [
    ("<", ">="), (">=", "<"), (">", "<="), ("<=", ">"), ("==", "!="), ("!=", "=="),
    ("is", "is not"), ("is not", "is"), ("in", "not in"), ("not in", "in")])
def test_comparison_flip(op: str, flipped: str) -> None:
    assert mutants("comparison_flip", f"def f(a, b):\n    return a {op} b\n") == [
        f"def f(a, b):\n    return a {flipped} b\n"]


def test_comparison_flip_each_operator_of_a_chain() -> None:
    assert mutants("comparison_flip", "def f(a):\n    return 0 < a <= 9\n") == [
        "def f(a):\n    return 0 >= a <= 9\n", "def f(a):\n    return 0 < a > 9\n"]


# --- arithmetic_swap -------------------------------------------------------------------

@pytest.mark.parametrize(("before", "after"), [
    ("a + b", "a - b"), ("a - b", "a + b"), ("a * b", "a / b"), ("a / b", "a * b"),
    ("a // b", "a * b"), ("a % b", "a // b")])
def test_arithmetic_swap(before: str, after: str) -> None:
    assert mutants("arithmetic_swap", f"def f(a, b):\n    return {before}\n") == [
        f"def f(a, b):\n    return {after}\n"]


def test_arithmetic_swap_augmented_assignment() -> None:
    assert_mutates("arithmetic_swap", """\
        def f(total):
            total *= 2
            return total
        """, """\
        def f(total):
            total /= 2
            return total
        """)


def test_arithmetic_swap_leaves_string_building_alone() -> None:
    assert mutants("arithmetic_swap", """\
        def f(name, n):
            return "x" + name, "%s items" % n, name + 'y'
        """) == []


# --- boolean_swap ----------------------------------------------------------------------

def test_boolean_swap() -> None:
    assert mutants("boolean_swap", "def f(a, b, c):\n    return a and b or c\n") == [
        "def f(a, b, c):\n    return a and b and c\n",
        "def f(a, b, c):\n    return a or b or c\n"]


# --- negate_condition ------------------------------------------------------------------

NEGATE_SOURCE = """\
def f(a, b):
    if a and b:
        a = 1
    elif b > 2:
        a = 2
    while not a:
        a += 1
    return a if (x := a) else b
"""


def test_negate_condition_every_kind_of_condition() -> None:
    got = mutants("negate_condition", NEGATE_SOURCE)
    assert got == [
        NEGATE_SOURCE.replace("if a and b:", "if not (a and b):"),
        NEGATE_SOURCE.replace("elif b > 2:", "elif not b > 2:"),
        NEGATE_SOURCE.replace("while not a:", "while a:"),
        NEGATE_SOURCE.replace("a if (x := a) else b", "a if not (x := a) else b"),
    ]
    assert all(parses_cleanly(m.encode()) for m in got)


def test_negate_condition_parenthesises_only_when_needed() -> None:
    assert mutants("negate_condition", "def f(a):\n    if a:\n        return 1\n") == [
        "def f(a):\n    if not a:\n        return 1\n"]
    assert mutants("negate_condition", "def f(a, b):\n    return 1 if a or b else 2\n") == [
        "def f(a, b):\n    return 1 if not (a or b) else 2\n"]


# --- off_by_one ------------------------------------------------------------------------

@pytest.mark.parametrize(("before", "after"), [
    ("if len(xs) > 3:\n        return 1", "if len(xs) > 4:\n        return 1"),
    ("if len(xs) > 3:\n        return 1", "if len(xs) > 2:\n        return 1"),
    ("return xs[0]", "return xs[1]"),
    ("return xs[0]", "return xs[-1]"),
    ("return xs[-1]", "return xs[-2]"),
    ("return xs[-1]", "return xs[0]"),
    ("return xs[1:]", "return xs[2:]"),
    ("return xs[:-1]", "return xs[:0]"),
    ("return list(range(1, n))", "return list(range(2, n))"),
    ("return xs[n + 1]", "return xs[n + 2]"),
    ("return xs[n - 1]", "return xs[n - 0]"),
    ("return xs[0x10]", "return xs[0x11]"),
])
def test_off_by_one(before: str, after: str) -> None:
    assert_mutates("off_by_one", f"def f(xs, n):\n    {before}\n", f"def f(xs, n):\n    {after}\n")


def test_off_by_one_only_where_off_by_one_bugs_live() -> None:
    assert mutants("off_by_one", """\
        def f(xs):
            y = 5
            g(3, key=4)
            return y * 2, 1j, {0: 1}
        """) == []


# --- remove_statement ------------------------------------------------------------------

def test_remove_statement_deletes_the_line() -> None:
    assert_mutates("remove_statement", """\
        def f(a):
            a.append(1)
            b = len(a)  # counted
            return b
        """, """\
        def f(a):
            a.append(1)
            return b
        """)


def test_remove_statement_multiline_call() -> None:
    assert_mutates("remove_statement", """\
        def f(a):
            a.extend(
                [1, 2],
            )
            return a
        """, """\
        def f(a):
            return a
        """)


def test_remove_statement_sole_statement_becomes_pass() -> None:
    assert mutants("remove_statement", """\
        def f(a):
            if a:
                a.count += 1
        """) == [dedent("""\
        def f(a):
            if a:
                pass
        """)]


def test_remove_statement_shared_line_becomes_pass() -> None:
    assert_mutates("remove_statement", "def f():\n    a = 1; b = 2\n    return a\n",
                   "def f():\n    pass; b = 2\n    return a\n")


def test_remove_statement_skips_other_statements() -> None:
    assert mutants("remove_statement", """\
        def f(a):
            x: int
            y: int = 3
            import os
            global g
            assert a
            yield a
            return a
        """) == []


# --- invert_if_else --------------------------------------------------------------------

def test_invert_if_else() -> None:
    assert mutants("invert_if_else", """\
        def f(a):
            if a > 0:
                sign = 1
            else:
                sign = -1
                a = -a
            return sign, a
        """) == [dedent("""\
        def f(a):
            if a > 0:
                sign = -1
                a = -a
            else:
                sign = 1
            return sign, a
        """)]


def test_invert_if_else_skips_elif_and_identical_bodies() -> None:
    assert mutants("invert_if_else", """\
        def f(a):
            if a:
                x = 1
            elif a is None:
                x = 2
            else:
                x = 3
            if a:
                return 1
            else:
                return 1
        """) == []


# --- return_value ----------------------------------------------------------------------

def test_return_value() -> None:
    assert mutants("return_value", "def f(a):\n    return a + 1\n") == [
        "def f(a):\n    return None\n"]


def test_return_value_skips_none_bare_and_generators() -> None:
    assert mutants("return_value", """\
        def f(a):
            if a:
                return None
            return
        def g(a):
            yield a
            return a
        """) == []


# --- constant_swap ---------------------------------------------------------------------

def test_constant_swap() -> None:
    assert mutants("constant_swap", "def f():\n    ok = True\n    return ok, False\n") == [
        "def f():\n    ok = False\n    return ok, False\n",
        "def f():\n    ok = True\n    return ok, True\n"]


# --- what no mutator may touch ---------------------------------------------------------

OFF_LIMITS = '''\
"""Module docstring: a < b + 1 and True, x[0]."""
from __future__ import annotations

import logging
import warnings
from typing import TYPE_CHECKING, Literal

__all__ = ["f"] + ["K"]
LIMIT = 3 if True else 4 - 1
logger = logging.getLogger(__name__)
if TYPE_CHECKING:
    from os import path
if LIMIT > 2 and LIMIT < 10:
    LIMIT = LIMIT + 1
else:
    LIMIT = 0


@decorate(1 + 2, flag=True, n=x[0] < 1)
def f(a: Literal[1, 2] = 1, b: "list[int] | None" = x < 1, *c: int) -> dict[str, int] | None:
    """Docstring: return a < b + 1 if True and False else x[0]."""
    # comment: x = a < 1 and b + 1; return x
    logger.debug("x %s", a < 1 and b + 1, x[0] if True else None)
    logging.info("y", a[0] == 1 or True)
    print(a + 1, a < 2 and not True)
    warnings.warn("z" if a > 1 else "w", stacklevel=2 + 1)
    self.log.warning("%d", range(0, 1) if not a else x[0])
    x: Literal[1] | None
    "another bare string: a < b"
    if TYPE_CHECKING:
        y = a < 1 if True else b + 1
    else:
        y = 1
    raise NotImplementedError("a" + "b" if a < 0 else x[1])


class K:
    attr: int = 1 + 2
    flag = True and False or x[0] < 1

    def m(self) -> tuple[int, ...]:
        """Doc: return 1 + 1."""
        self.logger.info("%d", 1 + 1 if True else x[0] > 0)
        raise NotImplementedError


if __name__ == "__main__":
    f(1 + 2 if True else x[0] < 1)
    ok = True
'''


def test_off_limits_source_compiles() -> None:
    ast.parse(OFF_LIMITS)
    assert parses_cleanly(OFF_LIMITS.encode())


@pytest.mark.parametrize("kind", MUTATORS.names())
def test_leaves_annotations_docstrings_logging_and_module_code_alone(kind: str) -> None:
    assert [(s.line, s.description) for s in sites(kind, OFF_LIMITS)] == []


# --- conformance: every registered mutator ---------------------------------------------

CORPUS = '''\
import logging

log = logging.getLogger(__name__)
THRESHOLD = 3


class Stack:
    def __init__(self, items=None):
        self.items = list(items or [])
        self.size = len(self.items)

    def push(self, item: int) -> None:
        """Push one item."""
        if item is None or item < 0:
            raise ValueError("bad item")
        else:
            self.items.append(item)
        self.size += 1

    def top(self, n: int = 1) -> list[int]:
        log.debug("top %d", n)
        if n > self.size and True:
            return self.items[:]
        return self.items[-n:] if n > 0 else []


def window(xs, k):
    out = []
    for i in range(0, len(xs) - k + 1):
        out.append(sum(xs[i:i + k]) / k)
    while len(out) > THRESHOLD * 2:
        out.pop(0)
    return out
'''


@pytest.mark.parametrize("kind", MUTATORS.names())
def test_conformance(kind: str) -> None:
    data = CORPUS.encode()
    tree = parse_python(data)
    found = sites(kind, CORPUS)
    assert found, f"{kind} found nothing in the corpus"
    n_lines = CORPUS.count("\n")
    for site in found:
        assert 0 <= site.start <= site.end <= len(data)
        assert 1 <= site.line <= n_lines and site.description
        mutated = site.apply(data)
        assert mutated != data and parses_cleanly(mutated), mutated.decode()
        assert ast.dump(ast.parse(mutated)) != ast.dump(ast.parse(data))
        node = site.node(tree, data)
        assert node is not None and in_runtime_code(node)
        assert enclosing_function(node) in {"Stack.__init__", "Stack.push", "Stack.top", "window"}
