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


def function_spans(source: str) -> dict[str, tuple[int, int, int]] | None:
    """The module's functions and methods (classes nest: ``Class.Inner.method``) by
    qualified name: (first line of the head, decorators included; first line of the body;
    last line). A function defined inside another belongs to the outer one. None when the
    source does not parse; a name defined twice keeps its last definition, as Python does."""
    try:
        tree = parse(source)
    except (SyntaxError, ValueError):
        return None
    spans: dict[str, tuple[int, int, int]] = {}

    def visit(body: list[ast.stmt], prefix: str) -> None:
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                head = min([node.lineno, *(d.lineno for d in node.decorator_list)])
                end = node.end_lineno or node.lineno
                spans[prefix + node.name] = (head, node.body[0].lineno, end)
            elif isinstance(node, ast.ClassDef):
                visit(node.body, f"{prefix}{node.name}.")

    visit(tree.body, "")
    return spans


def carry_by_function(old: str, new: str, lines: list[int]) -> list[int] | None:
    """``lines`` of the ``old`` source, each inside a function's body, as the body lines of
    the same functions (by qualified name) in the ``new`` source: where a change made in a
    function lives in a later version of the file whose lines moved or changed since. None
    when a line is outside any function body (module or class level, a ``def`` line or a
    decorator: it runs at import) or its function is not in ``new`` (renamed, removed),
    or either source does not parse."""
    before, after = function_spans(old), function_spans(new)
    if before is None or after is None:
        return None
    out: set[int] = set()
    for line in lines:
        name = next((n for n, (_h, body, end) in before.items() if body <= line <= end), None)
        if name is None or name not in after:
            return None
        _head, body, end = after[name]
        out.update(range(body, end + 1))
    return sorted(out)


def heads_as_bodies(source: str, lines: list[int]) -> list[int]:
    """``lines`` with each line of a function's head (a ``def`` line or a decorator) taken
    as the function's body lines: a change to a signature or a default reaches the code
    that calls the function, which runs its body. Other lines stay; all stay when the
    source does not parse."""
    spans = function_spans(source)
    if spans is None:
        return sorted(set(lines))
    out: set[int] = set()
    for line in lines:
        span = next(((body, end) for head, body, end in spans.values()
                     if head <= line < body), None)
        out.update(range(span[0], span[1] + 1) if span else (line,))
    return sorted(out)
