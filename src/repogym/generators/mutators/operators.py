"""Operator mutators: flip a comparison or a membership/identity test, swap an arithmetic
or a boolean operator."""

from __future__ import annotations

from typing import ClassVar, Iterator

from tree_sitter import Node

from repogym.generators.mutators.base import MUTATORS, NodeMutator, Site
from repogym.generators.mutators.shared import operator_key, operator_swapped

COMPARISON_FLIPS: dict[str, str] = {
    "<": ">=", ">=": "<", ">": "<=", "<=": ">",
    "==": "!=", "!=": "==",
}
MEMBERSHIP_FLIPS: dict[str, str] = {
    "in": "not in", "not in": "in",
    "is": "is not", "is not": "is",
}
ARITHMETIC_SWAPS: dict[str, str] = {
    "+": "-", "-": "+", "*": "/", "/": "*", "//": "*", "%": "//",
    "+=": "-=", "-=": "+=", "*=": "/=", "/=": "*=", "//=": "*=", "%=": "//=",
}
BOOLEAN_SWAPS: dict[str, str] = {"and": "or", "or": "and"}
_STRINGS = frozenset({"string", "concatenated_string"})


class _OperatorFlip(NodeMutator):
    """Flips the operators of a comparison that are in :attr:`table`."""

    node_types = frozenset({"comparison_operator"})
    table: ClassVar[dict[str, str]]

    def visit(self, node: Node, source: bytes) -> Iterator[Site]:
        """One site per operator in the table (each of a chain is its own site)."""
        for op in node.children_by_field_name("operators"):
            yield from operator_swapped(op, self.table)


@MUTATORS.register("comparison_flip")
class ComparisonFlip(_OperatorFlip):
    """``<``↔``>=``, ``>``↔``<=``, ``==``↔``!=``."""

    table = COMPARISON_FLIPS


@MUTATORS.register("membership_flip")
class MembershipFlip(_OperatorFlip):
    """``in``↔``not in``, ``is``↔``is not``."""

    table = MEMBERSHIP_FLIPS


@MUTATORS.register("arithmetic_swap")
class ArithmeticSwap(NodeMutator):
    """``+``↔``-``, ``*``↔``/``, ``//``→``*``, ``%``→``//`` (and their augmented forms).

    String building is left alone: ``+`` with a string literal operand and ``%`` with a
    string literal on its left (``"%s" % x``) would only raise ``TypeError``.
    """

    node_types = frozenset({"binary_operator", "augmented_assignment"})

    def visit(self, node: Node, source: bytes) -> Iterator[Site]:
        """One site for the node's operator, unless it builds a string."""
        op = node.child_by_field_name("operator")
        left = node.child_by_field_name("left")
        right = node.child_by_field_name("right")
        if op is None or left is None or right is None:
            return
        key = operator_key(op)
        if key in ("+", "+=") and (left.type in _STRINGS or right.type in _STRINGS):
            return
        if key in ("%", "%=") and left.type in _STRINGS:
            return
        yield from operator_swapped(op, ARITHMETIC_SWAPS)


@MUTATORS.register("boolean_swap")
class BooleanSwap(NodeMutator):
    """``and``↔``or``."""

    node_types = frozenset({"boolean_operator"})

    def visit(self, node: Node, source: bytes) -> Iterator[Site]:
        """One site for the node's operator."""
        op = node.child_by_field_name("operator")
        if op is not None:
            yield from operator_swapped(op, BOOLEAN_SWAPS)
