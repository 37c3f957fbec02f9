"""Each mutator: exact before/after fixtures, what it must leave alone, and one
conformance suite every registered mutator passes."""

from __future__ import annotations

import ast
from textwrap import dedent

import pytest

from repogym.errors import UnknownPluginError
from repogym.generators.mutators import MUTATORS, Mutator, Site
from repogym.generators.mutators.runtime import enclosing_function, in_runtime_code, runtime_nodes
from repogym.generators.procedural import parse_python, parses_cleanly

EXPECTED_KINDS = {"arithmetic_swap", "boolean_swap", "break_call_chain", "change_default",
                  "comparison_flip", "constant_swap", "exception_swap", "invert_if_else",
                  "membership_flip", "negate_condition", "off_by_one", "remove_conditional",
                  "remove_loop", "remove_return", "remove_statement", "remove_try",
                  "remove_with", "return_value", "slice_bound", "swap_arguments",
                  "swap_statements"}
PYTHON_KINDS = [name for name in MUTATORS.names() if MUTATORS.get(name).family == "python"]
"""The registered kinds that read Python (other families have their own tests)."""


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
    ("<", ">="), (">=", "<"), (">", "<="), ("<=", ">"), ("==", "!="), ("!=", "==")])
def test_comparison_flip(op: str, flipped: str) -> None:
    assert mutants("comparison_flip", f"def f(a, b):\n    return a {op} b\n") == [
        f"def f(a, b):\n    return a {flipped} b\n"]


# --- membership_flip -------------------------------------------------------------------

@pytest.mark.parametrize(("op", "flipped"), [
    ("is", "is not"), ("is not", "is"), ("in", "not in"), ("not in", "in")])
def test_membership_flip(op: str, flipped: str) -> None:
    assert mutants("membership_flip", f"def f(a, b):\n    return a {op} b\n") == [
        f"def f(a, b):\n    return a {flipped} b\n"]


def test_comparison_and_membership_split_a_chain() -> None:
    source = "def f(a, b):\n    return 0 < a in b\n"
    assert mutants("comparison_flip", source) == ["def f(a, b):\n    return 0 >= a in b\n"]
    assert mutants("membership_flip", source) == ["def f(a, b):\n    return 0 < a not in b\n"]


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


# --- remove_return ---------------------------------------------------------------------

def test_remove_return_drops_an_early_return() -> None:
    assert mutants("remove_return", """\
        def f(a):
            if a is None:
                return 0
            for x in a:
                if x:
                    log(x)
                    return x
            return 1
        """) == [dedent("""\
        def f(a):
            if a is None:
                pass
            for x in a:
                if x:
                    log(x)
                    return x
            return 1
        """), dedent("""\
        def f(a):
            if a is None:
                return 0
            for x in a:
                if x:
                    log(x)
            return 1
        """)]


# --- remove_conditional ----------------------------------------------------------------

def test_remove_conditional() -> None:
    assert mutants("remove_conditional", """\
        def f(a):
            if a is None:  # guard
                raise ValueError(
                    "no a")
            if a:
                return 1
            else:
                return 2
        """) == [dedent("""\
        def f(a):
            if a:
                return 1
            else:
                return 2
        """)]


def test_remove_conditional_alone_in_its_block_becomes_pass() -> None:
    assert mutants("remove_conditional", """\
        def f(a):
            for x in a:
                if x:
                    x.run()
        """) == [dedent("""\
        def f(a):
            for x in a:
                pass
        """)]


# --- remove_loop -----------------------------------------------------------------------

def test_remove_loop() -> None:
    assert mutants("remove_loop", """\
        def f(xs):
            total = 0
            for x in xs:
                total += x
            else:
                total -= 1
            while total > 9:
                total //= 2
            return total
        """) == [dedent("""\
        def f(xs):
            total = 0
            while total > 9:
                total //= 2
            return total
        """), dedent("""\
        def f(xs):
            total = 0
            for x in xs:
                total += x
            else:
                total -= 1
            return total
        """)]


# --- remove_with -----------------------------------------------------------------------

def test_remove_with_keeps_bindings_and_dedents_the_body() -> None:
    assert mutants("remove_with", '''\
        def f(path, lock):
            with open(path) as fh, lock:
                data = fh.read()
                doc = """line
            kept as is"""
            return data, doc
        ''') == [dedent('''\
        def f(path, lock):
            fh = open(path)
            data = fh.read()
            doc = """line
            kept as is"""
            return data, doc
        ''')]


def test_remove_with_without_target() -> None:
    assert mutants("remove_with", """\
        def f(d):
            async with suppress(KeyError):
                if d:
                    del d["k"]
        """) == [dedent("""\
        def f(d):
            if d:
                del d["k"]
        """)]


# --- remove_try ------------------------------------------------------------------------

def test_remove_try_keeps_body_else_and_finally() -> None:
    assert mutants("remove_try", """\
        def f(s):
            try:
                n = int(s)
            except (TypeError, ValueError):
                n = 0
            else:
                n += 1
            finally:
                s = None
            return n
        """) == [dedent("""\
        def f(s):
            n = int(s)
            n += 1
            s = None
            return n
        """)]


def test_remove_try_needs_a_handler() -> None:
    assert mutants("remove_try", """\
        def f(lock):
            try:
                return lock.run()
            finally:
                lock.release()
        """) == []


# --- exception_swap --------------------------------------------------------------------

def test_exception_swap() -> None:
    assert mutants("exception_swap", """\
        def f(d, k):
            try:
                return d[k]
            except KeyError as exc:
                raise ValueError(k) from exc
            except (TypeError, IndexError, MyError):
                raise
        """) == [dedent(s) for s in ("""\
        def f(d, k):
            try:
                return d[k]
            except IndexError as exc:
                raise ValueError(k) from exc
            except (TypeError, IndexError, MyError):
                raise
        """, """\
        def f(d, k):
            try:
                return d[k]
            except KeyError as exc:
                raise TypeError(k) from exc
            except (TypeError, IndexError, MyError):
                raise
        """, """\
        def f(d, k):
            try:
                return d[k]
            except KeyError as exc:
                raise ValueError(k) from exc
            except (IndexError, MyError):
                raise
        """, """\
        def f(d, k):
            try:
                return d[k]
            except KeyError as exc:
                raise ValueError(k) from exc
            except (TypeError, MyError):
                raise
        """, """\
        def f(d, k):
            try:
                return d[k]
            except KeyError as exc:
                raise ValueError(k) from exc
            except (TypeError, IndexError):
                raise
        """)]


def test_exception_swap_leaves_unknown_exceptions_alone() -> None:
    assert mutants("exception_swap", """\
        def f():
            try:
                g()
            except MyError:
                raise Custom("x")
        """) == []


# --- swap_arguments --------------------------------------------------------------------

def test_swap_arguments() -> None:
    assert mutants("swap_arguments", "def f(a, b):\n    return g(a, b.c, 1, key=2)\n") == [
        "def f(a, b):\n    return g(b.c, a, 1, key=2)\n",
        "def f(a, b):\n    return g(a, 1, b.c, key=2)\n"]


def test_swap_arguments_skips_same_kind_literals_splats_and_symmetric_calls() -> None:
    assert mutants("swap_arguments", """\
        def f(a, b):
            g(1, 2)
            g("x", "y")
            g(a, a)
            g(*a, **b)
            return max(a, b), math.gcd(a, b)
        """) == []


# --- change_default --------------------------------------------------------------------

def test_change_default() -> None:
    assert mutants("change_default", """\
        class K:
            def m(self, flag: bool = True, n=0, sep: str = ",", neg=-1, x=None, y=1.5, *,
                  off=False):
                return flag, n, sep, neg, x, y, off
        """) == [dedent(s) for s in (
        """\
        class K:
            def m(self, flag: bool = False, n=0, sep: str = ",", neg=-1, x=None, y=1.5, *,
                  off=False):
                return flag, n, sep, neg, x, y, off
        """, """\
        class K:
            def m(self, flag: bool = True, n=1, sep: str = ",", neg=-1, x=None, y=1.5, *,
                  off=False):
                return flag, n, sep, neg, x, y, off
        """, """\
        class K:
            def m(self, flag: bool = True, n=0, sep: str = "", neg=-1, x=None, y=1.5, *,
                  off=False):
                return flag, n, sep, neg, x, y, off
        """, """\
        class K:
            def m(self, flag: bool = True, n=0, sep: str = ",", neg=0, x=None, y=1.5, *,
                  off=False):
                return flag, n, sep, neg, x, y, off
        """, """\
        class K:
            def m(self, flag: bool = True, n=0, sep: str = ",", neg=-1, x=None, y=1.5, *,
                  off=True):
                return flag, n, sep, neg, x, y, off
        """)]


def test_change_default_skips_stubs_overloads_and_lambdas() -> None:
    assert mutants("change_default", '''\
        class P(Protocol):
            def m(self, flag: bool = True) -> None: ...
            def n(self, k=1):
                """Doc."""
                raise NotImplementedError
        @overload
        def f(a: int = 1) -> int: pass
        def g(a):
            return sorted(a, key=lambda x, n=1: x + n)
        if TYPE_CHECKING:
            def h(a=True):
                return a
        ''') == []


def test_change_default_sites_are_runtime_only_with_defaults_allowed() -> None:
    source = "def f(a=1):\n    return a\n"
    data = source.encode()
    tree = parse_python(data)
    (site,) = sites("change_default", source)
    node = site.node(tree, data)
    assert node is not None and node.type == "integer"
    assert in_runtime_code(node, defaults=True) and not in_runtime_code(node)
    assert enclosing_function(node) == "f"


# --- break_call_chain ------------------------------------------------------------------

def test_break_call_chain() -> None:
    assert mutants("break_call_chain", """\
        def f(s):
            return s.strip().lower().split(",")
        """) == [dedent("""\
        def f(s):
            return s.strip().lower()
        """), dedent("""\
        def f(s):
            return s.strip().split(",")
        """)]


def test_break_call_chain_needs_two_calls_and_spares_super() -> None:
    assert mutants("break_call_chain", """\
        def f(self, s):
            super().__init__()
            return s.strip(), s.a.b(), g(s).h
        """) == []


# --- slice_bound -----------------------------------------------------------------------

def test_slice_bound() -> None:
    assert mutants("slice_bound", "def f(xs, i, n):\n    return xs[i:n + 1:-1]\n") == [
        "def f(xs, i, n):\n    return xs[:n + 1:-1]\n",
        "def f(xs, i, n):\n    return xs[i + 1:n + 1:-1]\n",
        "def f(xs, i, n):\n    return xs[i::-1]\n",
        "def f(xs, i, n):\n    return xs[i:n + 1 - 1:-1]\n",
        "def f(xs, i, n):\n    return xs[i:n + 1:]\n"]


def test_slice_bound_parenthesises_and_leaves_literals_to_off_by_one() -> None:
    assert mutants("slice_bound", "def f(xs, a):\n    return xs[1:a or 2]\n") == [
        "def f(xs, a):\n    return xs[:a or 2]\n",
        "def f(xs, a):\n    return xs[1:]\n",
        "def f(xs, a):\n    return xs[1:(a or 2) - 1]\n"]


# --- swap_statements -------------------------------------------------------------------

def test_swap_statements_when_order_matters() -> None:
    """Only the statements move; a trailing comment keeps its line."""
    source = dedent("""\
        def f(self, x):
            self.a = 1
            self.b = 2
            x = x * 2
            self.items.append(x)  # keep
            self.items.sort()
            total = len(self.items)
            self.n = total
            return total
        """)
    swapped = [
        ("    x = x * 2\n    self.items.append(x)  # keep\n",
         "    self.items.append(x)\n    x = x * 2  # keep\n"),
        ("    self.items.append(x)  # keep\n    self.items.sort()\n",
         "    self.items.sort()  # keep\n    self.items.append(x)\n"),
        ("    self.items.sort()\n    total = len(self.items)\n",
         "    total = len(self.items)\n    self.items.sort()\n"),
    ]
    assert mutants("swap_statements", source) == [source.replace(a, b) for a, b in swapped]


def test_swap_statements_skips_annotations_and_first_bindings() -> None:
    assert mutants("swap_statements", """\
        def f(self):
            parts: list[str] = []
            append = parts.append
            total = len(self.items)
            self.n = total
        """) == []


# --- unreachable code ------------------------------------------------------------------

UNREACHABLE = """\
def f(xs):
    for x in xs:
        if x:
            continue
            x = x + 1 < 2 and True
        break
        xs.pop(-1)
    return xs
    with open(xs) as fh:
        try:
            if xs is None:
                return fh.read().strip()[1:]
        except ValueError:
            g(xs, fh)
"""


def _statement_lines(source: str) -> set[int]:
    return {n.start_point[0] + 1 for n in runtime_nodes(parse_python(source.encode()).root_node)
            if n.parent is not None and n.parent.type == "block"}


def test_statements_after_return_raise_continue_break_are_not_runtime_code() -> None:
    assert _statement_lines(UNREACHABLE) == {2, 3, 4, 6, 8}
    reachable = UNREACHABLE.replace("    return xs\n", "    xs.clear()\n")
    assert _statement_lines(reachable) == {2, 3, 4, 6, 8, 9, 10, 11, 12, 14}


@pytest.mark.parametrize("kind", PYTHON_KINDS)
def test_unreachable_code_is_left_alone(kind: str) -> None:
    assert {s.line for s in sites(kind, UNREACHABLE)} <= {2, 3, 4, 6, 8}


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
    return a < 1 and b + 1 if True else x[0]


class K:
    attr: int = 1 + 2
    flag = True and False or x[0] < 1

    def m(self) -> tuple[int, ...]:
        """Doc: return 1 + 1."""
        self.logger.info("%d", 1 + 1 if True else x[0] > 0)
        raise NotImplementedError
        for i in range(0, 2):
            self.k = [i + 1, True, self.k[1:]]


if __name__ == "__main__":
    f(1 + 2 if True else x[0] < 1)
    ok = True
'''


def test_off_limits_source_compiles() -> None:
    ast.parse(OFF_LIMITS)
    assert parses_cleanly(OFF_LIMITS.encode())


@pytest.mark.parametrize("kind", PYTHON_KINDS)
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


def words(path, stop=("a", "the"), lower=True):
    try:
        with open(path) as fh:
            text = fh.read().strip().lower()
    except (OSError, UnicodeError):
        return []
    return [w for w in text.split() if w not in stop]
'''


@pytest.mark.parametrize("kind", PYTHON_KINDS)
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
        assert node is not None
        assert in_runtime_code(node, defaults=MUTATORS.get(kind).edits_defaults)
        assert enclosing_function(node) in {"Stack.__init__", "Stack.push", "Stack.top",
                                            "window", "words"}
