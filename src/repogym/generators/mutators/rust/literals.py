"""Literal mutators: nudge an integer by one (or a range's end) where bounds live, swap a
constant."""

from __future__ import annotations

import re
from typing import Iterator

from tree_sitter import Node

from repogym.generators.mutators.base import MUTATORS, Site, replace_node, text
from repogym.generators.mutators.rust.base import RustNodeMutator, method_call, operator, parts
from repogym.generators.mutators.rust.checks import NUMERIC_TYPES, is_constant, is_numeric
from repogym.generators.mutators.shared import format_like

_COMPARISONS = frozenset({"<", "<=", ">", ">=", "==", "!="})
_SUFFIX = re.compile(r"_?(?:[iu](?:8|16|32|64|128|size))$")
_LIMITS = frozenset({2 ** 7, 2 ** 8, 2 ** 15, 2 ** 16, 2 ** 31, 2 ** 32, 2 ** 63, 2 ** 64})
"""Where a constant one past a bound overflows the type of that size (an error)."""
_POSITION_METHODS = frozenset({"nth", "skip", "take", "get", "split_at", "truncate"})
"""Methods whose integer argument is a position or a count: ``it.nth(0)``, ``v.get(1)``."""
_RANGE_METHODS = frozenset({"contains", "rev", "map", "filter", "for_each", "step_by",
                            "any", "all", "find", "position", "fold", "filter_map",
                            "flat_map"})
"""Methods that a ``(a..b)`` and a ``(a..=b)`` both have with one meaning."""
_QUIET_ARGUMENTS = frozenset({"with_capacity", "reserve", "reserve_exact", "sleep",
                              "from_secs", "from_millis"})
"""Calls where ``0``↔``1`` changes nothing a test sees."""


def split_literal(literal: str) -> tuple[int, str] | None:
    """An integer literal's value and its type suffix: ``0x1Fu8`` -> ``(31, "u8")``;
    None for a float written as an integer (``1f32``)."""
    suffix = _SUFFIX.search(literal)
    digits = literal[:suffix.start()] if suffix else literal
    if digits[:2].lower() not in ("0x", "0o", "0b") and re.search(r"[a-zA-Z]", digits):
        return None
    clean = digits.replace("_", "")
    try:
        value = int(clean, 0) if clean[:2].lower() in ("0x", "0o", "0b") else int(clean, 10)
    except ValueError:
        return None
    return value, (suffix.group(0).lstrip("_") if suffix else "")


def int_value(literal: str) -> int | None:
    """An integer literal's value, suffix aside; None when it is none."""
    found = split_literal(literal)
    return found[0] if found else None


def written(value: int, literal: str) -> str:
    """``value`` in ``literal``'s base with its suffix: ``0x10u8`` and 17 -> ``0x11u8``."""
    found = split_literal(literal)
    suffix = found[1] if found else ""
    return format_like(value, literal) + suffix


def _is_minus(node: Node) -> bool:
    return node.type == "unary_expression" and text(node).startswith("-")


def _range_part(parent: Node, target: Node) -> str:
    kids = [c for c in parent.children if c.is_named]
    return "range start" if kids and kids[0] == target and parent.children[0] == target \
        else "range end"


def context(target: Node) -> str | None:
    """Where an integer (or ``-integer``) sits, if off-by-one applies there."""
    parent = target.parent
    if parent is None:
        return None
    if parent.type == "binary_expression":
        if operator(parent) in _COMPARISONS:
            return "comparison"
        return _offset_context(parent, target)
    if parent.type == "index_expression" and parts(parent)[-1] == target \
            and parts(parent)[0] != target:
        return "index"
    if parent.type == "range_expression":
        return _range_part(parent, target)
    if parent.type == "arguments" and parent.parent is not None:
        found = method_call(parent.parent)
        if found is not None and found[1] in _POSITION_METHODS and len(parts(parent)) == 1:
            return f"argument of `.{found[1]}()`"
    return None


def _offset_context(parent: Node, target: Node) -> str | None:
    """Where a ``+ n``/``- n`` offset counts: after ``x.len()``, or where the sum would."""
    left, right = parent.child_by_field_name("left"), parent.child_by_field_name("right")
    if operator(parent) not in ("+", "-") or right != target or left is None \
            or is_constant(left):
        return None
    found = method_call(left)
    if found is not None and found[1] == "len":
        return f"`{text(left)}` offset"
    inner = context(parent)
    return f"{inner} offset" if inner and "offset" not in inner else None


def _fits(where: str, old: int, new: int) -> bool:
    """Whether ``new`` in place of ``old`` (where :func:`context` says) still builds: no
    negative value where the original was not (it may be unsigned), no index past a
    constant array's end (an index only goes down), nothing past a type's bound."""
    if new < 0 <= old:
        return False
    if where.endswith("offset"):
        return True
    if new in _LIMITS or -new - 1 in _LIMITS:
        return False
    if where == "index":
        return 0 <= new < old
    return True


@MUTATORS.register("rs_off_by_one")
class OffByOne(RustNodeMutator):
    """An integer literal ``n`` becomes ``n + 1`` and ``n - 1`` (up to two sites), and a
    range's end moves by one: ``a..b``↔``a..=b``.

    Only where off-by-one bugs live: comparison operands, indexes, range bounds, the
    argument of ``.nth()``, ``.get()``, ``.skip()``, ``.take()``..., and ``+ n``/``- n``
    offsets after ``x.len()`` or in one of these (``v[i + 1]``). ``-n`` is one literal.
    Only what still builds: no negative value from a non-negative one (the type may be
    unsigned), a constant index only goes down, nothing past a type's bound (``b <= 255``
    stays). A range changes kind only where both kinds work: a ``for`` loop, a slice
    index, a ``(a..b).contains(x)``.
    """

    node_types = frozenset({"integer_literal", "range_expression"})

    def visit(self, node: Node, source: bytes) -> Iterator[Site]:
        """Up to two sites for an integer; one for a range."""
        if node.type == "range_expression":
            yield from _range_end(node)
            return
        value = int_value(text(node))
        if value is None:
            return
        target, signed = node, value
        if node.parent is not None and _is_minus(node.parent):
            target, signed = node.parent, -value
        where = context(target)
        if where is None:
            return
        for new in (signed + 1, signed - 1):
            if _fits(where, signed, new):
                out = written(abs(new), text(node))
                out = f"-{out}" if new < 0 else out
                if new < 0 and source[target.start_byte - 1:target.start_byte] in (b"-", b"+"):
                    out = f" {out}"
                yield replace_node(target, out,
                                   f"{where} `{text(target)}` changed to `{out.strip()}`")


def _range_end(node: Node) -> Iterator[Site]:
    """``a..b`` -> ``a..=b`` and back, where both kinds work."""
    op = next((c for c in node.children if c.type in ("..", "..=")), None)
    kids = node.children
    if op is None or kids[-1] == op or not _both_ranges_work(node):
        return
    new = "..=" if op.type == ".." else ".."
    yield replace_node(op, new, f"range `{text(node)}` made {'inclusive' if new == '..=' else 'exclusive'}",
                       node)


def _both_ranges_work(node: Node) -> bool:
    parent = node.parent
    if parent is None:
        return False
    if parent.type == "for_expression":
        return parent.child_by_field_name("value") == node and node.children[0].is_named
    if parent.type == "index_expression":
        return parts(parent)[-1] == node
    if parent.type == "parenthesized_expression" and parent.parent is not None \
            and parent.parent.type == "field_expression" and node.children[0].is_named:
        call = parent.parent.parent
        found = method_call(call) if call is not None else None
        return found is not None and found[1] in _RANGE_METHODS
    return False


# --- constant swap ---------------------------------------------------------------------


def _value_context(node: Node) -> bool:
    """Whether an integer stands as a value: of a ``let``, an assignment, an argument, a
    struct field, a ``return``, a tuple or array element."""
    parent = node.parent
    if parent is None:
        return False
    kind = parent.type
    if kind == "let_declaration":
        declared = parent.child_by_field_name("type")
        return parent.child_by_field_name("value") == node and (
            declared is None or text(declared) in NUMERIC_TYPES)
    if kind == "assignment_expression":
        return parent.child_by_field_name("right") == node
    if kind == "arguments":
        call = parent.parent
        found = method_call(call) if call is not None else None
        name = found[1] if found is not None else _function_name(call)
        return name not in _QUIET_ARGUMENTS and name not in _POSITION_METHODS
    if kind in ("field_initializer", "return_expression", "tuple_expression"):
        return True
    return kind == "array_expression" and parent.child_by_field_name("length") != node


def _function_name(call: Node | None) -> str:
    function = call.child_by_field_name("function") if call is not None else None
    return text(function).split("::")[-1] if function is not None else ""


@MUTATORS.register("rs_constant_swap")
class ConstantSwap(RustNodeMutator):
    """``true``↔``false`` anywhere in runtime code (patterns aside); ``0``↔``1`` where
    an integer stands as a value (``let n = 0;``, ``f(1)``, ``Point { x: 0 }``,
    ``return 1``), keeping its suffix (``0u8`` -> ``1u8``)."""

    node_types = frozenset({"boolean_literal", "integer_literal"})

    def visit(self, node: Node, source: bytes) -> Iterator[Site]:
        """One site: the other constant."""
        old = text(node)
        if node.type == "boolean_literal":
            new = "false" if old == "true" else "true"
            yield replace_node(node, new, f"`{old}` changed to `{new}`")
            return
        value = int_value(old)
        if value not in (0, 1) or not _value_context(node) or (
                node.parent is not None and node.parent.type == "unary_expression"):
            return
        new = written(1 - value, old)
        yield replace_node(node, new, f"`{old}` changed to `{new}`")


__all__ = ["ConstantSwap", "OffByOne", "context", "int_value", "is_numeric", "split_literal",
           "written"]
