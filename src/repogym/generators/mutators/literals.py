"""Literal mutators: nudge an integer by one, swap ``True`` and ``False``."""

from __future__ import annotations

from typing import Iterator

from tree_sitter import Node

from repogym.generators.mutators.base import MUTATORS, NodeMutator, Site, replace_node, text

_FORMATS = {"0x": hex, "0o": oct, "0b": bin}


def int_value(literal: str) -> int | None:
    """The value of a Python integer literal, or None (``1j``, ``010``)."""
    try:
        return int(literal.replace("_", ""), 0)
    except ValueError:
        return None


def format_like(value: int, literal: str) -> str:
    """``value`` written in the base of ``literal`` (hex stays hex); negatives in decimal."""
    formatter = _FORMATS.get(literal[:2].lower())
    return formatter(value) if formatter and value >= 0 else str(value)


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
        value = int_value(text(node))
        if value is None:
            return
        target = node
        parent = node.parent
        if parent is not None and parent.type == "unary_operator" and text(parent)[:1] == "-":
            target, value = parent, -value
        where = _context(target)
        if where is None:
            return
        old = text(target)
        for new in (value + 1, value - 1):
            new_text = format_like(new, text(node))
            yield replace_node(target, new_text, f"{where} `{old}` changed to `{new_text}`")


@MUTATORS.register("constant_swap")
class ConstantSwap(NodeMutator):
    """``True``↔``False``."""

    node_types = frozenset({"true", "false"})

    def visit(self, node: Node, source: bytes) -> Iterator[Site]:
        """One site: the other boolean."""
        new = "False" if node.type == "true" else "True"
        yield replace_node(node, new, f"`{text(node)}` changed to `{new}`")
