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
* ``raise NotImplementedError``;
* unreachable statements: those after an unconditional ``return``, ``raise``,
  ``continue`` or ``break`` in the same block.

Parameter default values are the one exception to the rule that a signature is off
limits: they run when the function is defined but act on every call, so a mutator that
says so (``Mutator.edits_defaults``) may change them (see :func:`in_default_value`),
unless the function is a stub (its body does nothing, e.g. only ``...`` or
``raise NotImplementedError``) or an ``@overload``.
"""

from __future__ import annotations

import re
from typing import Iterator

from tree_sitter import Node

from repogym.generators.mutators.base import named_children
from repogym.generators.mutators.shared import (
    ancestors,
    contains,
    follows_terminator,
    holds,
    in_body,
    is_output_call,
    qualified_name,
    reachable,
    runtime_walk,
)

_SCOPES = frozenset({"function_definition", "class_definition"})
_ALWAYS_EXCLUDED = frozenset({"comment", "decorator", "type", "parameters"})
_STRINGS = frozenset({"string", "concatenated_string"})
_LOGGER_ROOTS = frozenset({"logging", "logger", "log", "loggers"})
_QUIET_CALLS = frozenset({"print", "warn", "warnings.warn"})
_TERMINATORS = frozenset({"return_statement", "raise_statement", "continue_statement",
                          "break_statement"})
_DEFAULTS = frozenset({"default_parameter", "typed_default_parameter"})
_NO_OPS = frozenset({"pass_statement", "ellipsis"})
_BLOCKS = frozenset({"block"})
_MAIN_GUARD = re.compile(
    r"""^__name__\s*==\s*(['"])__main__\1$|^(['"])__main__\2\s*==\s*__name__$""")


def _text(node: Node | None) -> str:
    return (node.text or b"").decode("utf-8", "replace") if node is not None else ""


def _is_quiet_call(node: Node) -> bool:
    """A call to print, warnings.warn or a logger: output only, not behaviour."""
    return is_output_call(_text(node.child_by_field_name("function")), _QUIET_CALLS,
                          _LOGGER_ROOTS, ("self", "cls"))


def _is_guard(node: Node) -> bool:
    """``if TYPE_CHECKING:`` or ``if __name__ == "__main__":``."""
    cond = " ".join(_text(node.child_by_field_name("condition")).split())
    return cond.split(".")[-1] == "TYPE_CHECKING" or bool(_MAIN_GUARD.match(cond))


def is_unreachable(node: Node) -> bool:
    """A statement after an unconditional return/raise/continue/break in its block."""
    if node.parent is None or node.parent.type != "block":
        return False
    return follows_terminator(node, _TERMINATORS)


def reachable_children(node: Node) -> list[Node]:
    """A node's children; for a block, only up to its first return/raise/continue/break."""
    return reachable(node, _BLOCKS, _TERMINATORS)


def is_off_limits(node: Node) -> bool:
    """Whether ``node`` is excluded (:func:`is_excluded`) or unreachable."""
    return is_excluded(node) or is_unreachable(node)


def is_excluded(node: Node) -> bool:
    """Whether ``node`` and everything under it is off limits (see the module docstring).

    Unreachable statements are off limits too, but need their block to tell: see
    :func:`is_off_limits`.
    """
    kind = node.type
    if kind in _ALWAYS_EXCLUDED:
        return True
    if kind == "call":
        return _is_quiet_call(node)
    if kind == "expression_statement":
        parts = named_children(node)
        return all(p.type in _STRINGS for p in parts) or any(is_excluded(p) for p in parts)
    if kind == "assignment":
        return _text(node.child_by_field_name("left")) == "__all__"
    if kind == "await":
        return any(is_excluded(p) for p in named_children(node))
    if kind == "if_statement":
        return _is_guard(node)
    if kind == "raise_statement":
        parts = named_children(node)
        return bool(parts) and re.match(r"NotImplementedError\b", _text(parts[0])) is not None
    return False


def holds_off_limits(node: Node) -> bool:
    """Whether deleting ``node`` would take off-limits code along: a docstring, a logging
    call, an annotation, unreachable code, or a nested function or class."""
    return holds(node, _may_not_go, reachable_children)


def _may_not_go(node: Node) -> bool:
    """A nested function or class, or excluded code other than a comment."""
    return node.type in _SCOPES or (node.type != "comment" and is_excluded(node))


def runtime_nodes(root: Node) -> Iterator[Node]:
    """Every node of runtime code under ``root``, in source order."""
    return runtime_walk(root, is_excluded, reachable_children, _body_runtime)


def _body_runtime(node: Node, runtime: bool) -> bool | None:
    """For a function or class, whether its body is runtime code (a function's is); None
    for any other node."""
    return node.type == "function_definition" if node.type in _SCOPES else None


def in_runtime_code(node: Node, *, defaults: bool = False) -> bool:
    """Whether ``node`` lies in runtime code: checked from the node up to the root.

    With ``defaults``, a node inside a parameter's default value counts too (see
    :func:`in_default_value`).
    """
    return _in_function_body(node) or (defaults and in_default_value(node))


def _in_function_body(node: Node) -> bool:
    return in_body(node, is_off_limits, _scope_verdict)


def _scope_verdict(scope: Node, node: Node) -> bool | None:
    """The innermost function or class around ``node`` decides: a function whose body
    holds it. None for any other node."""
    if scope.type not in _SCOPES:
        return None
    return scope.type == "function_definition" and contains(
        scope.child_by_field_name("body"), node)


def in_default_value(node: Node) -> bool:
    """Whether ``node`` lies in the default value of a live function's parameter.

    Live: not inside an excluded region, not an ``@overload`` and not a stub.
    """
    current: Node | None = node
    while current is not None and current.type not in _DEFAULTS:
        if current.type in _SCOPES or current.type in ("type", "lambda"):
            return False
        current = current.parent
    value = current.child_by_field_name("value") if current is not None else None
    if value is None or not value.start_byte <= node.start_byte <= node.end_byte <= value.end_byte:
        return False
    params = current.parent if current is not None else None
    function = params.parent if params is not None else None
    if function is None or function.type != "function_definition":
        return False
    return is_live_function(function)


def is_live_function(function: Node) -> bool:
    """A function whose defaults matter: not excluded, not an overload, not a stub."""
    if any(is_off_limits(a) for a in ancestors(function)):
        return False
    return not _is_overload(function) and not _is_stub(function)


def _is_overload(function: Node) -> bool:
    parent = function.parent
    if parent is None or parent.type != "decorated_definition":
        return False
    return any(_text(d).lstrip("@").split(".")[-1].strip() == "overload"
               for d in parent.children if d.type == "decorator")


def _is_stub(function: Node) -> bool:
    """A body with nothing live in it: ``...``, ``pass``, docstrings, bare annotations,
    logging and ``raise NotImplementedError``."""
    body = function.child_by_field_name("body")
    return body is None or all(_does_nothing(s) for s in named_children(body))


def _does_nothing(stmt: Node) -> bool:
    if stmt.type in _NO_OPS or is_off_limits(stmt):
        return True
    if stmt.type != "expression_statement":
        return False
    parts = named_children(stmt)
    return all(p.type in _NO_OPS or (p.type == "assignment"
                                     and p.child_by_field_name("right") is None)
               for p in parts)


def enclosing_function(node: Node) -> str | None:
    """The qualified name of the innermost function around ``node``: ``"Klass.method"``.

    Nested functions and classes are joined with dots (``"outer.inner"``); ``None`` when
    the node is not inside a function.
    """
    return qualified_name(node, _scope_name)


def _scope_name(node: Node) -> tuple[bool, str] | None:
    """For a function or class: whether it is a function, and its name."""
    if node.type not in _SCOPES:
        return None
    return node.type == "function_definition", _text(node.child_by_field_name("name"))
