"""Control-flow mutators: negate a condition, swap the branches of an if/else."""

from __future__ import annotations

from typing import Iterator

from tree_sitter import Node

from repogym.generators.mutators import shared
from repogym.generators.mutators.base import MUTATORS, Site, replace_node, text
from repogym.generators.mutators.rust.base import RustNodeMutator, is_let_condition, parts

_TIGHTER_THAN_NOT = frozenset({
    "identifier", "field_expression", "index_expression", "call_expression",
    "parenthesized_expression", "boolean_literal", "unary_expression", "macro_invocation",
    "self", "scoped_identifier", "try_expression", "await_expression"})
"""Expressions ``!`` can go before without parentheses."""


def negated(cond: Node) -> str:
    """``!c``, parenthesised unless ``c`` binds tighter than ``!``; ``!c`` becomes ``c``."""
    if cond.type == "unary_expression" and text(cond).startswith("!") and parts(cond):
        return text(parts(cond)[-1])
    return shared.negated(cond, "!", negation=False, bare=cond.type in _TIGHTER_THAN_NOT)


@MUTATORS.register("rs_negate_condition")
class NegateCondition(RustNodeMutator):
    """The condition ``c`` of an ``if`` or ``while`` becomes ``!c`` (``!(a && b)`` where
    ``!`` would bind tighter; ``!c`` becomes ``c``). Not ``if let``/``while let``."""

    node_types = frozenset({"if_expression", "while_expression"})

    def visit(self, node: Node, source: bytes) -> Iterator[Site]:
        """One site: the node's condition, negated."""
        cond = node.child_by_field_name("condition")
        if cond is None or is_let_condition(cond):
            return
        keyword = "if" if node.type == "if_expression" else "while"
        yield replace_node(cond, negated(cond), f"{keyword} condition negated", node)


@MUTATORS.register("rs_invert_if_else")
class InvertIfElse(RustNodeMutator):
    """The branches of an ``if``/``else`` (not ``else if``, not ``if let``: its bindings
    would not reach the other branch) trade places."""

    node_types = frozenset({"if_expression"})

    def visit(self, node: Node, source: bytes) -> Iterator[Site]:
        """One site spanning both branches, when they differ."""
        cond = node.child_by_field_name("condition")
        then = node.child_by_field_name("consequence")
        alternative = node.child_by_field_name("alternative")
        if cond is None or then is None or alternative is None or is_let_condition(cond):
            return
        other = next((c for c in parts(alternative)), None)
        if other is None or other.type != "block":
            return
        yield from shared.branches_swapped(node, then, other, source)

