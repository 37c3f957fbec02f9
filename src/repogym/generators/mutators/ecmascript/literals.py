"""Literal mutators: nudge an integer by one, swap ``true`` and ``false``, change a default
value."""

from __future__ import annotations

import re
from typing import Iterator

from tree_sitter import Node, Tree

from repogym.generators.mutators.base import (
    MUTATORS,
    Mutator,
    Site,
    named_children,
    replace_node,
    text,
)
from repogym.generators.mutators.ecmascript.base import EcmaNodeMutator, operator
from repogym.generators.mutators.ecmascript.grammar import FAMILY
from repogym.generators.mutators.ecmascript.runtime import in_runtime_code
from repogym.generators.mutators.shared import BooleanLiteralSwap, format_like, off_by_one

_INTEGER = re.compile(r"0[xX][0-9a-fA-F_]+|0[oO][0-7_]+|0[bB][01_]+|0|[1-9][0-9_]*")
_COMPARISONS = frozenset({"<", "<=", ">", ">=", "==", "!=", "===", "!=="})
_INDEX_METHODS = frozenset({"slice", "substring", "substr", "charAt", "charCodeAt",
                            "codePointAt", "at", "splice"})
_SIZES = frozenset({"length", "size"})
OTHER_BOOLEAN = {"true": "false", "false": "true"}
"""The other boolean, by the node type of a boolean literal."""


def int_value(literal: str) -> int | None:
    """The value of a JavaScript integer literal, or None (``1.5``, ``1e3``, ``10n``,
    legacy octal ``010``)."""
    if _INTEGER.fullmatch(literal) is None:
        return None
    return int(literal.replace("_", ""), 0)


def _is_size(node: Node) -> bool:
    """``x.length`` or ``x.size``."""
    prop = node.child_by_field_name("property") if node.type == "member_expression" else None
    return prop is not None and text(prop) in _SIZES


def _callee_method(arguments: Node) -> str | None:
    """The method name of the call these are the arguments of (``s.slice(...)``)."""
    call = arguments.parent
    callee = call.child_by_field_name("function") if call is not None else None
    prop = callee.child_by_field_name("property") if callee is not None \
        and callee.type == "member_expression" else None
    return text(prop) if prop is not None else None


def _offset_context(parent: Node, target: Node) -> str | None:
    """Where a ``+ n``/``- n`` offset counts: after ``x.length``, or where the sum would."""
    right = parent.child_by_field_name("right")
    left = parent.child_by_field_name("left")
    if operator(parent) not in ("+", "-") or right is None or right != target:
        return None
    if left is not None and _is_size(left):
        return f"`{text(left)}` offset"
    inner = context(parent)
    return f"{inner} offset" if inner else None


def _loop_start(parent: Node, target: Node) -> bool:
    """``for (let i = 0; ...)`` or ``for (i = 0; ...)``: the loop's first value."""
    value = parent.child_by_field_name("value" if parent.type == "variable_declarator"
                                       else "right")
    holder = parent.parent
    if value is None or value != target or holder is None:
        return False
    loop = holder.parent if holder.type != "for_statement" else holder
    return loop is not None and loop.type == "for_statement" and (
        loop.child_by_field_name("initializer") in (holder, parent))


def context(target: Node) -> str | None:
    """Where an integer (or ``-integer``) sits, if off-by-one applies there."""
    parent = target.parent
    if parent is None:
        return None
    if parent.type == "binary_expression":
        if operator(parent) in _COMPARISONS:
            return "comparison"
        return _offset_context(parent, target)
    if parent.type == "subscript_expression" and parent.child_by_field_name("index") == target:
        return "index"
    if parent.type == "arguments":
        method = _callee_method(parent)
        return f"`.{method}()` argument" if method in _INDEX_METHODS else None
    if parent.type in ("variable_declarator", "assignment_expression") \
            and _loop_start(parent, target):
        return "loop start"
    return None


def _bumped(new: int, literal: str, target: Node, source: bytes) -> str:
    """``new`` written like ``literal``; a space before a minus that would make ``--``."""
    out = format_like(new, literal)
    before = source[target.start_byte - 1:target.start_byte] if target.start_byte else b""
    return f" {out}" if out.startswith("-") and before in (b"-", b"+") else out


@MUTATORS.register("js_off_by_one")
class OffByOne(EcmaNodeMutator):
    """An integer literal ``n`` becomes ``n + 1`` and ``n - 1`` (two sites).

    Only where off-by-one bugs live: comparison operands, subscripts, arguments of
    ``.slice()``/``.substring()``/``.substr()`` (and ``.charAt()``, ``.at()``, ...), a
    ``for`` loop's start, and ``+ n``/``- n`` offsets after ``x.length`` or in one of
    these (``x[i + 1]``). ``-n`` is one literal (``indexOf(c) === -1`` -> ``-2``).
    """

    node_types = frozenset({"number"})

    def visit(self, node: Node, source: bytes) -> Iterator[Site]:
        """Two sites (plus and minus one) for an integer in an off-by-one context."""
        literal = text(node)
        yield from off_by_one(node, int_value(literal), _is_minus, context,
                              lambda new, target: _bumped(new, literal, target, source))


def _is_minus(node: Node) -> bool:
    """``-x``."""
    return node.type == "unary_expression" and operator(node) == "-"


@MUTATORS.register("js_constant_swap")
class ConstantSwap(EcmaNodeMutator, BooleanLiteralSwap):
    """``true``↔``false``."""

    other = OTHER_BOOLEAN


_DEFAULTS = {"assignment_pattern": ("left", "right"),
             "object_assignment_pattern": ("left", "right"),
             "required_parameter": ("pattern", "value")}


def changed_default(value: Node) -> str | None:
    """A different default: ``true``↔``false``, ``n`` -> ``n+1``, ``"text"`` -> ``""``."""
    kind = value.type
    if kind in OTHER_BOOLEAN:
        return OTHER_BOOLEAN[kind]
    if kind == "number":
        number = int_value(text(value))
        return None if number is None else format_like(number + 1, text(value))
    if kind == "unary_expression" and operator(value) == "-":
        inner = named_children(value)
        number = int_value(text(inner[0])) if inner and inner[0].type == "number" else None
        return None if number is None else str(1 - number)
    if kind in ("string", "template_string"):
        parts = named_children(value)
        if parts and all(p.type == "string_fragment" for p in parts):
            quote = text(value)[0]
            return quote + quote
    return None


def _default_sites(holder: Node) -> Iterator[Site]:
    name_field, value_field = _DEFAULTS[holder.type]
    value = holder.child_by_field_name(value_field)
    name = holder.child_by_field_name(name_field)
    new = changed_default(value) if value is not None else None
    if value is None or new is None or name is None or not in_runtime_code(
            value, defaults=True):
        return
    yield replace_node(value, new, f"default of `{text(name)}` changed from "
                                   f"`{text(value)}` to `{new}`")


@MUTATORS.register("js_change_default")
class ChangeDefault(Mutator):
    """A default value changes: ``true``↔``false``, ``n`` -> ``n+1``, a non-empty string
    -> an empty one.

    Parameter defaults of live functions (not stubs, overloads or declarations), and
    destructuring defaults in runtime code (``const { end = true } = options``). The
    annotation and the name are untouched; ``null``, ``undefined`` and computed defaults
    are left alone.
    """

    edits_defaults = True
    family = FAMILY

    def sites(self, tree: Tree, source: bytes) -> Iterator[Site]:
        """One site per changeable default, in source order."""
        stack = [tree.root_node]
        while stack:
            node = stack.pop()
            if node.type in _DEFAULTS:
                yield from _default_sites(node)
            stack.extend(reversed(node.children))
