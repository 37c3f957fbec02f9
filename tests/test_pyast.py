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
