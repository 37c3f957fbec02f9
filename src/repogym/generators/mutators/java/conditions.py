"""Control-flow mutators: negate a condition, swap the branches of an if/else or of a
``?:``."""

from __future__ import annotations

from typing import Iterator

from tree_sitter import Node

from repogym.generators.mutators import shared
from repogym.generators.mutators.base import MUTATORS, Site, replace_node, text
from repogym.generators.mutators.java.base import JavaNodeMutator
from repogym.generators.mutators.java.checks import (
    condition_is_plain,
    is_constant,
    is_constant_condition,
    operator,
    unparenthesised,
)
from repogym.generators.mutators.shared import named_descendants

_TIGHTER_THAN_NOT = frozenset({
    "identifier", "field_access", "array_access", "method_invocation",
    "parenthesized_expression", "true", "false", "this", "object_creation_expression",
    "unary_expression"})
"""Expressions ``!`` can go before without parentheses."""
_KEYWORDS = {"if_statement": "if", "while_statement": "while", "do_statement": "do-while",
             "for_statement": "for"}


def negated(cond: Node) -> str:
    """``!c``, parenthesised unless ``c`` binds tighter than ``!``; ``!c`` becomes ``c``."""
    inner = unparenthesised(cond)
    operand = inner.child_by_field_name("operand")
    if inner.type == "unary_expression" and operator(inner) == "!" and operand is not None:
        return text(operand)
    return shared.negated(inner, "!", negation=False, bare=inner.type in _TIGHTER_THAN_NOT)


def _condition(node: Node) -> Node | None:
    """The condition of an ``if``, ``while``, ``do`` or ``for`` (inside its parentheses)."""
    cond = node.child_by_field_name("condition")
    if cond is None:
        return None
    if cond.type == "parenthesized_expression":
        inner = unparenthesised(cond)
        return inner if inner is not cond else None
    return cond


@MUTATORS.register("java_negate_condition")
class NegateCondition(JavaNodeMutator):
    """The condition ``c`` of an ``if``, ``while``, ``do``-``while`` or ``for`` becomes
    ``!c`` (``!(a && b)`` where ``!`` would bind tighter; ``!c`` becomes ``c``).

    Not a constant condition (``while (true)``: ``!true`` makes the body unreachable, which
    does not compile; nor a loop's ``while (RUNNING)``, which may be one), and not one that declares a pattern variable or assigns under
    ``&&``/``||`` (what it assigns, or the variable's scope, would change sides).
    """

    node_types = frozenset(_KEYWORDS)

    def visit(self, node: Node, source: bytes) -> Iterator[Site]:
        """One site: the node's condition, negated."""
        cond = _condition(node)
        if cond is None or is_constant(cond) or not condition_is_plain(cond):
            return
        if node.type != "if_statement" and is_constant_condition(cond):
            return
        yield replace_node(cond, negated(cond), f"{_KEYWORDS[node.type]} condition negated",
                           node)


@MUTATORS.register("java_invert_if_else")
class InvertIfElse(JavaNodeMutator):
    """The branches of an ``if``/``else`` (not ``else if``) trade places.

    Not when the condition declares a pattern variable or assigns under ``&&``/``||``
    (a branch may read what only its side assigns, or binds).
    """

    node_types = frozenset({"if_statement"})

    def visit(self, node: Node, source: bytes) -> Iterator[Site]:
        """One site spanning both branches, when they differ."""
        then = node.child_by_field_name("consequence")
        other = node.child_by_field_name("alternative")
        cond = node.child_by_field_name("condition")
        if then is None or other is None or cond is None or other.type == "if_statement" \
                or not condition_is_plain(cond):
            return
        yield from shared.branches_swapped(node, then, other, source)


@MUTATORS.register("java_ternary_swap")
class TernarySwap(JavaNodeMutator):
    """``c ? a : b`` -> ``c ? b : a``.

    Not when the condition declares a pattern variable (``o instanceof Foo f ? f.x() :
    0``), nor when an assignment is in it (it would move between branches).
    """

    node_types = frozenset({"ternary_expression"})

    def visit(self, node: Node, source: bytes) -> Iterator[Site]:
        """One site swapping the two branches, when they differ."""
        cond = node.child_by_field_name("condition")
        first = node.child_by_field_name("consequence")
        second = node.child_by_field_name("alternative")
        if cond is None or first is None or second is None or text(first) == text(second):
            return
        if not condition_is_plain(cond) or any(
                n.type == "assignment_expression" for n in named_descendants(node)):
            return
        yield shared.swapped(first, second, source, node.start_point[0] + 1,
                             f"`{shared.summary(first, 25)}` and `{shared.summary(second, 25)}`"
                             f" of `?:` swapped")
