"""Python's ``ast`` module, safe to call from several threads at once.

CPython 3.11 keeps the recursion depth of its AST conversion (C structures to Python objects
and back) per interpreter, not per thread: two threads parsing at the same moment can fail
with ``SystemError: AST constructor recursion depth mismatch`` (a corpus run judges several
repositories in threads, and statements parse test sources). Every parse and every compile of
a tree goes through one lock here; walking and reading a tree need none.
"""

from __future__ import annotations

import ast
import threading
from typing import Any

_LOCK = threading.RLock()


def parse(source: str | bytes, filename: str = "<unknown>") -> ast.Module:
    """:func:`ast.parse` under the lock (raises what it raises: ``SyntaxError``...)."""
    with _LOCK:
        return ast.parse(source, filename=filename)


def compile_tree(tree: ast.Module, filename: str) -> None:
    """Compile ``tree`` (for the errors only a compile finds) under the lock."""
    with _LOCK:
        compile(tree, filename, "exec", dont_inherit=True)


def literal_eval(text: str) -> Any:
    """:func:`ast.literal_eval` of source text (which it parses) under the lock."""
    with _LOCK:
        return ast.literal_eval(text)
