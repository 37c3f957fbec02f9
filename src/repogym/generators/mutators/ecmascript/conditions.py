"""Control-flow mutators: negate a condition, swap the branches of an if/else."""

from __future__ import annotations

from typing import Iterator

from tree_sitter import Node

from repogym.generators.mutators.base import MUTATORS, Site, replace_node, text
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
    if cond.type == "unary_expression" and operator(cond) == "!":
        argument = cond.child_by_field_name("argument")
        if argument is not None:
            return text(argument)
    if cond.type in _TIGHTER_THAN_NOT:
        return f"!{text(cond)}"
    return f"!({text(cond)})"


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
        if then is None or other is None:
            return
        first = source[then.start_byte:then.end_byte]
        second = source[other.start_byte:other.end_byte]
        if first.strip() == second.strip():
            return
        middle = source[then.end_byte:other.start_byte]
        if not second.rstrip().endswith((b";", b"}")) and b"\n" not in middle:
            second += b";"  # `if (c) b() else a();` would not parse
        swapped = (second + middle + first).decode("utf-8", "replace")
        yield Site(then.start_byte, other.end_byte, swapped, node.start_point[0] + 1,
                   "if and else branches swapped")
