"""Control-flow mutators: negate a condition, swap the branches of an if/else."""

from __future__ import annotations

from typing import Iterator

from tree_sitter import Node

from repogym.generators.mutators import shared
from repogym.generators.mutators.base import (
    MUTATORS,
    NodeMutator,
    Site,
    named_children,
    replace_node,
)

_KEYWORD = {"if_statement": "if", "elif_clause": "elif", "while_statement": "while",
            "conditional_expression": "ternary"}
_LOOSER_THAN_NOT = frozenset({"boolean_operator", "conditional_expression", "lambda",
                              "named_expression", "assignment", "ERROR"})


def _condition(node: Node) -> Node | None:
    if node.type == "conditional_expression":
        parts = named_children(node)  # body, condition, alternative
        return parts[1] if len(parts) == 3 else None
    return node.child_by_field_name("condition")


def negated(cond: Node) -> str:
    """``not c``, with parentheses only where ``not`` would bind tighter than ``c``.

    A condition that already is ``not c`` becomes ``c``.
    """
    return shared.negated(cond, "not ", negation=cond.type == "not_operator",
                          bare=cond.type not in _LOOSER_THAN_NOT)


@MUTATORS.register("negate_condition")
class NegateCondition(NodeMutator):
    """The condition ``c`` of an ``if``, ``elif``, ``while`` or ternary becomes ``not c``.

    ``c`` is parenthesised when it binds looser than ``not`` (``not (a or b)``).
    """

    node_types = frozenset(_KEYWORD)

    def visit(self, node: Node, source: bytes) -> Iterator[Site]:
        """One site: the node's condition, negated."""
        cond = _condition(node)
        if cond is not None:
            yield replace_node(cond, negated(cond), f"{_KEYWORD[node.type]} condition negated")


def _plain_else_body(node: Node) -> Node | None:
    """The body of an if statement's ``else``, when it has one and no ``elif``."""
    alternatives = node.children_by_field_name("alternative")
    if len(alternatives) != 1 or alternatives[0].type != "else_clause":
        return None
    return alternatives[0].child_by_field_name("body")


def _same_layout(a: Node, b: Node) -> bool:
    """Two blocks can trade places textually: same column, or both one-liners."""
    both_inline = a.start_point[0] == a.end_point[0] and b.start_point[0] == b.end_point[0]
    return both_inline or a.start_point[1] == b.start_point[1]


@MUTATORS.register("invert_if_else")
class InvertIfElse(NodeMutator):
    """The bodies of an ``if``/``else`` (without ``elif``) trade places."""

    node_types = frozenset({"if_statement"})

    def visit(self, node: Node, source: bytes) -> Iterator[Site]:
        """One site spanning both bodies, when they differ and share a layout."""
        then = node.child_by_field_name("consequence")
        other = _plain_else_body(node)
        if then is not None and other is not None and _same_layout(then, other):
            yield from shared.branches_swapped(node, then, other, source)
