"""Which parts of a Python file are *runtime code* that a mutator may touch.

Runtime code is the body of a function (or method), minus the regions below. A bug there
runs only when the function is called, so tests can catch it and the judge can select
the tests that cover it. Module- and class-level code is left alone: a bug there breaks
every import at once, which makes a blunt task.

Excluded wherever they appear (the whole subtree is skipped):

* type annotations (``type`` nodes: parameter, return and variable annotations) and
  parameter lists (defaults run at definition time, not call time);
* decorators, comments, docstrings and any other bare string statement;
* calls to ``print``, ``warnings.warn`` and loggers (``logging.*``, ``logger.*``,
  ``log.*``, ``self.logger.*``, ...), and statements made of them;
* assignments to ``__all__``;
* ``if TYPE_CHECKING:`` and ``if __name__ == "__main__":`` blocks (with their else);
* ``raise NotImplementedError``.
"""

from __future__ import annotations

import re
from typing import Iterator

from tree_sitter import Node

_SCOPES = frozenset({"function_definition", "class_definition"})
_ALWAYS_EXCLUDED = frozenset({"comment", "decorator", "type", "parameters"})
_STRINGS = frozenset({"string", "concatenated_string"})
_LOGGER_ROOTS = frozenset({"logging", "logger", "log", "loggers"})
_QUIET_CALLS = frozenset({"print", "warn", "warnings.warn"})
_MAIN_GUARD = re.compile(
    r"""^__name__\s*==\s*(['"])__main__\1$|^(['"])__main__\2\s*==\s*__name__$""")


def _text(node: Node | None) -> str:
    return (node.text or b"").decode("utf-8", "replace") if node is not None else ""


def _is_quiet_call(node: Node) -> bool:
    """A call to print, warnings.warn or a logger: output only, not behaviour."""
    callee = _text(node.child_by_field_name("function"))
    if callee in _QUIET_CALLS:
        return True
    parts = [p.split("(")[0].strip().lstrip("_").lower() for p in callee.split(".")]
    if parts and parts[0] in ("self", "cls"):
        parts = parts[1:]
    return len(parts) >= 2 and parts[0] in _LOGGER_ROOTS


def _is_guard(node: Node) -> bool:
    """``if TYPE_CHECKING:`` or ``if __name__ == "__main__":``."""
    cond = " ".join(_text(node.child_by_field_name("condition")).split())
    return cond.split(".")[-1] == "TYPE_CHECKING" or bool(_MAIN_GUARD.match(cond))


def _statement_parts(node: Node) -> list[Node]:
    return [c for c in node.named_children if c.type != "comment"]


def is_excluded(node: Node) -> bool:
    """Whether ``node`` and everything under it is off limits (see the module docstring)."""
    kind = node.type
    if kind in _ALWAYS_EXCLUDED:
        return True
    if kind == "call":
        return _is_quiet_call(node)
    if kind == "expression_statement":
        parts = _statement_parts(node)
        return all(p.type in _STRINGS for p in parts) or any(is_excluded(p) for p in parts)
    if kind == "assignment":
        return _text(node.child_by_field_name("left")) == "__all__"
    if kind == "await":
        return any(is_excluded(p) for p in _statement_parts(node))
    if kind == "if_statement":
        return _is_guard(node)
    if kind == "raise_statement":
        parts = _statement_parts(node)
        return bool(parts) and re.match(r"NotImplementedError\b", _text(parts[0])) is not None
    return False


def runtime_nodes(root: Node) -> Iterator[Node]:
    """Every node of runtime code under ``root``, in source order."""
    stack: list[tuple[Node, bool]] = [(root, False)]
    while stack:
        node, runtime = stack.pop()
        if is_excluded(node):
            continue
        if runtime:
            yield node
        if node.type in _SCOPES:
            body = node.child_by_field_name("body")
            if body is not None:
                stack.append((body, node.type == "function_definition"))
            continue
        stack.extend((child, runtime) for child in reversed(node.children))


def in_runtime_code(node: Node) -> bool:
    """Whether ``node`` lies in runtime code: checked from the node up to the root."""
    scope_ok: bool | None = None
    current: Node | None = node
    while current is not None:
        if is_excluded(current):
            return False
        if scope_ok is None and current.type in _SCOPES and current != node:
            body = current.child_by_field_name("body")
            scope_ok = (current.type == "function_definition" and body is not None
                        and body.start_byte <= node.start_byte
                        and node.end_byte <= body.end_byte)
        current = current.parent
    return bool(scope_ok)


def enclosing_function(node: Node) -> str | None:
    """The qualified name of the innermost function around ``node``: ``"Klass.method"``.

    Nested functions and classes are joined with dots (``"outer.inner"``); ``None`` when
    the node is not inside a function.
    """
    names: list[str] = []
    in_function = False
    current: Node | None = node.parent
    while current is not None:
        if current.type in _SCOPES:
            names.append(_text(current.child_by_field_name("name")))
            in_function = in_function or current.type == "function_definition"
        current = current.parent
    return ".".join(reversed(names)) if in_function else None
