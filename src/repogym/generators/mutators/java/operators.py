"""Operator mutators: flip a comparison, swap an arithmetic, bitwise or logical operator,
turn an increment into a decrement."""

from __future__ import annotations

from typing import Iterator

from tree_sitter import Node

from repogym.generators.mutators.base import MUTATORS, Site, named_children, replace_node, text
from repogym.generators.mutators.java.base import JavaNodeMutator
from repogym.generators.mutators.java.checks import (
    condition_is_plain,
    is_constant,
    is_numeric,
    operator,
    unparenthesised,
)
from repogym.generators.mutators.java.scopes import FUNCTIONS, LOOPS
from repogym.generators.mutators.shared import operator_swapped

COMPARISON_FLIPS: dict[str, str] = {
    "<": ">=", ">=": "<", ">": "<=", "<=": ">", "==": "!=", "!=": "=="}
ARITHMETIC_SWAPS: dict[str, str] = {
    "+": "-", "-": "+", "*": "/", "/": "*", "%": "*",
    "+=": "-=", "-=": "+=", "*=": "/=", "/=": "*=", "%=": "*="}
BITWISE_SWAPS: dict[str, str] = {
    "&": "|", "|": "&", "^": "&", "<<": ">>", ">>": "<<", ">>>": "<<",
    "&=": "|=", "|=": "&=", "^=": "&=", "<<=": ">>=", ">>=": "<<=", ">>>=": "<<="}
LOGICAL_SWAPS: dict[str, str] = {"&&": "||", "||": "&&"}
_EXPRESSIONS = frozenset({"binary_expression", "parenthesized_expression",
                          "unary_expression"})


def _swap(node: Node, table: dict[str, str]) -> Iterator[Site]:
    op = node.child_by_field_name("operator")
    if op is not None:
        yield from operator_swapped(op, table)


def _operands(node: Node) -> tuple[Node | None, Node | None]:
    return node.child_by_field_name("left"), node.child_by_field_name("right")


@MUTATORS.register("java_comparison_flip")
class ComparisonFlip(JavaNodeMutator):
    """``<``↔``>=``, ``>``↔``<=``, ``==``↔``!=``.

    Not between two literals (``1 < 2`` as a loop condition decides what is reachable).
    """

    node_types = frozenset({"binary_expression"})

    def visit(self, node: Node, source: bytes) -> Iterator[Site]:
        """One site for a comparison's operator."""
        if not is_constant(node):
            yield from _swap(node, COMPARISON_FLIPS)


def _is_zero(node: Node | None) -> bool:
    return node is not None and text(unparenthesised(node)).rstrip("lLdDfF") in (
        "0", "0.0", "0x0")


@MUTATORS.register("java_arithmetic_swap")
class ArithmeticSwap(JavaNodeMutator):
    """``+``↔``-``, ``*``↔``/``, ``%``→``*`` (and their compound assignments).

    ``+`` and ``+=`` only where both sides are surely numbers (literals, variables of a
    numeric type, ``.length``, ``size()``, arithmetic...): a string ``+`` swapped does not
    compile, and when the file does not tell, nothing is proposed. Not ``x * 0`` (a
    division by zero) and not between two literals.
    """

    node_types = frozenset({"binary_expression", "assignment_expression"})

    def visit(self, node: Node, source: bytes) -> Iterator[Site]:
        """One site for the node's operator."""
        op = operator(node)
        if op not in ARITHMETIC_SWAPS or is_constant(node):
            return
        left, right = _operands(node)
        if left is None or right is None:
            return
        if op in ("+", "+=") and not (is_numeric(left) and is_numeric(right)):
            return
        if op in ("*", "*=") and _is_zero(right):
            return
        yield from _swap(node, ARITHMETIC_SWAPS)


@MUTATORS.register("java_bitwise_swap")
class BitwiseSwap(JavaNodeMutator):
    """``&``↔``|``, ``^``→``&``, ``<<``↔``>>``, ``>>>``→``<<`` (and their compound
    assignments): a wrong mask or shift."""

    node_types = frozenset({"binary_expression", "assignment_expression"})

    def visit(self, node: Node, source: bytes) -> Iterator[Site]:
        """One site for the node's operator."""
        if not is_constant(node):
            yield from _swap(node, BITWISE_SWAPS)


def _chain_head(node: Node) -> Node:
    """The outermost expression of ``&&``, ``||``, ``!`` and parentheses around ``node``."""
    current = node
    while current.parent is not None and current.parent.type in _EXPRESSIONS:
        current = current.parent
    return current


@MUTATORS.register("java_logical_swap")
class LogicalSwap(JavaNodeMutator):
    """``&&``↔``||``.

    Not in a condition that assigns a variable or declares a pattern variable
    (``o instanceof Foo f && f.ok()``: with ``||``, ``f`` is out of scope).
    """

    node_types = frozenset({"binary_expression"})

    def visit(self, node: Node, source: bytes) -> Iterator[Site]:
        """One site for the node's operator."""
        if operator(node) in LOGICAL_SWAPS and condition_is_plain(_chain_head(node)) \
                and not is_constant(node):
            yield from _swap(node, LOGICAL_SWAPS)


def in_loop(node: Node) -> bool:
    """Whether ``node`` is in a loop of its own function (header or body)."""
    current = node.parent
    while current is not None and current.type not in FUNCTIONS:
        if current.type in LOOPS:
            return True
        current = current.parent
    return False


@MUTATORS.register("java_update_flip")
class UpdateFlip(JavaNodeMutator):
    """``i++``↔``i--`` (``++i``↔``--i``) inside a loop: the loop walks the wrong way."""

    node_types = frozenset({"update_expression"})

    def visit(self, node: Node, source: bytes) -> Iterator[Site]:
        """One site for an increment or decrement in a loop."""
        token = next((c for c in node.children if not c.is_named), None)
        if token is None or text(token) not in ("++", "--") or not in_loop(node) \
                or not named_children(node):
            return
        new = "--" if text(token) == "++" else "++"
        yield replace_node(token, new, f"`{text(token)}` replaced by `{new}`", node)
