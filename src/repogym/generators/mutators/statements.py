"""Statement mutators: drop a simple statement or an early ``return``, make a ``return``
return ``None``."""

from __future__ import annotations

from typing import Iterator

from tree_sitter import Node

from repogym.generators.mutators.base import (
    MUTATORS,
    NodeMutator,
    Site,
    named_children,
    replace_node,
)
from repogym.generators.mutators.edits import delete_statement
from repogym.generators.mutators.shared import innermost, summary

_REMOVABLE = frozenset({"assignment", "augmented_assignment", "call", "await"})
_TRIVIAL_RETURNS = frozenset({"none"})
_FUNCTIONS = frozenset({"function_definition", "lambda"})


def _removable_kind(stmt: Node) -> str | None:
    """``assignment``/``augmented assignment``/``call`` for a statement we may drop."""
    parts = named_children(stmt)
    if len(parts) != 1 or parts[0].type not in _REMOVABLE:
        return None
    part = parts[0]
    if part.type == "assignment" and part.child_by_field_name("type") is not None:
        return None  # `x: T = v` would take its annotation along; `x: T` does nothing
    if part.type == "await":
        inner = named_children(part)
        return "call" if len(inner) == 1 and inner[0].type == "call" else None
    return part.type.replace("_", " ")


@MUTATORS.register("remove_statement")
class RemoveStatement(NodeMutator):
    """Drop one assignment, augmented assignment or call statement.

    The statement's lines are deleted; when it is the only statement of its block, or
    shares a line with another statement, it is replaced by ``pass`` instead. Annotated
    assignments are kept (their annotation would go with them).
    """

    node_types = frozenset({"expression_statement"})

    def visit(self, node: Node, source: bytes) -> Iterator[Site]:
        """One site for a removable statement directly in a block."""
        kind = _removable_kind(node)
        site = None if kind is None else delete_statement(
            node, source, f"{kind} `{summary(node)}` removed")
        if site is not None:
            yield site


def _is_generator(function: Node) -> bool:
    """Whether the function's own body (not nested functions) contains ``yield``."""
    body = function.child_by_field_name("body")
    stack = [body] if body is not None else []
    while stack:
        node = stack.pop()
        if node.type == "yield":
            return True
        if node.type not in ("function_definition", "lambda", "class_definition"):
            stack.extend(node.children)
    return False


@MUTATORS.register("return_value")
class ReturnValue(NodeMutator):
    """``return x`` becomes ``return None`` (not in generators, not when x is None)."""

    node_types = frozenset({"return_statement"})

    def visit(self, node: Node, source: bytes) -> Iterator[Site]:
        """One site: the returned expression replaced by ``None``."""
        parts = named_children(node)
        if len(parts) != 1 or parts[0].type in _TRIVIAL_RETURNS:
            return
        function = innermost(node, _FUNCTIONS)
        if function is None or _is_generator(function):
            return
        yield replace_node(parts[0], "None",
                           f"`return {summary(parts[0])}` returns None instead", node)


@MUTATORS.register("remove_return")
class RemoveReturn(NodeMutator):
    """An early ``return`` is dropped: the function runs on past it.

    Early: inside an ``if``, loop, ``with`` or ``try`` rather than directly in the
    function's body (where dropping it is what ``return_value`` already does, or makes
    the rest of the body reachable).
    """

    node_types = frozenset({"return_statement"})

    def visit(self, node: Node, source: bytes) -> Iterator[Site]:
        """One site removing the statement (``pass`` when it is alone in its block)."""
        block = node.parent
        owner = block.parent if block is not None else None
        if owner is None or owner.type in ("function_definition", "module"):
            return
        site = delete_statement(node, source, f"early `{summary(node)}` removed")
        if site is not None:
            yield site
