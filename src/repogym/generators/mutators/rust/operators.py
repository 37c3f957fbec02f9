"""Operator mutators: flip a comparison, swap an arithmetic, bitwise or logical operator."""

from __future__ import annotations

from typing import Iterator

from tree_sitter import Node

from repogym.generators.mutators.base import MUTATORS, Site
from repogym.generators.mutators.rust.base import RustNodeMutator, operator
from repogym.generators.mutators.rust.checks import is_constant, is_numeric
from repogym.generators.mutators.shared import operator_swapped

COMPARISON_FLIPS: dict[str, str] = {
    "<": ">=", ">=": "<", ">": "<=", "<=": ">", "==": "!=", "!=": "=="}
ARITHMETIC_SWAPS: dict[str, str] = {
    "+": "-", "-": "+", "*": "/", "/": "*", "%": "*",
    "+=": "-=", "-=": "+=", "*=": "/=", "/=": "*=", "%=": "*="}
BITWISE_SWAPS: dict[str, str] = {
    "&": "|", "|": "&", "^": "&", "<<": ">>", ">>": "<<",
    "&=": "|=", "|=": "&=", "^=": "&=", "<<=": ">>=", ">>=": "<<="}
LOGICAL_SWAPS: dict[str, str] = {"&&": "||", "||": "&&"}
_SCALING = frozenset({"*", "/", "%", "*=", "/=", "%="})


def _swap(node: Node, table: dict[str, str]) -> Iterator[Site]:
    """A site replacing the node's operator by its entry in ``table``, if it has one (not
    where tree-sitter took a label for an operand: ``break 'a &x``)."""
    op = node.child_by_field_name("operator")
    left = node.child_by_field_name("left")
    if left is not None and left.type in ("break_expression", "label", "lifetime"):
        return
    if op is not None:
        yield from operator_swapped(op, table)


def _operands(node: Node) -> tuple[Node | None, Node | None]:
    return node.child_by_field_name("left"), node.child_by_field_name("right")


@MUTATORS.register("rs_comparison_flip")
class ComparisonFlip(RustNodeMutator):
    """``<``↔``>=``, ``>``↔``<=``, ``==``↔``!=`` (the same traits serve both)."""

    node_types = frozenset({"binary_expression"})

    def visit(self, node: Node, source: bytes) -> Iterator[Site]:
        """One site for a comparison's operator."""
        yield from _swap(node, COMPARISON_FLIPS)


def _both_constant(node: Node) -> bool:
    left, right = _operands(node)
    return left is not None and right is not None and is_constant(left) and is_constant(right)


def numbers(node: Node) -> bool:
    """Whether the file shows the operator works on numbers: ``+``/``-`` with a numeric
    operand (``Instant - Instant`` or ``String + &str`` have none); ``*``, ``/``, ``%``
    with a numeric right operand (``Duration * 2`` -> ``Duration / 2`` builds, ``2 *
    duration`` -> ``2 / duration`` does not)."""
    left, right = _operands(node)
    if operator(node) in _SCALING:
        return right is not None and is_numeric(right)
    return any(c is not None and is_numeric(c) for c in (left, right))


def _to_zero_division(node: Node) -> bool:
    """``x * 0`` -> ``x / 0`` is an error (``unconditional_panic``)."""
    right = _operands(node)[1]
    return operator(node) in ("*", "*=", "%", "%=") and right is not None \
        and right.type == "integer_literal" and text_value(right) == 0


def text_value(literal: Node) -> int | None:
    """An integer literal's value (``0x1F``, ``1_000u32``), None when it is none."""
    from repogym.generators.mutators.rust.literals import int_value

    return int_value((literal.text or b"").decode())


@MUTATORS.register("rs_arithmetic_swap")
class ArithmeticSwap(RustNodeMutator):
    """``+``↔``-``, ``*``↔``/``, ``%``→``*`` (and their compound assignments).

    Only on numbers, as far as the file shows (:func:`numbers`: never ``String + &str``,
    ``Instant - Instant``, or an operand type the file does not show), not ``x * 0``
    (``x / 0`` is an error), and not between constants (``60 * 60``: a constant
    expression may overflow its type once changed, an error too).
    """

    node_types = frozenset({"binary_expression", "compound_assignment_expr"})

    def visit(self, node: Node, source: bytes) -> Iterator[Site]:
        """One site for the node's operator, on numbers."""
        if operator(node) not in ARITHMETIC_SWAPS or _both_constant(node) \
                or _to_zero_division(node) or not numbers(node):
            return
        yield from _swap(node, ARITHMETIC_SWAPS)


@MUTATORS.register("rs_bitwise_swap")
class BitwiseSwap(RustNodeMutator):
    """``&``↔``|``, ``^``→``&``, ``<<``↔``>>`` (and their compound assignments): a wrong
    mask or shift. Not between constants (``0x80 >> 1`` -> ``0x80 << 1`` may overflow)."""

    node_types = frozenset({"binary_expression", "compound_assignment_expr"})

    def visit(self, node: Node, source: bytes) -> Iterator[Site]:
        """One site for the node's operator."""
        if not _both_constant(node):
            yield from _swap(node, BITWISE_SWAPS)


@MUTATORS.register("rs_logical_swap")
class LogicalSwap(RustNodeMutator):
    """``&&``↔``||`` (an ``if let ... && ...`` chain is no binary expression: left alone,
    ``||`` does not go there)."""

    node_types = frozenset({"binary_expression"})

    def visit(self, node: Node, source: bytes) -> Iterator[Site]:
        """One site for the node's operator."""
        yield from _swap(node, LOGICAL_SWAPS)
