"""The base of the ``rust`` family's node mutators, and helpers they share."""

from __future__ import annotations

from tree_sitter import Node

from repogym.generators.mutators.base import NodeMutator, text
from repogym.generators.mutators.rust.grammar import FAMILY
from repogym.generators.mutators.rust.runtime import COMMENTS


class RustNodeMutator(NodeMutator):
    """A node mutator for Rust trees."""

    family = FAMILY


def parts(node: Node) -> list[Node]:
    """The node's named children, comments left out."""
    return [c for c in node.named_children if c.type not in COMMENTS]


def operator(node: Node) -> str:
    """The text of a node's ``operator`` field (``""`` without one)."""
    op = node.child_by_field_name("operator")
    return text(op) if op is not None else ""


def unparenthesised(node: Node) -> Node:
    """The expression inside parentheses: ``((x))`` -> ``x``."""
    while node.type == "parenthesized_expression" and len(parts(node)) == 1:
        node = parts(node)[0]
    return node


def method_call(node: Node) -> tuple[Node, str] | None:
    """``(receiver, method)`` of a method call ``receiver.method(...)`` (turbofish too)."""
    if node.type != "call_expression":
        return None
    function = node.child_by_field_name("function")
    if function is not None and function.type == "generic_function":
        function = function.child_by_field_name("function")
    if function is None or function.type != "field_expression":
        return None
    receiver = function.child_by_field_name("value")
    field = function.child_by_field_name("field")
    if receiver is None or field is None:
        return None
    return receiver, text(field)


def is_let_condition(node: Node) -> bool:
    """An ``if let`` / ``while let`` condition (or a chain with one)."""
    return node.type in ("let_condition", "let_chain")
