"""Literal mutators: nudge an integer by one, swap ``True`` and ``False``, change a
parameter's default value, drop or shift a slice bound."""

from __future__ import annotations

from typing import Iterator

from tree_sitter import Node, Tree

from repogym.generators.mutators.base import (
    MUTATORS,
    Mutator,
    NodeMutator,
    Site,
    named_children,
    replace_node,
    text,
)
from repogym.generators.mutators.runtime import is_live_function
from repogym.generators.mutators.shared import BooleanLiteralSwap, format_like, off_by_one

OTHER_BOOLEAN = {"true": "False", "false": "True"}
"""The other boolean, by the node type of a boolean literal."""


def int_value(literal: str) -> int | None:
    """The value of a Python integer literal, or None (``1j``, ``010``)."""
    try:
        return int(literal.replace("_", ""), 0)
    except ValueError:
        return None


def _context(target: Node) -> str | None:
    """Where an integer (or ``-integer``) sits, if off-by-one applies there.

    The right operand of ``+``/``-`` counts where the sum would (``x[i + 1]``).
    """
    parent = target.parent
    if parent is None:
        return None
    if parent.type == "binary_operator" and parent.child_by_field_name("right") == target:
        op = parent.child_by_field_name("operator")
        inner = _context(parent) if op is not None and text(op) in ("+", "-") else None
        return f"{inner} offset" if inner else None
    if parent.type == "comparison_operator":
        return "comparison"
    if parent.type == "slice":
        return "slice bound"
    if parent.type == "subscript" and any(
            c == target for c in parent.children_by_field_name("subscript")):
        return "subscript"
    if parent.type == "argument_list" and parent.parent is not None:
        callee = parent.parent.child_by_field_name("function")
        if callee is not None and text(callee) == "range":
            return "range() argument"
    return None


@MUTATORS.register("off_by_one")
class OffByOne(NodeMutator):
    """An integer literal ``n`` becomes ``n + 1`` and ``n - 1`` (two sites).

    Only where off-by-one bugs live: comparison operands, slice bounds, subscripts and
    ``range()`` arguments, or a ``+ n``/``- n`` offset in one of them (``x[i + 1]``).
    ``-n`` is treated as one literal (``x[-1]`` -> ``x[-2]``).
    """

    node_types = frozenset({"integer"})

    def visit(self, node: Node, source: bytes) -> Iterator[Site]:
        """Two sites (plus and minus one) for an integer in an off-by-one context."""
        literal = text(node)
        yield from off_by_one(node, int_value(literal), _is_minus, _context,
                              lambda new, target: format_like(new, literal))


def _is_minus(node: Node) -> bool:
    """``-x``."""
    return node.type == "unary_operator" and text(node)[:1] == "-"


@MUTATORS.register("constant_swap")
class ConstantSwap(BooleanLiteralSwap):
    """``True``↔``False``."""

    other = OTHER_BOOLEAN


_DEFAULTS = frozenset({"default_parameter", "typed_default_parameter"})
_STATEMENTS = frozenset({"module", "block", "decorated_definition", "class_definition",
                         "function_definition", "if_statement", "elif_clause", "else_clause",
                         "for_statement", "while_statement", "try_statement",
                         "except_clause", "except_group_clause", "finally_clause",
                         "with_statement", "match_statement", "case_clause"})


def _functions(root: Node) -> Iterator[Node]:
    """Every function definition in a file (only statements are walked, not expressions)."""
    stack = [root]
    while stack:
        node = stack.pop()
        if node.type == "function_definition":
            yield node
        stack.extend(c for c in reversed(node.children)
                     if c.type in _STATEMENTS or c.type == "block")


def changed_default(value: Node) -> str | None:
    """A different default: ``True``↔``False``, ``n`` -> ``n+1``, ``"text"`` -> ``""``."""
    kind = value.type
    if kind in OTHER_BOOLEAN:
        return OTHER_BOOLEAN[kind]
    if kind == "integer":
        number = int_value(text(value))
        return None if number is None else format_like(number + 1, text(value))
    if kind == "unary_operator" and text(value).startswith("-"):
        inner = named_children(value)
        number = int_value(text(inner[0])) if inner and inner[0].type == "integer" else None
        return None if number is None else str(1 - number)
    if kind == "string":
        parts = [c.type for c in value.children]
        if parts == ["string_start", "string_content", "string_end"]:
            return text(value.children[0]) + text(value.children[2])
    return None


@MUTATORS.register("change_default")
class ChangeDefault(Mutator):
    """A parameter's default value changes: ``True``↔``False``, ``n`` -> ``n+1``,
    a non-empty string -> an empty one.

    Only in live functions (not stubs, overloads or excluded regions); the annotation
    and the parameter's name are untouched. ``None`` defaults are left alone.
    """

    edits_defaults = True

    def sites(self, tree: Tree, source: bytes) -> Iterator[Site]:
        """One site per changeable default of every live function."""
        for function in _functions(tree.root_node):
            params = function.child_by_field_name("parameters")
            if params is None or not any(p.type in _DEFAULTS for p in params.children):
                continue
            if is_live_function(function):
                yield from _default_sites(params)


def _default_sites(params: Node) -> Iterator[Site]:
    for param in params.children:
        value = param.child_by_field_name("value") if param.type in _DEFAULTS else None
        name = param.child_by_field_name("name")
        new = changed_default(value) if value is not None else None
        if value is not None and new is not None and name is not None:
            yield replace_node(value, new, f"default of `{text(name)}` changed from "
                                           f"`{text(value)}` to `{new}`")


_SIMPLE_OPERANDS = frozenset({"identifier", "attribute", "call", "subscript",
                              "parenthesized_expression", "integer"})


def _slice_parts(node: Node) -> list[tuple[str, Node]]:
    """``(role, expression)`` for the bounds a slice has: start, stop, step."""
    roles = ("start", "stop", "step")
    colons, parts = 0, []
    for child in node.children:
        if child.type == ":":
            colons += 1
        elif child.is_named and child.type != "comment" and colons < 3:
            parts.append((roles[colons], child))
    return parts


def _shifted(bound: Node, role: str) -> str | None:
    """``start + 1`` or ``stop - 1`` for a bound that is not a number literal."""
    if bound.type == "integer" or (bound.type == "unary_operator"
                                   and named_children(bound)[-1].type == "integer"):
        return None  # off_by_one already nudges literals
    simple = bound.type in _SIMPLE_OPERANDS or (
        bound.type == "binary_operator" and text(bound.child_by_field_name("operator")
                                                 or bound) in ("+", "-"))
    operand = text(bound) if simple else f"({text(bound)})"
    return f"{operand} + 1" if role == "start" else f"{operand} - 1" if role == "stop" else None


@MUTATORS.register("slice_bound")
class SliceBound(NodeMutator):
    """A slice bound is dropped (``x[1:]`` -> ``x[:]``, ``x[::-1]`` -> ``x[::]``) or a
    non-literal one shifted (``x[i:]`` -> ``x[i + 1:]``, ``x[:n]`` -> ``x[:n - 1]``)."""

    node_types = frozenset({"slice"})

    def visit(self, node: Node, source: bytes) -> Iterator[Site]:
        """A site dropping each bound, and one shifting each non-literal start or stop."""
        for role, bound in _slice_parts(node):
            yield replace_node(bound, "", f"slice {role} `{text(bound)}` dropped")
            shifted = _shifted(bound, role)
            if shifted is not None:
                yield replace_node(bound, shifted,
                                   f"slice {role} `{text(bound)}` changed to `{shifted}`")
