"""Literal mutators: nudge an integer by one where bounds live, swap a constant."""

from __future__ import annotations

from typing import Iterator

from tree_sitter import Node

from repogym.generators.mutators.base import MUTATORS, Site, replace_node, text
from repogym.generators.mutators.java.base import JavaNodeMutator
from repogym.generators.mutators.java.checks import (
    in_loop_condition,
    is_final_local,
    operator,
    unparenthesised,
)

_INTEGERS = frozenset({"decimal_integer_literal", "hex_integer_literal",
                       "octal_integer_literal", "binary_integer_literal"})
_COMPARISONS = frozenset({"<", "<=", ">", ">=", "==", "!="})
_BOUNDED_CALLS = frozenset({"substring", "charAt", "subList", "codePointAt",
                            "deleteCharAt", "copyOfRange", "arraycopy", "setLength",
                            "subSequence"})
"""Methods whose integer arguments are positions or lengths."""
_SIZES = frozenset({"length", "size"})
_INT_MAX = 2 ** 31 - 1
_LONG_MAX = 2 ** 63 - 1
_OTHER_BOOLEAN = {"true": "false", "false": "true"}


def int_value(literal: str) -> int | None:
    """The value of a Java integer literal (``0x1F``, ``017``, ``0b101``, ``1_000L``)."""
    digits = literal.replace("_", "").rstrip("lL")
    try:
        if digits[:2].lower() in ("0x", "0b"):
            return int(digits, 0)
        if len(digits) > 1 and digits[0] == "0":
            return int(digits, 8)
        return int(digits)
    except ValueError:
        return None


def written(value: int, literal: str) -> str | None:
    """``value`` written like ``literal`` (its base and ``L`` suffix); None when it would
    not be a valid literal of the literal's type."""
    suffix = literal[-1] if literal[-1] in "lL" else ""
    digits = literal.replace("_", "").rstrip("lL")
    if abs(value) > (_LONG_MAX if suffix else _INT_MAX):
        return None
    head = digits[:2].lower()
    if value < 0 and (head in ("0x", "0b") or (len(digits) > 1 and digits[0] == "0")):
        return None
    if head == "0x":
        body = format(value, "x")
        return digits[:2] + (body.upper() if any(c.isupper() for c in digits[2:]) else body) \
            + suffix
    if head == "0b":
        return digits[:2] + format(value, "b") + suffix
    if len(digits) > 1 and digits[0] == "0":
        return ("0" + format(value, "o") if value else "0") + suffix
    return str(value) + suffix


def _is_minus(node: Node) -> bool:
    return node.type == "unary_expression" and operator(node) == "-"


def _is_size(node: Node) -> bool:
    """``x.length``, ``s.length()``, ``xs.size()``."""
    node = unparenthesised(node)
    if node.type == "field_access":
        field = node.child_by_field_name("field")
        return field is not None and text(field) == "length"
    name = node.child_by_field_name("name") if node.type == "method_invocation" else None
    args = node.child_by_field_name("arguments") if name is not None else None
    return name is not None and text(name) in _SIZES and args is not None \
        and not args.named_children


def _offset_context(parent: Node, target: Node) -> str | None:
    """Where a ``+ n``/``- n`` offset counts: after a size, or where the sum would."""
    left, right = parent.child_by_field_name("left"), parent.child_by_field_name("right")
    if operator(parent) not in ("+", "-") or right != target or left is None \
            or unparenthesised(left).type in _INTEGERS:
        return None
    if _is_size(left):
        return f"`{text(left)}` offset"
    inner = context(parent)
    return f"{inner} offset" if inner and not inner.endswith("offset") else inner


def _loop_start(target: Node) -> bool:
    """``for (int i = 0; ...)`` (or ``i = 0``): the loop's first value."""
    holder = target.parent
    if holder is None:
        return False
    if holder.type == "variable_declarator":
        declaration = holder.parent
        loop = declaration.parent if declaration is not None else None
        return loop is not None and loop.type == "for_statement" \
            and loop.child_by_field_name("init") == declaration
    if holder.type == "assignment_expression" and holder.child_by_field_name("right") == target:
        loop = holder.parent
        return loop is not None and loop.type == "for_statement" and any(
            c == holder for c in loop.children_by_field_name("init"))
    return False


def context(target: Node) -> str | None:
    """Where an integer (or ``-integer``) sits, if off-by-one applies there."""
    parent = target.parent
    if parent is None:
        return None
    if parent.type == "binary_expression":
        if operator(parent) in _COMPARISONS:
            return "comparison"
        return _offset_context(parent, target)
    if parent.type == "array_access" and parent.child_by_field_name("index") == target:
        return "index"
    if parent.type == "argument_list" and parent.parent is not None \
            and parent.parent.type == "method_invocation":
        name = parent.parent.child_by_field_name("name")
        if name is not None and text(name) in _BOUNDED_CALLS:
            return f"`{text(name)}()` argument"
    if _loop_start(target):
        return "loop start"
    return None


def _bumped(new_text: str, target: Node, source: bytes) -> str:
    """A space before a minus that would make ``--`` or ``+-`` glue."""
    before = source[target.start_byte - 1:target.start_byte] if target.start_byte else b""
    return f" {new_text}" if new_text.startswith("-") and before in (b"-", b"+") else new_text


@MUTATORS.register("java_off_by_one")
class OffByOne(JavaNodeMutator):
    """An integer literal ``n`` becomes ``n + 1`` and ``n - 1`` (up to two sites).

    Only where off-by-one bugs live: comparison operands, array indexes, a ``for`` loop's
    start, the positions given to ``substring``, ``charAt``, ``subList``,
    ``System.arraycopy``..., and ``+ n``/``- n`` offsets after ``.length``/``size()`` or
    in one of these (``a[i + 1]``). ``-n`` is one literal. Only valid literals of the
    literal's type (no ``int`` past 2^31-1), and no negative index.
    """

    node_types = _INTEGERS

    def visit(self, node: Node, source: bytes) -> Iterator[Site]:
        """Up to two sites (plus and minus one) for an integer in an off-by-one context."""
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
            if new < 0 and (where == "index" or where.endswith("argument")):
                continue
            literal = written(abs(new), text(node))
            if literal is None:
                continue
            shown = f"-{literal}" if new < 0 else literal
            out = _bumped(shown, target, source)
            yield replace_node(target, out, f"{where} `{text(target)}` changed to `{shown}`")


def _is_divisor(node: Node) -> bool:
    parent = node.parent
    if parent is None:
        return False
    if parent.type == "binary_expression":
        return operator(parent) in ("/", "%") and parent.child_by_field_name("right") == node
    return parent.type == "assignment_expression" and operator(parent) in ("/=", "%=")


def _constant_operand(node: Node) -> bool:
    """``1 << 3``: the other operand is a literal too."""
    parent = node.parent
    if parent is None or parent.type != "binary_expression":
        return False
    left, right = parent.child_by_field_name("left"), parent.child_by_field_name("right")
    other = right if left == node else left
    return other is not None and unparenthesised(other).type in _INTEGERS


def _in_final_local(node: Node) -> bool:
    """The value of a ``final`` local: a constant variable, which ``case`` labels and
    reachability may depend on."""
    current = node.parent
    while current is not None and current.type in ("binary_expression",
                                                   "parenthesized_expression",
                                                   "unary_expression"):
        current = current.parent
    return current is not None and current.type == "variable_declarator" \
        and is_final_local(current)


def _new_integer(node: Node) -> str | None:
    """``0`` -> ``1``, ``1`` -> ``0``, ``2``..``9`` -> one more: decimal integers only."""
    literal = text(node)
    suffix = literal[-1] if literal[-1] in "lL" else ""
    digits = literal.rstrip("lL")
    if not digits.isdigit() or (len(digits) > 1 and digits[0] == "0"):
        return None
    value = int(digits)
    if value > 9:
        return None
    return ("0" if value == 1 else str(value + 1)) + suffix


@MUTATORS.register("java_constant_swap")
class ConstantSwap(JavaNodeMutator):
    """A constant changes: ``true``↔``false``; ``0`` -> ``1``, ``1`` -> ``0``, ``2``..``9``
    -> one more (decimal, ``L`` kept).

    Integers where ``java_off_by_one`` does not look, and not a divisor, an array size,
    a negative (``-1``) or half of a constant expression (``1 << 3``). Never in a loop's
    condition (``while (true)`` -> ``while (false)`` makes the body unreachable, which does
    not compile) nor in the value of a ``final`` local (a constant variable).
    """

    node_types = frozenset({"true", "false"}) | {"decimal_integer_literal"}

    def visit(self, node: Node, source: bytes) -> Iterator[Site]:
        """At most one site: the other constant."""
        if in_loop_condition(node) or _in_final_local(node):
            return
        new = self._new(node)
        if new is not None:
            yield replace_node(node, new, f"`{text(node)}` changed to `{new}`")

    @staticmethod
    def _new(node: Node) -> str | None:
        if node.type in _OTHER_BOOLEAN:
            return _OTHER_BOOLEAN[node.type]
        parent = node.parent
        if context(node) is not None or (parent is not None and _is_minus(parent)) \
                or _constant_operand(node) or _is_divisor(node) \
                or (parent is not None and parent.type == "dimensions_expr"):
            return None
        return _new_integer(node)


__all__ = ["ConstantSwap", "OffByOne", "context", "int_value", "written"]
