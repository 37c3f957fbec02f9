"""Operator mutators: flip a comparison, swap an arithmetic, bitwise or logical operator,
turn an increment into a decrement."""

from __future__ import annotations

from typing import Iterator

from tree_sitter import Node

from repogym.generators.mutators.base import MUTATORS, Site, named_children, replace_node, text
from repogym.generators.mutators.golang.base import (
    GoNodeMutator,
    operator,
    unparenthesised,
    vet_clean,
)
from repogym.generators.mutators.golang.checks import is_zero_constant
from repogym.generators.mutators.golang.hints import is_string
from repogym.generators.mutators.golang.scopes import FUNCTIONS, LOOPS
from repogym.generators.mutators.shared import operator_swapped

COMPARISON_FLIPS: dict[str, str] = {
    "<": ">=", ">=": "<", ">": "<=", "<=": ">", "==": "!=", "!=": "=="}
ARITHMETIC_SWAPS: dict[str, str] = {
    "+": "-", "-": "+", "*": "/", "/": "*", "%": "*",
    "+=": "-=", "-=": "+=", "*=": "/=", "/=": "*=", "%=": "*="}
BITWISE_SWAPS: dict[str, str] = {
    "&": "|", "|": "&", "^": "&", "&^": "&", "<<": ">>", ">>": "<<",
    "&=": "|=", "|=": "&=", "^=": "&=", "&^=": "&=", "<<=": ">>=", ">>=": "<<="}
LOGICAL_SWAPS: dict[str, str] = {"&&": "||", "||": "&&"}
_CONSTANTS = frozenset({"int_literal", "float_literal", "rune_literal", "imaginary_literal"})


def _operands(node: Node) -> tuple[Node | None, Node | None]:
    """The left and right of a binary expression or an assignment (``s += x``: ``s``,
    ``x``)."""
    return (_single(node.child_by_field_name("left")),
            _single(node.child_by_field_name("right")))


def _single(node: Node | None) -> Node | None:
    """The one expression of an expression list (``x`` of ``s += x``), or ``node``."""
    if node is not None and node.type == "expression_list":
        parts = named_children(node)
        return parts[0] if len(parts) == 1 else None
    return node


def _swap(node: Node, table: dict[str, str]) -> Iterator[Site]:
    """A site replacing the node's operator by its entry in ``table``, if it has one."""
    op = node.child_by_field_name("operator")
    if op is not None:
        yield from operator_swapped(op, table)


@MUTATORS.register("go_comparison_flip")
class ComparisonFlip(GoNodeMutator):
    """``<``↔``>=``, ``>``↔``<=``, ``==``↔``!=``.

    Not where the flip would make vet's ``bool`` check fail ``go test``
    (``x != a || x != b``).
    """

    node_types = frozenset({"binary_expression"})

    def visit(self, node: Node, source: bytes) -> Iterator[Site]:
        """One site for a comparison's operator."""
        for site in _swap(node, COMPARISON_FLIPS):
            if vet_clean(site, node, source):
                yield site


def _both_constant(node: Node) -> bool:
    """``1 << 3``, ``1024 * (1 << 10)``: a constant expression, which may overflow its
    type, or divide by a constant zero, once changed."""
    return all(c is not None and _constant(c) for c in _operands(node))


def _constant(node: Node) -> bool:
    """An expression of literals only."""
    node = unparenthesised(node)
    if node.type in _CONSTANTS:
        return True
    return node.type in ("binary_expression", "unary_expression") and all(
        _constant(c) for c in named_children(node))


def builds_string(node: Node) -> bool:
    """Whether a ``+`` (``+=``) joins strings, as far as the file shows
    (:mod:`~repogym.generators.mutators.golang.hints`)."""
    if operator(node) not in ("+", "+="):
        return False
    return any(c is not None and is_string(c) for c in _operands(node))


@MUTATORS.register("go_arithmetic_swap")
class ArithmeticSwap(GoNodeMutator):
    """``+``↔``-``, ``*``↔``/``, ``%``→``*`` (and their compound assignments).

    Not string concatenation (``-`` does not build on strings), not ``x * 0`` (``x / 0``
    does not build), and not between constants (``60 * 60``: a constant expression may
    overflow its type, or become a division by zero, once changed).
    """

    node_types = frozenset({"binary_expression", "assignment_statement"})

    def visit(self, node: Node, source: bytes) -> Iterator[Site]:
        """One site for the node's operator, unless it joins strings."""
        if builds_string(node) or _to_zero_division(node) or _both_constant(node):
            return
        yield from _swap(node, ARITHMETIC_SWAPS)


def _to_zero_division(node: Node) -> bool:
    """``x * 0`` -> ``x / 0`` does not build."""
    right = _operands(node)[1]
    return operator(node) in ("*", "*=") and right is not None and is_zero_constant(right)


@MUTATORS.register("go_bitwise_swap")
class BitwiseSwap(GoNodeMutator):
    """``&``↔``|``, ``^``→``&``, ``&^``→``&``, ``<<``↔``>>`` (and their compound
    assignments): a wrong mask or shift.

    Not between constants (``0x80 >> 1`` -> ``0x80 << 1`` may overflow a byte, which does
    not build).
    """

    node_types = frozenset({"binary_expression", "assignment_statement"})

    def visit(self, node: Node, source: bytes) -> Iterator[Site]:
        """One site for the node's operator."""
        if not _both_constant(node):
            yield from _swap(node, BITWISE_SWAPS)


@MUTATORS.register("go_logical_swap")
class LogicalSwap(GoNodeMutator):
    """``&&``↔``||``.

    Not where the swap would make vet's ``bool`` check fail ``go test``: ``c != ' ' &&
    c != '\\t'`` -> ``c != ' ' || c != '\\t'`` is always true, and vet says so.
    """

    node_types = frozenset({"binary_expression"})

    def visit(self, node: Node, source: bytes) -> Iterator[Site]:
        """One site for the node's operator."""
        for site in _swap(node, LOGICAL_SWAPS):
            if vet_clean(site, node, source):
                yield site


def in_loop(node: Node) -> bool:
    """Whether ``node`` is in a loop of its own function (header or body)."""
    current = node.parent
    while current is not None and current.type not in FUNCTIONS:
        if current.type in LOOPS:
            return True
        current = current.parent
    return False


@MUTATORS.register("go_update_flip")
class UpdateFlip(GoNodeMutator):
    """``i++``↔``i--`` inside a loop: the loop walks the wrong way."""

    node_types = frozenset({"inc_statement", "dec_statement"})

    def visit(self, node: Node, source: bytes) -> Iterator[Site]:
        """One site for an increment or decrement in a loop."""
        token = node.children[-1] if node.children else None
        if token is None or text(token) not in ("++", "--") or not in_loop(node):
            return
        new = "--" if text(token) == "++" else "++"
        yield replace_node(token, new, f"`{text(token)}` replaced by `{new}`", node)
