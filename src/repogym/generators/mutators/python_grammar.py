"""The Python grammar: tree-sitter-python, the runtime-code rules of
:mod:`repogym.generators.mutators.runtime`, and a mutation counts when it still compiles
with this Python and changes the code of its scope (``ast.dump`` differs)."""

from __future__ import annotations

import ast
from functools import lru_cache
from typing import Iterator

import tree_sitter_python
from tree_sitter import Language, Node

from repogym import pyast
from repogym.generators.mutators import runtime
from repogym.generators.mutators.grammars import GRAMMARS, Grammar

_AST_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


@GRAMMARS.register("python")
class PythonGrammar(Grammar):
    family = "python"
    suffixes = (".py",)

    def language(self) -> Language:
        return Language(tree_sitter_python.language())

    def runtime_nodes(self, root: Node) -> Iterator[Node]:
        return runtime.runtime_nodes(root)

    def in_runtime_code(self, node: Node, *, defaults: bool = False) -> bool:
        return runtime.in_runtime_code(node, defaults=defaults)

    def enclosing_function(self, node: Node) -> str | None:
        return runtime.enclosing_function(node)

    def real_change(self, path: str, original: str, mutated: str, line: int) -> bool:
        """When the original compiles with this Python, the mutated text must compile too
        and differ in the AST of the innermost class or function around ``line``."""
        before = _compiled_original(original, path)
        if before is None:
            return True  # another Python's syntax: the clean re-parse is all we can check
        after = compiled(mutated, path)
        return after is not None and not _same_code(before, after, line)


@lru_cache(maxsize=32)
def _compiled_original(text: str, path: str) -> ast.Module | None:
    """:func:`compiled`, once per file (every mutation of it compares against it)."""
    return compiled(text, path)


def compiled(text: str, path: str) -> ast.Module | None:
    """The AST of ``text`` if it parses and compiles with this Python, else None."""
    try:
        module = pyast.parse(text, filename=path)
        pyast.compile_tree(module, path)
    except (SyntaxError, ValueError):
        return None
    return module


def _scope_path(module: ast.Module, line: int) -> list[int]:
    """Indices down through the classes and functions whose body holds ``line``."""
    path: list[int] = []
    body: list[ast.stmt] = module.body
    while True:
        for i, stmt in enumerate(body):
            if (isinstance(stmt, _AST_SCOPES) and stmt.lineno <= line
                    and line <= (stmt.end_lineno or stmt.lineno)):
                path.append(i)
                body = stmt.body
                break
        else:
            return path


def _follow(module: ast.Module, path: list[int]) -> ast.AST | None:
    node: ast.AST = module
    for i in path:
        body = getattr(node, "body", [])
        if i >= len(body) or not isinstance(body[i], _AST_SCOPES):
            return None
        node = body[i]
    return node


def _same_code(before: ast.Module, after: ast.Module, line: int) -> bool:
    """Whether a change on ``line`` left the code as it was (comments and layout aside).

    Only the innermost class or function around the line is compared: the bytes outside
    it did not change, so neither did their syntax trees.
    """
    path = _scope_path(before, line)
    old, new = _follow(before, path), _follow(after, path)
    return new is not None and old is not None and ast.dump(old) == ast.dump(new)
