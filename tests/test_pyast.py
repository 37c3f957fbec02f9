"""repogym.pyast: ast's parse and compile under one lock (CPython 3.11's AST conversion is
not thread-safe: concurrent parses raised SystemError in a corpus run)."""

from __future__ import annotations

import ast
from concurrent.futures import ThreadPoolExecutor

import pytest

from repogym import pyast

SOURCE = "def f(x):\n" + "    x = [[[[(x, {1: (2, [3])})]]]]\n" * 200 + "    return x\n"


def test_it_answers_as_ast_does():
    assert ast.dump(pyast.parse(SOURCE)) == ast.dump(ast.parse(SOURCE))
    assert pyast.literal_eval("{'a': (1, 2.5, None)}") == {"a": (1, 2.5, None)}
    with pytest.raises(SyntaxError):
        pyast.parse("def (")
    with pytest.raises(SyntaxError):  # found only when compiled: a return outside a function
        pyast.compile_tree(pyast.parse("return 1"), "<t>")


def test_threads_parsing_at_once_all_get_the_tree():
    want = ast.dump(ast.parse(SOURCE))
    with ThreadPoolExecutor(8) as pool:
        got = list(pool.map(lambda _: ast.dump(pyast.parse(SOURCE)), range(64)))
    assert got == [want] * 64


OLD = '''import os


class Box:
    size = 1

    @property
    def area(self):
        return self.size * self.size

    def grow(self, by):
        def step(x):
            return x + 1
        return step(by)


def helper(x):
    return x * 2
'''
# later: a method added above, helper's body rewritten, a line inserted in grow
NEW = '''import os


class Box:
    size = 1

    def __init__(self):
        self.size = 2

    @property
    def area(self):
        return self.size * self.size

    def grow(self, by):
        by = int(by)
        def step(x):
            return x + 1
        return step(by)


def helper(x):
    y = x * 2
    return y
'''


def test_function_spans_name_methods_by_class_and_keep_inner_functions_in_the_outer():
    spans = pyast.function_spans(OLD)
    assert spans == {"Box.area": (7, 9, 9), "Box.grow": (11, 12, 14), "helper": (17, 18, 18)}
    assert pyast.function_spans("def (") is None


def test_changed_lines_are_carried_to_the_same_functions_later_body():
    # line 13 is in grow's inner function, 18 in helper: carried to grow's and helper's
    # bodies in the later version, wherever the lines went
    assert pyast.carry_by_function(OLD, NEW, [13, 18]) == [15, 16, 17, 18, 22, 23]


def test_a_line_that_runs_at_import_or_a_function_gone_since_is_not_carried():
    assert pyast.carry_by_function(OLD, NEW, [5]) is None  # class level: runs at import
    assert pyast.carry_by_function(OLD, NEW, [7]) is None  # a decorator line
    assert pyast.carry_by_function(OLD, NEW, [11]) is None  # a def line
    assert pyast.carry_by_function(OLD, NEW.replace("def helper", "def helped"), [18]) is None
    assert pyast.carry_by_function(OLD, "def (", [18]) is None


def test_a_changed_def_line_or_decorator_counts_as_its_body():
    assert pyast.heads_as_bodies(OLD, [7, 11, 18]) == [9, 12, 13, 14, 18]
    assert pyast.heads_as_bodies(OLD, [1, 5]) == [1, 5]  # module and class level stay
    assert pyast.heads_as_bodies("def (", [3, 1]) == [1, 3]
