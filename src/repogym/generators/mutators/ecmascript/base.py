"""The base of the ``ecmascript`` family's node mutators, and helpers they share."""

from __future__ import annotations

from tree_sitter import Node

from repogym.generators.mutators.base import NodeMutator, text
from repogym.generators.mutators.ecmascript.grammar import FAMILY

_WRAPPERS = frozenset({"parenthesized_expression", "non_null_expression"})


class EcmaNodeMutator(NodeMutator):
    """A node mutator for JavaScript, TypeScript and TSX trees."""

    family = FAMILY


def operator(node: Node) -> str:
    """The text of a node's ``operator`` field (``""`` without one)."""
    op = node.child_by_field_name("operator")
    return text(op) if op is not None else ""


def unwrapped_expression(node: Node) -> Node:
    """The expression inside parentheses and TypeScript's ``!``: ``((x))`` -> ``x``."""
    while node.type in _WRAPPERS and node.named_children:
        node = node.named_children[0]
    return node
