"""Control-flow mutators: negate a condition, swap the branches of an if/else."""

from __future__ import annotations

from typing import Iterator

from tree_sitter import Node

from repogym.generators.mutators import shared
from repogym.generators.mutators.base import MUTATORS, Site, replace_node
from repogym.generators.mutators.ecmascript.base import EcmaNodeMutator, operator

_KEYWORD = {"if_statement": "if", "while_statement": "while", "do_statement": "do-while",
            "ternary_expression": "ternary"}
_TIGHTER_THAN_NOT = frozenset({
    "identifier", "member_expression", "subscript_expression", "call_expression",
    "parenthesized_expression", "this", "true", "false", "null", "undefined", "number",
    "string", "template_string", "unary_expression", "non_null_expression"})
"""Expressions ``!`` can go before without parentheses."""


def _condition(node: Node) -> Node | None:
    """The condition's expression (inside the parentheses of ``if (...)``)."""
    cond = node.child_by_field_name("condition")
    if cond is not None and cond.type == "parenthesized_expression" \
            and node.type != "ternary_expression":
        inner = [c for c in cond.named_children if c.type != "comment"]
        return inner[0] if len(inner) == 1 else None
    return cond


def negated(cond: Node) -> str:
    """``!c``, parenthesised unless ``c`` binds tighter than ``!``; ``!c`` becomes ``c``."""
    return shared.negated(cond, "!",
                          negation=cond.type == "unary_expression" and operator(cond) == "!",
                          bare=cond.type in _TIGHTER_THAN_NOT)


@MUTATORS.register("js_negate_condition")
class NegateCondition(EcmaNodeMutator):
    """The condition ``c`` of an ``if``, ``while``, ``do ... while`` or ternary becomes
    ``!c`` (``!(a && b)`` where ``!`` would bind tighter; ``!c`` becomes ``c``)."""

    node_types = frozenset(_KEYWORD)

    def visit(self, node: Node, source: bytes) -> Iterator[Site]:
        """One site: the node's condition, negated."""
        cond = _condition(node)
        if cond is not None:
            yield replace_node(cond, negated(cond), f"{_KEYWORD[node.type]} condition negated",
                               node)


def _plain_else_body(node: Node) -> Node | None:
    """The statement of an if's ``else``, when it has one that is no ``else if``."""
    alternative = node.child_by_field_name("alternative")
    if alternative is None:
        return None
    body = [c for c in alternative.named_children if c.type != "comment"]
    return body[0] if len(body) == 1 and body[0].type != "if_statement" else None


@MUTATORS.register("js_invert_if_else")
class InvertIfElse(EcmaNodeMutator):
    """The branches of an ``if``/``else`` (not ``else if``) trade places."""

    node_types = frozenset({"if_statement"})

    def visit(self, node: Node, source: bytes) -> Iterator[Site]:
        """One site spanning both branches, when they differ."""
        then = node.child_by_field_name("consequence")
        other = _plain_else_body(node)
        if then is not None and other is not None:
            yield from shared.branches_swapped(node, then, other, source, _ended)


def _ended(branch: bytes, after: bytes) -> bytes:
    """The ``else`` branch's text, with the ``;`` it needs to come before ``else`` on the
    same line (``if (c) b() else a();`` would not parse)."""
    if not branch.rstrip().endswith((b";", b"}")) and b"\n" not in after:
        return branch + b";"
    return branch
