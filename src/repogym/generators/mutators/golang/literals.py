"""Literal mutators: nudge an integer by one where bounds live, swap a constant."""

from __future__ import annotations

from typing import Iterator

from tree_sitter import Node

from repogym.generators.mutators.base import MUTATORS, Site, named_children, replace_node, text
from repogym.generators.mutators.golang.base import (
    GoNodeMutator,
    operator,
    unparenthesised,
    vet_clean,
)
from repogym.generators.mutators.golang.checks import int_value, literal_key
from repogym.generators.mutators.golang.hints import type_of
from repogym.generators.mutators.golang.runtime import callee
from repogym.generators.mutators.shared import format_like

_COMPARISONS = frozenset({"<", "<=", ">", ">=", "==", "!="})
_SIGNED = frozenset({"int", "int8", "int16", "int32", "int64", "rune", "float32", "float64",
                     "untyped int"})
_SIZES = frozenset({"len", "cap"})
_LIMITS = frozenset({2 ** 7, 2 ** 8, 2 ** 15, 2 ** 16, 2 ** 31, 2 ** 32, 2 ** 63, 2 ** 64})
"""Where a constant one past a bound overflows the type of that size."""
_OTHER_BOOLEAN = {"true": "false", "false": "true"}
_MESSAGES = frozenset({"errors.New", "fmt.Errorf", "panic", "fmt.Sprintf", "fmt.Fprintf"})
_ALLOCATIONS = frozenset({"make", "new"})
_CONSTANT_LITERALS = frozenset({"int_literal", "float_literal", "rune_literal",
                                "imaginary_literal"})


def _is_size(node: Node) -> bool:
    """``len(x)`` or ``cap(x)``."""
    return node.type == "call_expression" and callee(node) in _SIZES


def _other_operand(parent: Node, target: Node) -> Node | None:
    left, right = parent.child_by_field_name("left"), parent.child_by_field_name("right")
    return right if left == target else left


def _is_sliceable(operand: Node | None) -> bool:
    """A slice or a string (not an array: a constant index past its end does not build)."""
    kind = type_of(operand) if operand is not None else None
    return kind is not None and (kind == "string" or kind.startswith("[]"))


def _offset_context(parent: Node, target: Node) -> str | None:
    """Where a ``+ n``/``- n`` offset counts: after ``len(x)``, or where the sum would."""
    right, left = parent.child_by_field_name("right"), parent.child_by_field_name("left")
    if operator(parent) not in ("+", "-") or right != target or left is None \
            or unparenthesised(left).type in _CONSTANT_LITERALS:
        return None
    if _is_size(left):
        return f"`{text(left)}` offset"
    inner = context(parent)
    return f"{inner} offset" if inner and not inner.endswith("offset") else inner


def _loop_start(target: Node) -> bool:
    """``for i := 0; ...`` (or ``i = 0``): the loop's first value."""
    values = target.parent
    holder = values.parent if values is not None else None
    clause = holder.parent if holder is not None else None
    return (values is not None and values.type == "expression_list" and holder is not None
            and holder.child_by_field_name("right") == values and clause is not None
            and clause.type == "for_clause"
            and clause.child_by_field_name("initializer") == holder)


def context(target: Node) -> str | None:
    """Where an integer (or ``-integer``) sits, if off-by-one applies there."""
    parent = target.parent
    if parent is None:
        return None
    if parent.type == "binary_expression":
        if operator(parent) in _COMPARISONS:
            return "comparison"
        return _offset_context(parent, target)
    if parent.type == "index_expression" and parent.child_by_field_name("index") == target:
        return "index"
    if parent.type == "slice_expression":
        for bound in ("start", "end"):
            if parent.child_by_field_name(bound) == target:
                return f"slice {bound}"
        return None
    if _loop_start(target):
        return "loop start"
    return None


def _fits(target: Node, where: str, old: int, new: int) -> bool:
    """Whether ``new`` in place of ``old`` (where :func:`context` says) still builds:
    no constant index below 0 or past an array's end, no empty constant slice, no
    unsigned value below 0, no constant overflowing a type's size."""
    parent = target.parent
    if where == "loop start" or where.endswith("offset"):
        return True
    if new in _LIMITS or -new - 1 in _LIMITS:
        return False
    if where == "index":
        return 0 <= new < old
    if where.startswith("slice") and parent is not None:
        return _slice_fits(parent, target, old, new)
    if where == "comparison" and parent is not None and new < 0 <= old:
        other = _other_operand(parent, target)
        return other is not None and (_is_size(other) or type_of(other) in _SIGNED)
    return True


def _slice_fits(parent: Node, target: Node, old: int, new: int) -> bool:
    """A constant slice bound moved: never below 0 nor past the other bound; up only on
    a slice or string (an array's end may be right there)."""
    if new < 0:
        return False
    start, end = parent.child_by_field_name("start"), parent.child_by_field_name("end")
    low = int_value(text(start)) if start is not None and start != target else None
    high = int_value(text(end)) if end is not None and end != target else None
    if target == start and high is not None:
        return new <= high
    if target == end and low is not None and new < low:
        return False
    return new < old or _is_sliceable(parent.child_by_field_name("operand"))


def _is_minus(node: Node) -> bool:
    """``-x``."""
    return node.type == "unary_expression" and operator(node) == "-"


def _bumped(new: int, literal: str, target: Node, source: bytes) -> str:
    """``new`` written like ``literal`` (legacy octal ``0755`` stays octal); a space
    before a minus that would make ``--``."""
    if len(literal) > 1 and literal[0] == "0" and literal[1].isdigit() and new >= 0:
        out = "0" + format(new, "o") if new else "0"
    else:
        out = format_like(new, literal)
    before = source[target.start_byte - 1:target.start_byte] if target.start_byte else b""
    return f" {out}" if out.startswith("-") and before in (b"-", b"+") else out


@MUTATORS.register("go_off_by_one")
class OffByOne(GoNodeMutator):
    """An integer literal ``n`` becomes ``n + 1`` and ``n - 1`` (up to two sites).

    Only where off-by-one bugs live: comparison operands, indexes, slice bounds, a
    ``for`` loop's start, and ``+ n``/``- n`` offsets after ``len(x)`` or in one of these
    (``s[i+1]``). ``-n`` is one literal. Only what still builds: no constant index below
    zero or past an array's end (an index only goes down; a slice bound only grows on a
    slice or string the file shows), no negative value compared with what may be unsigned,
    nothing past a type's bound (``b <= 255`` stays).
    """

    node_types = frozenset({"int_literal"})

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
            if _fits(target, where, signed, new):
                written = _bumped(new, text(node), target, source)
                site = replace_node(target, written,
                                    f"{where} `{text(target)}` changed to `{written.strip()}`")
                if vet_clean(site, target, source):
                    yield site


# --- constant swap ---------------------------------------------------------------------


def _case_values(node: Node) -> list[Node] | None:
    """The values of the ``case`` clause ``node`` is one of, or None when it is none."""
    parent = node.parent
    if parent is None or parent.type != "expression_list" or parent.parent is None \
            or parent.parent.type != "expression_case":
        return None
    switch = parent.parent.parent
    values: list[Node] = []
    for case in named_children(switch) if switch is not None else []:
        listed = case.child_by_field_name("value") if case.type == "expression_case" else None
        values.extend(named_children(listed) if listed is not None else [])
    return values


def _collides(node: Node, new: Node | str) -> bool:
    """Whether ``new`` (a literal's text) is already a value of the ``case`` list or a
    key of the composite literal ``node`` is in (a duplicate does not build); keys are
    never changed at all."""
    parent = node.parent
    if parent is not None and parent.type == "literal_element" and parent.parent is not None \
            and parent.parent.type == "keyed_element" \
            and parent.parent.child_by_field_name("key") == parent:
        return True
    values = _case_values(node)
    if values is None:
        return False
    key = literal_key(new) if isinstance(new, Node) else None
    return any(text(v) == new or (key is not None and literal_key(v) == key) for v in values)


def _constant_operand(node: Node) -> bool:
    """Whether the other operand of the binary expression around ``node`` is a constant
    too (``1 << 3``: changing one may overflow), or ``node`` divides (``x / 1``)."""
    parent = node.parent
    if parent is None or parent.type != "binary_expression":
        return False
    if operator(parent) in ("/", "%") and parent.child_by_field_name("right") == node:
        return True
    other = _other_operand(parent, node)
    return other is not None and unparenthesised(other).type in _CONSTANT_LITERALS


def _in_call_to(node: Node, names: frozenset[str]) -> bool:
    arguments = node.parent
    call = arguments.parent if arguments is not None and arguments.type == "argument_list" \
        else None
    return call is not None and call.type == "call_expression" and callee(call) in names


def _divides(node: Node) -> bool:
    """``x /= 1``: an integer after ``/=`` or ``%=``."""
    values = node.parent
    statement = values.parent if values is not None else None
    return statement is not None and statement.type == "assignment_statement" \
        and operator(statement) in ("/=", "%=")


def _new_integer(node: Node) -> str | None:
    """``0`` -> ``1``, ``1`` -> ``0``, ``2``..``9`` -> one more: decimal integers only."""
    literal = text(node)
    if not literal.isdigit() or (len(literal) > 1 and literal[0] == "0"):
        return None
    value = int(literal)
    if value > 9:
        return None
    return "0" if value == 1 else str(value + 1)


def _new_string(node: Node) -> str | None:
    """``""`` for a non-empty interpreted string that is no format and no message."""
    inner = text(node)[1:-1]
    if not inner or "%" in inner or _in_call_to(node, _MESSAGES):
        return None
    return '""'


@MUTATORS.register("go_constant_swap")
class ConstantSwap(GoNodeMutator):
    """A constant changes: ``true``↔``false``; ``0`` -> ``1``, ``1`` -> ``0``, ``2``..``9``
    -> one more (decimal); a string -> ``""``.

    Integers where ``go_off_by_one`` does not look (comparisons, indexes, slice bounds,
    loop starts), and not a divisor, a ``make``/``new`` size, a negative (``-1``) or half
    of a constant expression (``1 << 3``). Strings that are no format (``%``) and no
    error or panic message. Never a composite literal's key, nor a ``case`` value that
    would repeat another.
    """

    node_types = frozenset({"true", "false", "int_literal", "interpreted_string_literal"})

    def visit(self, node: Node, source: bytes) -> Iterator[Site]:
        """At most one site: the other constant."""
        new = self._new(node)
        if new is None or _collides(node, new):
            return
        shown = "emptied" if new == '""' else f"changed to `{new}`"
        site = replace_node(node, new, f"`{text(node)}` {shown}")
        if vet_clean(site, node, source):
            yield site

    @staticmethod
    def _new(node: Node) -> str | None:
        if node.type in _OTHER_BOOLEAN:
            return _OTHER_BOOLEAN[node.type]
        if node.type == "interpreted_string_literal":
            return _new_string(node)
        parent = node.parent
        if context(node) is not None or (parent is not None and _is_minus(parent)) \
                or _constant_operand(node) or _divides(node) \
                or _in_call_to(node, _ALLOCATIONS):
            return None
        return _new_integer(node)
