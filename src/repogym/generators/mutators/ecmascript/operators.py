"""Operator mutators: flip a comparison, swap an arithmetic or a logical operator, turn an
increment into a decrement."""

from __future__ import annotations

from typing import Iterator

from tree_sitter import Node

from repogym.generators.mutators.base import MUTATORS, Site, text
from repogym.generators.mutators.ecmascript.base import EcmaNodeMutator, operator
from repogym.generators.mutators.ecmascript.scopes import FUNCTIONS, LOOPS, function_of
from repogym.generators.mutators.shared import operator_swapped

COMPARISON_FLIPS: dict[str, str] = {
    "<": ">=", ">=": "<", ">": "<=", "<=": ">",
    "===": "!==", "!==": "===", "==": "!=", "!=": "==",
}
ARITHMETIC_SWAPS: dict[str, str] = {
    "+": "-", "-": "+", "*": "/", "/": "*", "%": "*",
    "+=": "-=", "-=": "+=", "*=": "/=", "/=": "*=", "%=": "*=",
}
LOGICAL_SWAPS: dict[str, str] = {
    "&&": "||", "||": "&&", "??": "||",
    "&&=": "||=", "||=": "&&=", "??=": "||=",
}
UPDATE_FLIPS: dict[str, str] = {"++": "--", "--": "++"}
_STRINGS = frozenset({"string", "template_string"})
_CONCATENATIONS = frozenset({"+", "+="})
_STRING_SETTERS = frozenset({"variable_declarator", "assignment_expression"})


def _swap(node: Node, table: dict[str, str]) -> Iterator[Site]:
    """A site replacing the node's operator by its entry in ``table``, if it has one."""
    op = node.child_by_field_name("operator")
    if op is not None:
        yield from operator_swapped(op, table)


@MUTATORS.register("js_comparison_flip")
class ComparisonFlip(EcmaNodeMutator):
    """``<``↔``>=``, ``>``↔``<=``, ``===``↔``!==``, ``==``↔``!=``."""

    node_types = frozenset({"binary_expression"})

    def visit(self, node: Node, source: bytes) -> Iterator[Site]:
        """One site for a comparison's operator."""
        yield from _swap(node, COMPARISON_FLIPS)


def builds_string(node: Node) -> bool:
    """Whether a ``+`` (or ``+=``) concatenates text: an operand is a string or template
    literal or itself such a concatenation (``"a" + b + c``), or the variable ``+=``
    adds to starts as a string in its function (``let out = ""; ... out += x``)."""
    if operator(node) not in _CONCATENATIONS:
        return False
    for field in ("left", "right"):
        operand = node.child_by_field_name(field)
        if operand is None:
            continue
        if operand.type in _STRINGS:
            return True
        if operand.type == "binary_expression" and builds_string(operand):
            return True
    left = node.child_by_field_name("left")
    return (node.type == "augmented_assignment_expression" and left is not None
            and left.type == "identifier" and _starts_as_string(node, text(left)))


def _starts_as_string(node: Node, name: str) -> bool:
    """Whether the outermost function around ``node`` (closures share its variables)
    declares or sets ``name`` to a string literal."""
    function = function_of(node)
    while function is not None and function_of(function) is not None:
        function = function_of(function)
    stack = [function] if function is not None else []
    while stack:
        current = stack.pop()
        target = current.child_by_field_name("name" if current.type == "variable_declarator"
                                              else "left")
        value = current.child_by_field_name("value" if current.type == "variable_declarator"
                                             else "right")
        if current.type in _STRING_SETTERS and target is not None and value is not None \
                and text(target) == name and value.type in _STRINGS:
            return True
        stack.extend(current.named_children)
    return False


@MUTATORS.register("js_arithmetic_swap")
class ArithmeticSwap(EcmaNodeMutator):
    """``+``↔``-``, ``*``↔``/``, ``%``→``*`` (and their compound assignments).

    String building is left alone (:func:`builds_string`): ``-`` there would only make
    ``NaN``.
    """

    node_types = frozenset({"binary_expression", "augmented_assignment_expression"})

    def visit(self, node: Node, source: bytes) -> Iterator[Site]:
        """One site for the node's operator, unless it builds a string."""
        if not builds_string(node):
            yield from _swap(node, ARITHMETIC_SWAPS)


@MUTATORS.register("js_logical_swap")
class LogicalSwap(EcmaNodeMutator):
    """``&&``↔``||``, ``??``→``||`` (``0`` and ``""`` now fall back too), and their
    logical assignments (``&&=``, ``||=``, ``??=``)."""

    node_types = frozenset({"binary_expression", "augmented_assignment_expression"})

    def visit(self, node: Node, source: bytes) -> Iterator[Site]:
        """One site for the node's operator."""
        yield from _swap(node, LOGICAL_SWAPS)


def in_loop(node: Node) -> bool:
    """Whether ``node`` is in a loop of its own function (header or body)."""
    current = node.parent
    while current is not None and current.type not in FUNCTIONS:
        if current.type in LOOPS:
            return True
        current = current.parent
    return False


@MUTATORS.register("js_update_flip")
class UpdateFlip(EcmaNodeMutator):
    """``i++``↔``i--`` (prefix forms too) inside a loop: the loop walks the wrong way."""

    node_types = frozenset({"update_expression"})

    def visit(self, node: Node, source: bytes) -> Iterator[Site]:
        """One site for an increment or decrement in a loop."""
        if in_loop(node):
            yield from _swap(node, UPDATE_FLIPS)
