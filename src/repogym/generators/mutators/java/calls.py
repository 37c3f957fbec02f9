"""Call mutators: swap two arguments, drop a string method from a chain."""

from __future__ import annotations

from typing import Iterator

from tree_sitter import Node

from repogym.generators.mutators.base import MUTATORS, Site, named_children, replace_node, text
from repogym.generators.mutators.java.base import JavaNodeMutator
from repogym.generators.mutators.java.checks import literal_type, type_of, unparenthesised
from repogym.generators.mutators.shared import arguments_swapped, summary

_SIMPLE_ARGUMENTS = frozenset({"identifier", "field_access", "string_literal",
                               "character_literal", "decimal_integer_literal",
                               "hex_integer_literal", "decimal_floating_point_literal",
                               "true", "false"})
SYMMETRIC = frozenset({"max", "min", "equals", "deepEquals", "hash", "hypot", "gcd",
                       "addExact", "multiplyExact", "sum", "of", "asList", "and", "or",
                       "xor", "union", "intersection", "areEqual", "equalsIgnoreCase"})
"""Callees for which swapping arguments changes nothing (or little)."""
_FORMATS = frozenset({"format", "printf", "formatted"})
STRING_METHODS = frozenset({"trim", "strip", "stripLeading", "stripTrailing", "toLowerCase",
                            "toUpperCase", "intern"})
"""String methods whose result is a String like their receiver: dropped, the chain still
compiles."""
_STRING_RESULTS = STRING_METHODS | {"substring", "replace", "replaceAll", "replaceFirst",
                                    "concat", "repeat", "toString", "format", "valueOf",
                                    "join", "formatted"}
"""Methods that return a String (``valueOf``, ``format`` and ``join`` of ``String``)."""


def _swappable(first: Node, second: Node) -> bool:
    """Simple, different, and of one type the file shows."""
    if first.type not in _SIMPLE_ARGUMENTS or second.type not in _SIMPLE_ARGUMENTS:
        return False
    if text(first) == text(second):
        return False
    kind = type_of(first)
    return kind is not None and kind not in ("null", "boolean") and kind == type_of(second)


@MUTATORS.register("java_swap_arguments")
class SwapArguments(JavaNodeMutator):
    """Two adjacent arguments of a call trade places: ``f(a, b)`` -> ``f(b, a)``.

    Only simple arguments (names, ``this.x``, literals) of one type the file shows
    (literals of one kind, locals, parameters and fields declared with one type): the call
    then picks the same overload and still compiles. Not a symmetric callee (``max``,
    ``equals``, ``Objects.hash``...), not a format string's call, not ``true``/``false``.
    """

    node_types = frozenset({"method_invocation", "object_creation_expression",
                            "explicit_constructor_invocation"})

    def visit(self, node: Node, source: bytes) -> Iterator[Site]:
        """One site per swappable adjacent pair."""
        args = node.child_by_field_name("arguments")
        if args is None:
            return
        name = node.child_by_field_name("name") or node.child_by_field_name("type") \
            or node.child_by_field_name("constructor")
        called = text(name) if name is not None else ""
        if called in SYMMETRIC or called in _FORMATS:
            return
        parts = named_children(args)
        callee_node = name if name is not None else node
        for first, second in zip(parts, parts[1:]):
            if _swappable(first, second):
                yield arguments_swapped(node, callee_node, first, second, source)


def is_string(node: Node) -> bool:
    """Whether an expression surely is a ``String``: a string literal, a variable declared
    ``String``, a call of a method that returns one."""
    node = unparenthesised(node)
    if literal_type(node) == "String":
        return True
    if node.type == "method_invocation":
        name = node.child_by_field_name("name")
        target = node.child_by_field_name("object")
        if name is None:
            return False
        called = text(name)
        if called in ("valueOf", "format", "join"):
            return target is not None and text(target) == "String"
        return called in _STRING_RESULTS and (called == "toString" or (
            target is not None and is_string(target)))
    return type_of(node) == "String"


@MUTATORS.register("java_break_call_chain")
class BreakCallChain(JavaNodeMutator):
    """A string method drops out of a chain: ``s.trim().toLowerCase()`` ->
    ``s.trim()``, ``name.toUpperCase()`` -> ``name``.

    Only ``trim``, ``strip``, ``toLowerCase``, ``toUpperCase``... (a String, like their
    receiver) on what surely is a String, and not a statement of its own (``s;`` is
    none).
    """

    node_types = frozenset({"method_invocation"})

    def visit(self, node: Node, source: bytes) -> Iterator[Site]:
        """At most one site: the call replaced by its receiver."""
        name = node.child_by_field_name("name")
        receiver = node.child_by_field_name("object")
        if name is None or receiver is None or text(name) not in STRING_METHODS:
            return
        if node.parent is not None and node.parent.type == "expression_statement":
            return
        if not is_string(receiver):
            return
        yield replace_node(node, text(receiver),
                           f"`.{text(name)}()` dropped from `{summary(node, 40)}`")
