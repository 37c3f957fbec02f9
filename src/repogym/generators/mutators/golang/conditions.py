"""Control-flow mutators: negate a condition, swap the branches of an if/else."""

from __future__ import annotations

from typing import Iterator

from tree_sitter import Node

from repogym.generators.mutators import shared
from repogym.generators.mutators.base import MUTATORS, Site, named_children, replace_node, text
from repogym.generators.mutators.golang.base import GoNodeMutator, operator

_TIGHTER_THAN_NOT = frozenset({
    "identifier", "selector_expression", "index_expression", "slice_expression",
    "call_expression", "parenthesized_expression", "type_assertion_expression",
    "type_conversion_expression", "true", "false", "unary_expression"})
"""Expressions ``!`` can go before without parentheses."""
_CLAUSES = frozenset({"for_clause", "range_clause", "block", "comment"})


def condition(node: Node) -> Node | None:
    """The condition of an ``if``, or of a ``for`` (``for c {``, ``for i := 0; c; i++ {``)."""
    if node.type == "if_statement":
        return node.child_by_field_name("condition")
    for part in named_children(node):
        if part.type == "for_clause":
            return part.child_by_field_name("condition")
        if part.type not in _CLAUSES:
            return part
    return None


def negated(cond: Node) -> str:
    """``!c``, parenthesised unless ``c`` binds tighter than ``!``; ``!c`` becomes ``c``."""
    operand = cond.child_by_field_name("operand")
    if cond.type == "unary_expression" and operator(cond) == "!" and operand is not None:
        return text(operand)
    return shared.negated(cond, "!", negation=False, bare=cond.type in _TIGHTER_THAN_NOT)


@MUTATORS.register("go_negate_condition")
class NegateCondition(GoNodeMutator):
    """The condition ``c`` of an ``if`` or ``for`` becomes ``!c`` (``!(a && b)`` where
    ``!`` would bind tighter; ``!c`` becomes ``c``)."""

    node_types = frozenset({"if_statement", "for_statement"})

    def visit(self, node: Node, source: bytes) -> Iterator[Site]:
        """One site: the node's condition, negated."""
        cond = condition(node)
        if cond is None:
            return
        keyword = "if" if node.type == "if_statement" else "for"
        yield replace_node(cond, negated(cond), f"{keyword} condition negated", node)


@MUTATORS.register("go_invert_if_else")
class InvertIfElse(GoNodeMutator):
    """The branches of an ``if``/``else`` (not ``else if``) trade places."""

    node_types = frozenset({"if_statement"})

    def visit(self, node: Node, source: bytes) -> Iterator[Site]:
        """One site spanning both branches, when they differ."""
        then = node.child_by_field_name("consequence")
        other = node.child_by_field_name("alternative")
        if then is not None and other is not None and other.type == "block":
            yield from shared.branches_swapped(node, then, other, source)
